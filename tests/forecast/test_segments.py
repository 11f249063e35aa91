"""Forecasts per segment of an IP's listings (docs/concepts/forecasts.md, "Segments"), on SQLite and MariaDB: the
rollup writes each segment's daily row by its definition (the listings of the segment created and sold that day,
the pruned ones' summaries included, and their sold-price median), a refresh fits each segment's history on the IP's
days by the series' definition written here, leaves an unchanged one as it was and says why a thin one has none;
the command line and ``/api/v1/ips/{id}/segments/forecast`` (against its OpenAPI document) show the stored rows."""

from __future__ import annotations

import csv
import io
import json
import random
import statistics
import time
from collections import defaultdict
from datetime import datetime, timedelta

import pytest

from lib.core.clock import FrozenClock, naive_utc
from lib.core.db import insert_rows, write_transaction
from lib.forecast import fit
from lib.forecast.read import SEGMENT_CSV_COLUMNS, segment_forecasts
from lib.forecast.refresh import refresh
from lib.forecast.series import MIN_HOURS, segment_histories
from lib.forecast.values import HORIZON, INFLOW, MEDIAN_PRICE, OUTFLOW, History, Segment
from lib.market import summaries
from lib.market.daily import SEGMENTS_BACKFILLED, roll_up_pending
from lib.market.statistics import day_of, mark_pending
from lib.market.summaries import Sketch
from models import (
    IpDailyChanged,
    IpForecast,
    ListingEvent,
    ListingSegment,
    SegmentDailyFlow,
    SegmentForecast,
    SegmentStatsDaily,
    StorageMark,
)

from ..helpers import run_cli
from ..web.conftest import call, start_dashboard
from ..web.test_api import check_against_openapi
from .test_refresh import FIRST, at, write_days

PLUSH, BADGE, HERO = Segment("goods", "plush"), Segment("goods", "can_badge"), Segment("character", "Hero")


class Listing:
    """A listing as the test writes it: created, maybe sold at a price, in its segments."""

    def __init__(self, source_id: str, created: float, sold: float | None, price: int | None,
                 segments: tuple[Segment, ...]) -> None:
        self.source_id, self.created, self.sold, self.price, self.segments = source_id, created, sold, price, segments


def write_listings(ip_id: int, listings: list[Listing]) -> None:
    events, members = [], []
    for li in listings:
        events.append({"ip_id": ip_id, "source_id": li.source_id, "kind": "created", "occurrence": 0,
                       "event_at": li.created, "price": None, "created_at": None})
        if li.sold is not None:
            events.append({"ip_id": ip_id, "source_id": li.source_id, "kind": "sold", "occurrence": 0,
                           "event_at": li.sold, "price": li.price, "created_at": li.created})
        members += [{"ip_id": ip_id, "source_id": li.source_id, "kind": s.kind, "key": s.key} for s in li.segments]
    with write_transaction():
        insert_rows(ListingEvent, events)
        insert_rows(ListingSegment, members)


def drawn(rng: random.Random, ip_id: int, first: datetime, days: int, per_day: dict[Segment, int]) -> list[Listing]:
    """Listings created over ``days`` days from ``first``, ``per_day`` of each segment a day (a fifth of the plush
    ones also name the hero), most sold within two days, a few of those without a price."""
    out = []
    for d in range(days):
        for segment, n in per_day.items():
            for _ in range(rng.randint(max(0, n - 2), n + 2)):
                created = at(first + timedelta(days=d)) + rng.uniform(0, 86_400)
                sold = created + rng.uniform(600, 172_800) if rng.random() < 0.7 else None
                price = None if sold is None or rng.random() < 0.1 else rng.randint(300, 9_000)
                segments = (segment, HERO) if segment == PLUSH and rng.random() < 0.2 else (segment,)
                out.append(Listing(f"m{ip_id}x{len(out)}", created, sold, price, segments))
    return out


def segment_days(listings: list[Listing]) -> dict[tuple[str, str, datetime], tuple[int, int, list[int]]]:
    """The definition: by segment and UTC day, its listings created that day, sold that day, and their prices."""
    days: dict[tuple[str, str, datetime], tuple[list[int], list[int]]] = defaultdict(lambda: ([0, 0], []))
    for li in listings:
        for s in li.segments:
            days[s.kind, s.key, day_of(naive_utc(li.created))][0][0] += 1
            if li.sold is not None:
                flows, prices = days[s.kind, s.key, day_of(naive_utc(li.sold))]
                flows[1] += 1
                if li.price is not None:
                    prices.append(li.price)
    return {k: (flows[0], flows[1], prices) for k, (flows, prices) in days.items()}


def stored_days(ip_id: int) -> dict[tuple[str, str, datetime], tuple[int, int, int, float | None]]:
    return {(r.kind, r.key, r.day): (r.inflow, r.outflow, r.sample_count, r.median_price)
            for r in SegmentDailyFlow.select().where(SegmentDailyFlow.ip_id == ip_id)}


def test_each_segments_day_is_rolled_up_by_its_definition(db):
    rng = random.Random(11)
    listings = drawn(rng, 5, FIRST, 4, {PLUSH: 6, BADGE: 3})
    write_days(5, {FIRST + timedelta(days=i): (24, 10, 5) for i in range(6)})
    write_listings(5, listings)
    # listings of day 1 already summarized by a pruning pass: counted, their prices in the sketch
    pruned = Sketch(summaries.PRICE_ACCURACY).update([1_000, 2_000, 2_500])
    with write_transaction():
        insert_rows(SegmentStatsDaily, [{"ip_id": 5, "kind": "goods", "key": "plush", "day": FIRST + timedelta(days=1),
                                         "pruned_created": 3, "pruned_sales": 4, "pruned_prices": pruned.encode()}])
    now = at(FIRST + timedelta(days=6, hours=1))
    roll_up_pending(now)

    # the closed days that have hourly rows: today (day 6) is not rolled up
    want = {k: v for k, v in segment_days(listings).items() if k[2] < FIRST + timedelta(days=6)}
    got = stored_days(5)
    assert set(got) == set(want)
    for key, (created, sold, prices) in want.items():
        if key == ("goods", "plush", FIRST + timedelta(days=1)):
            merged = sorted(prices + [1_000, 2_000, 2_500])
            assert got[key][:3] == (created + 3, sold + 4, len(merged))
            assert got[key][3] == pytest.approx(statistics.median_low(merged), rel=2 * summaries.PRICE_ACCURACY) or \
                got[key][3] == pytest.approx(statistics.median_high(merged), rel=2 * summaries.PRICE_ACCURACY)
        else:
            assert got[key] == (created, sold, len(prices), statistics.median(prices) if prices else None), key

    # a late sale on day 2 (a late result): the day is rolled up again, its rows replaced
    late = Listing("late1", at(FIRST + timedelta(days=2, hours=3)), at(FIRST + timedelta(days=2, hours=5)), 4_321,
                   (BADGE,))
    write_listings(5, [late])
    mark_pending(5, [FIRST + timedelta(days=2, hours=3)])
    roll_up_pending(now + 3600)
    again = stored_days(5)
    badge_day = ("goods", "can_badge", FIRST + timedelta(days=2))
    created, sold, prices = want[badge_day]
    assert again[badge_day] == (created + 1, sold + 1, len(prices) + 1, statistics.median(prices + [4_321]))
    assert {k: v for k, v in again.items() if k != badge_day} == {k: v for k, v in got.items() if k != badge_day}


def expected(ip_id: int, hours: dict[datetime, int], listings: list[Listing], segment: Segment,
             measure: str) -> History:
    """The definition: the IP's last run of days tracked at least 12 h, the segment's flow of each day (0 without
    a listing of it) × 24 / the day's hours."""
    run: list[datetime] = []
    for day in sorted(d for d, h in hours.items() if h >= MIN_HOURS):
        run = run + [day] if run and day - run[-1] == timedelta(days=1) else [day]
    days = segment_days(listings)
    k = 0 if measure == INFLOW else 1
    return History(ip_id, measure, tuple(run),
                   tuple(days.get((segment.kind, segment.key, d), (0, 0, []))[k] * 24.0 / hours[d] for d in run),
                   segment)


def test_segments_are_forecast_by_the_definition_and_an_unchanged_one_is_not_refit(db):
    rng = random.Random(12)
    hours = {FIRST + timedelta(days=i): 24 for i in range(20)}
    hours[FIRST + timedelta(days=15)] = 16  # two thirds tracked: its flows scaled to the day
    listings = drawn(rng, 6, FIRST, 20, {PLUSH: 6})
    # three badge sales in twenty days: too thin to forecast
    listings += [Listing(f"b{d}", at(FIRST + timedelta(days=d, hours=2)), at(FIRST + timedelta(days=d, hours=3)),
                         800, (BADGE,)) for d in (3, 9, 17)]
    write_days(6, {d: (h, 10, 5) for d, h in hours.items()})
    # sales after the last closed day are not part of the history
    write_listings(6, [li for li in listings if li.sold is None or li.sold < at(FIRST + timedelta(days=20))])
    listings = [li for li in listings if li.sold is None or li.sold < at(FIRST + timedelta(days=20))]
    now = at(FIRST + timedelta(days=20, hours=1))
    roll_up_pending(now)
    done = refresh(now)

    made = {(r.kind, r.key, r.measure): r for r in SegmentForecast.select().where(SegmentForecast.day == FIRST
                                                                                  + timedelta(days=20))}
    for segment in (PLUSH, HERO):
        for measure in (INFLOW, OUTFLOW):
            history = expected(6, hours, listings, segment, measure)
            (want,) = fit.forecast([history], now)
            rows = [(r.day, round(r.mean, 6), round(r.hi95, 6), r.origin, r.history_days) for r in
                    SegmentForecast.select().where((SegmentForecast.ip_id == 6) & (SegmentForecast.kind == segment.kind)
                                                   & (SegmentForecast.key == segment.key)
                                                   & (SegmentForecast.measure == measure))
                                            .order_by(SegmentForecast.day)]
            assert rows == [(d.day, round(d.mean, 6), round(d.hi95, 6), FIRST + timedelta(days=19), 20)
                            for d in want.days], (segment, measure)
    assert ("goods", "plush", MEDIAN_PRICE) in made
    assert ("goods", "can_badge", OUTFLOW) not in made
    fitted = SegmentForecast.select(SegmentForecast.kind, SegmentForecast.key, SegmentForecast.measure).distinct()
    own = IpForecast.select(IpForecast.measure).where(IpForecast.ip_id == 6).distinct()
    # plush: each measure; the hero: its flows (a sale a day: too few priced days); the badge: none
    assert own.count() == 3 and fitted.count() == 5
    assert done.refit == own.count() + fitted.count()

    answer = segment_forecasts(6, "goods", now, {"plush": "ぬいぐるみ"})
    assert [s["key"] for s in answer["segments"]] == ["plush", "can_badge"]
    plush, badge = answer["segments"]
    assert plush["label"] == "ぬいぐるみ" and badge["label"] == "can_badge"
    outflow = next(f for f in plush["forecasts"] if f["measure"] == OUTFLOW)
    assert plush["next_days"] == {"days": HORIZON, "outflow": round(sum(d["mean"] for d in outflow["days"]), 1),
                                  "inflow": plush["next_days"]["inflow"]}
    assert badge["next_days"]["outflow"] is None
    assert next(f for f in badge["forecasts"] if f["measure"] == OUTFLOW)["why"] == \
        "needs 14 outflow over its 20 days (one a day on average); has 3"

    # a past day rolled up again unchanged: read, not refit
    mark_pending(6, [FIRST + timedelta(days=10)])
    roll_up_pending(now + 3600)
    again = refresh(now + 3600)
    assert again.refit == 0 and again.unchanged == done.refit


def wall_clock_market(ip_id: int) -> tuple[float, list[Listing]]:
    """IP ``ip_id`` with 20 tracked days up to yesterday (UTC: the command line reads on the wall clock), plush and
    badge listings every day; rolled up and forecast now."""
    now = time.time()
    first = day_of(naive_utc(now)) - timedelta(days=20)
    rng = random.Random(13)
    listings = [li for li in drawn(rng, ip_id, first, 20, {PLUSH: 8, BADGE: 3})
                if li.sold is None or li.sold < at(first + timedelta(days=20))]
    write_days(ip_id, {first + timedelta(days=i): (24, 10, 5) for i in range(20)})
    write_listings(ip_id, listings)
    roll_up_pending(now)
    refresh(now)
    return now, listings


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_the_command_and_the_api_show_the_segments_forecasts(db, env, settings, broker):
    now, _ = wall_clock_market(7)
    answer = segment_forecasts(7, "goods", now, {})
    assert [s["key"] for s in answer["segments"]] == ["plush", "can_badge"]
    plush = answer["segments"][0]

    as_json = run_cli(env, "forecast", "show", "7", "--by", "goods", "--format", "json")
    assert as_json.returncode == 0, as_json.stderr
    shown = json.loads(as_json.stdout)
    assert [(s["key"], s["next_days"], s["forecasts"]) for s in shown["segments"]] == \
        [(s["key"], s["next_days"], s["forecasts"]) for s in json.loads(json.dumps(answer))["segments"]]
    assert shown["segments"][0]["label"] == "ぬいぐるみ"  # the configured goods types' name
    table = run_cli(env, "forecast", "show", "7", "--by", "goods")
    assert f"{plush['next_days']['outflow']:>9.1f} sold" in table.stdout and "ぬいぐるみ" in table.stdout
    rows = list(csv.DictReader(io.StringIO(run_cli(env, "forecast", "show", "7", "--by", "goods", "--format",
                                                   "csv").stdout)))
    assert tuple(rows[0]) == SEGMENT_CSV_COLUMNS and {r["key"] for r in rows} == {"plush", "can_badge"}
    characters = run_cli(env, "forecast", "show", "7", "--by", "character", "--format", "json")
    assert [s["key"] for s in json.loads(characters.stdout)["segments"]] == ["Hero"]
    assert run_cli(env, "forecast", "show", "7", "--by", "inflow").returncode == 2
    assert run_cli(env, "forecast", "rising", "--by", "goods").returncode == 2

    server, _ = start_dashboard(settings, broker, None, FrozenClock(now))
    try:
        doc = call(f"{server.url}/api/v1/openapi.json").json()
        reply = call(f"{server.url}/api/v1/ips/7/segments/forecast?by=goods")
        assert reply.status == 200
        check_against_openapi(doc, "/api/v1/ips/{ip_id}/segments/forecast", "get", reply)
        assert reply.json()["segments"] == shown["segments"]
        got = list(csv.DictReader(io.StringIO(
            call(f"{server.url}/api/v1/ips/7/segments/forecast?by=goods&format=csv").body.decode())))
        assert got == rows
        missing = call(f"{server.url}/api/v1/ips/999999/segments/forecast")
        assert missing.status == 404
        check_against_openapi(doc, "/api/v1/ips/{ip_id}/segments/forecast", "get", missing)
    finally:
        server.stop()


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_an_upgrade_writes_the_segments_rows_of_the_days_rolled_up_before(db):
    """Daily rows rolled up before segments had rows (an upgrade): the first pass writes them from what the storage
    holds and marks the IP for its forecasts; the segments' history starts at the first day with a row."""
    rng = random.Random(14)
    write_days(8, {FIRST + timedelta(days=i): (24, 10, 5) for i in range(20)})
    listings = drawn(rng, 8, FIRST + timedelta(days=4), 16, {PLUSH: 5})  # the first 4 days' listings are gone
    listings = [li for li in listings if li.sold is None or li.sold < at(FIRST + timedelta(days=20))]
    write_listings(8, listings)
    now = at(FIRST + timedelta(days=20, hours=1))
    roll_up_pending(now)
    # as before the upgrade: no segment rows, no mark of their backfill, the IP's forecasts made
    SegmentDailyFlow.delete().execute()
    StorageMark.delete().where(StorageMark.name == SEGMENTS_BACKFILLED).execute()
    refresh(now)
    assert SegmentForecast.select().count() == 0

    roll_up_pending(now + 60)
    want = {k: (c, s, len(p), statistics.median(p) if p else None) for k, (c, s, p) in segment_days(listings).items()
            if k[2] < FIRST + timedelta(days=20)}
    assert stored_days(8) == want
    assert IpDailyChanged.get(IpDailyChanged.ip_id == 8)
    assert StorageMark.get_or_none(StorageMark.name == SEGMENTS_BACKFILLED) is not None
    done = refresh(now + 60)
    assert done.refit >= 3
    history = segment_histories([8], FIRST + timedelta(days=20))[8, PLUSH][OUTFLOW]
    assert history.days[0] == FIRST + timedelta(days=4) and len(history.days) == 16
    assert history == expected(8, {FIRST + timedelta(days=4 + i): 24 for i in range(16)}, listings, PLUSH, OUTFLOW)
    # a second pass does not write them again
    SegmentDailyFlow.delete().execute()
    roll_up_pending(now + 120)
    assert SegmentDailyFlow.select().count() == 0


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_an_upgrades_backfill_stopped_midway_is_taken_up_by_the_next_pass(db):
    rng = random.Random(15)
    for ip_id in (9, 10):
        write_days(ip_id, {FIRST + timedelta(days=i): (24, 10, 5) for i in range(5)})
        write_listings(ip_id, [li for li in drawn(rng, ip_id, FIRST, 5, {PLUSH: 4})
                               if li.sold is None or li.sold < at(FIRST + timedelta(days=5))])
    now = at(FIRST + timedelta(days=5, hours=1))
    roll_up_pending(now)
    written = {ip: stored_days(ip) for ip in (9, 10)}
    assert all(written.values())
    # the backfill after an upgrade stopped after IP 9: its rows are there, IP 10's are not, no mark
    SegmentDailyFlow.delete().where(SegmentDailyFlow.ip_id == 10).execute()
    StorageMark.delete().where(StorageMark.name == SEGMENTS_BACKFILLED).execute()
    SegmentDailyFlow.update(inflow=SegmentDailyFlow.inflow + 100).where(SegmentDailyFlow.ip_id == 9).execute()
    roll_up_pending(now + 60)
    assert stored_days(10) == written[10]
    assert all(v[0] >= 100 for v in stored_days(9).values())  # passed over, not written again


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_the_boards_next_week_leaves_out_forecasts_that_are_not_current(db):
    """Two IPs forecast at yesterday's close; one of them is then no longer refit (paused) for three days: its
    forecast, of days that have passed, leaves the sums and is counted as stale. The sums are the current IPs'
    stored days, added up."""
    from lib.forecast.read import CURRENT_DAYS, board_next_days
    from models import SegmentForecast

    now, _ = wall_clock_market(7)
    wall_clock_market(8)
    assert board_next_days("goods", {}, now)["stale_ips"] == 0
    later = now + (CURRENT_DAYS + 1) * 86_400.0  # IP 8 refit every day meanwhile, IP 7 not
    refit = [{**row, "origin": row["origin"] + timedelta(days=CURRENT_DAYS + 1),
              "day": row["day"] + timedelta(days=CURRENT_DAYS + 1)}
             for row in SegmentForecast.select().where(SegmentForecast.ip_id == 8).dicts()]
    SegmentForecast.delete().where(SegmentForecast.ip_id == 8).execute()
    SegmentForecast.insert_many(refit).execute()
    want: dict[str, float] = {}
    for row in SegmentForecast.select().where((SegmentForecast.ip_id == 8) & (SegmentForecast.kind == "goods")
                                              & (SegmentForecast.measure == OUTFLOW)):
        want[row.key] = want.get(row.key, 0.0) + row.mean
    board = board_next_days("goods", {}, later)
    assert board["stale_ips"] == 1
    assert [(s["key"], s["outflow"], s["ips"]) for s in board["segments"]] == \
        [(k, round(v, 1), 1) for k, v in sorted(want.items(), key=lambda kv: -kv[1])]


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_segments_derived_again_are_rolled_up_again_over_the_days_whose_listings_are_kept(db, settings):
    """The badges become another goods type (as ``segments reapply`` does after a taxonomy change): the read side
    marks the IP's rolled-up days of the detail horizon, and the next rollup rewrites their segments' rows from
    the listings as they are now; the days before keep theirs. The IP's forecasts are marked for the refit."""
    from lib.market.read_side import ReadSide
    from models import IpDailyChanged, SegmentDailyFlow

    now, listings = wall_clock_market(7)
    before = {(r.key, r.day): (r.inflow, r.outflow) for r in SegmentDailyFlow.select().where(
        (SegmentDailyFlow.ip_id == 7) & (SegmentDailyFlow.kind == "goods"))}
    ListingSegment.update(key="badge").where((ListingSegment.ip_id == 7)
                                             & (ListingSegment.key == BADGE.key)).execute()
    IpDailyChanged.delete().execute()
    ReadSide(settings, None, FrozenClock(now)).mark_resegmented(7)
    since = day_of(naive_utc(now - settings.retention_detail))
    assert roll_up_pending(now) == (day_of(naive_utc(now)) - since).days
    after = {(r.key, r.day): (r.inflow, r.outflow) for r in SegmentDailyFlow.select().where(
        (SegmentDailyFlow.ip_id == 7) & (SegmentDailyFlow.kind == "goods"))}
    want = {("badge" if key == BADGE.key and day >= since else key, day): flows
            for (key, day), flows in before.items()}
    assert after == want and any(key == "badge" for key, _ in after)
    assert IpDailyChanged.get_or_none(IpDailyChanged.ip_id == 7) is not None
