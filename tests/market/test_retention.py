"""Bounded storage (docs/operating/storage.md), on SQLite and MariaDB: pruning to the retention horizon removes old
facts, yet every window up to RETENTION_WINDOW — now and later — still equals the definitions of
docs/concepts/measures.md computed independently from the whole crawl history (tests/market/scripted.py); the daily
rollup equals the definition by day; results older than the horizon are skipped; longer windows are refused."""

from __future__ import annotations

import dataclasses
import random
import statistics
from collections import defaultdict
from datetime import timezone

import pytest

from lib.core.clock import FrozenClock, naive_utc
from lib.core.db import is_mysql
from lib.core.redis_client import state_redis
from lib.market import partitions
from lib.market.facts import baseline_of, rederive
from lib.market.processing import CrawlResult, ResultProcessor
from lib.market.read_side import ReadSide
from lib.market.retention import WindowBeyondRetention, horizon, prune, pruned_before, segment_horizon
from lib.market.windows import window_measures
from lib.scheduling.catalogue import Catalogue
from lib.scheduling.schedule import ScheduleStore
from models import (
    AppliedResult,
    CrawlSearchTotal,
    IpStatsDaily,
    IpStatsHourly,
    ListingEvent,
    ListingSegment,
    ListingSighting,
    SegmentStatsDaily,
)

from ..helpers import flatten
from .scripted import T0, H, Script, expected_events, expected_hours, expected_window, make_script, quartiles, shifted
from .test_sighting_runs import runs_by_definition
from .test_windows import MINIMUMS, close

DAY = 24 * H
WINDOW_HOURS = 12  # RETENTION_WINDOW in these tests: the horizon is 2 × 12 h + 8 days back, by the UTC day


def long_lived(start: float, end: float, seed: int = 9) -> Script:
    """Twenty listings on sale from ``start``, seen by a crawl every 6 h until ``end``; their price is cut halfway,
    and ten of them sell in the last 11 hours: their sightings span the horizon."""
    rng = random.Random(seed)
    created = start - H
    listings = [(f"L{k}", 1000 + 100 * k, end - 11 * H + k * H + rng.uniform(0, H / 2) if k < 10 else None)
                for k in range(20)]
    cut = (start + end) / 2
    crawls, search = [], []
    at = start
    while at <= end:
        items = []
        for sid, price, sale in listings:
            now_price = int(price * 0.8) if at >= cut else price
            if sale is not None and at >= sale:
                items.append({"source_id": sid, "status": "sold", "price": now_price, "title": sid,
                              "created": created, "updated": sale})
            else:
                items.append({"source_id": sid, "status": "on_sale", "price": now_price, "title": sid,
                              "created": created, "updated": None})
        on_sale = sum(1 for it in items if it["status"] == "on_sale")
        crawls.append((at, items))
        search.append({"on_sale": {"num_found": on_sale, "pages": 1, "items": on_sale},
                       "sold": {"num_found": 20 - on_sale, "pages": 1, "items": 20 - on_sale}})
        at += 6 * H
    return Script(crawls, search)


def merged(*scripts: Script) -> Script:
    rows = sorted(((at, items, s.search[n]) for s in scripts for n, (at, items) in enumerate(s.crawls)),
                  key=lambda r: r[0])
    return Script([(at, items) for at, items, _ in rows], [search for _, _, search in rows])


@pytest.fixture
def small(settings):
    return dataclasses.replace(settings, retention_window=WINDOW_HOURS * H)


def add_ip(settings) -> int:
    return Catalogue(ScheduleStore(state_redis(settings)), settings, FrozenClock(T0)).add(
        f"retention {random.random()}").id


def apply(settings, ip_id: int, script: Script, first: int = 0, task: str = "t"):
    proc = ResultProcessor(settings, state_redis(settings), FrozenClock(T0))
    return [proc.apply(CrawlResult.parse(ip_id, f"{ip_id}-{task}{n}", at, items, search=script.search[n]))
            for n, (at, items) in enumerate(script.crawls) if n >= first]


def measures(ip_id: int, now: float) -> dict[int, dict]:
    return {hours: flatten(window_measures([ip_id], hours, now)[ip_id].to_json()) for hours in (1, 3, 6, 12)}


def assert_definition(script: Script, ip_id: int, now: float) -> None:
    for hours, got in measures(ip_id, now).items():
        expected = expected_window(script, hours, now, MINIMUMS)
        wrong = {k: (got[k], expected[k]) for k in expected if not close(got[k], expected[k])}
        assert not wrong, (hours, wrong)


def count(model, ip_id: int) -> int:
    return model.select().where(model.ip_id == ip_id).count()


def test_pruning_keeps_every_window_it_promises(db, small):
    recent = make_script(5, n_crawls=30)
    end = max(at for at, _ in recent.crawls)
    old = shifted(make_script(4, n_crawls=20), -20 * DAY)  # dormant long before the horizon
    history = merged(old, long_lived(T0 - 15 * DAY, end), recent)
    ip_id = add_ip(small)
    apply(small, ip_id, history)
    now = end + 600
    later = [now + k * H for k in (1, 5, 11)]  # windows still open after the pass, no new crawl
    before = {at: measures(ip_id, at) for at in (now, *later)}
    assert_definition(history, ip_id, now)
    assert before[now][12]["heat"] is not None and before[now][12]["price_cut_share"] is not None
    stored = {m: count(m, ip_id) for m in (ListingSighting, ListingEvent, AppliedResult, CrawlSearchTotal)}
    kept_events = {(e.source_id, e.kind, e.occurrence, e.event_at) for e in ListingEvent.select().where(
        (ListingEvent.ip_id == ip_id) & ~ListingEvent.source_id.startswith("m4-"))}

    old_segments = ListingSegment.select().where((ListingSegment.ip_id == ip_id)
                                                 & ListingSegment.source_id.startswith("m4-")).count()

    report = prune(small, now)

    limit = horizon(small, now)
    assert limit <= now - 2 * WINDOW_HOURS * H - 8 * DAY and limit % DAY == 0
    assert pruned_before() == limit
    # something went: the dormant old market (its runs of sightings: the runs of the listings still seen are all
    # they depend on, kept whole), the ledger
    assert report.dormant_listings == len({it["source_id"] for _, items in old.crawls for it in items})
    assert ListingSighting.select().where((ListingSighting.ip_id == ip_id)
                                          & ListingSighting.source_id.startswith("m4-")).count() == 0
    old_runs = {r for r in runs_by_definition(history) if r[0].startswith("m4-")}
    assert stored[ListingSighting] == len(runs_by_definition(history))
    assert count(ListingSighting, ip_id) == stored[ListingSighting] - len(old_runs)
    assert report.sightings == len(old_runs)
    # their segments go with their snapshots (each title is in one goods type: other)
    assert report.segments == old_segments == report.dormant_listings
    assert ListingSegment.select().where((ListingSegment.ip_id == ip_id)
                                         & ListingSegment.source_id.startswith("m4-")).count() == 0
    assert count(AppliedResult, ip_id) < stored[AppliedResult]
    assert count(CrawlSearchTotal, ip_id) < stored[CrawlSearchTotal]
    if not is_mysql():
        assert IpStatsHourly.select().where((IpStatsHourly.ip_id == ip_id)
                                            & (IpStatsHourly.hour_bucket < naive_utc(limit))).count() == 0
    else:
        assert report.partitions_dropped >= 1
        assert all(p.until is None or p.until > naive_utc(limit) for p in partitions.list_partitions())
    # what listings still seen depend on is all there: their events are untouched, and deriving them again
    # from the sightings left changes nothing
    assert kept_events == {(e.source_id, e.kind, e.occurrence, e.event_at) for e in ListingEvent.select().where(
        (ListingEvent.ip_id == ip_id) & ~ListingEvent.source_id.startswith("m4-"))}
    ids = [sid for (sid,) in ListingSighting.select(ListingSighting.source_id).where(
        ListingSighting.ip_id == ip_id).distinct().tuples()]
    assert not rederive(ip_id, ids, baseline_of(ip_id) or 0.0).hours
    # every window it promises, now and later, is what it was and what the definition says
    for at, expected in before.items():
        assert measures(ip_id, at) == expected, at
    assert_definition(history, ip_id, now)
    assert prune(small, now).sightings == 0  # a second pass finds nothing more

    # the IP goes on: a crawl after the pass, in which an old, pruned listing shows up again, still counts
    # by the definition; a redelivered result from before the horizon is skipped
    again = old.crawls[-1][1][0]
    extra = Script([(end + H, [*recent.crawls[-1][1], again])], [recent.search[-1]])
    below = {(r.hour_bucket, r.inflow, r.outflow) for r in IpStatsHourly.select().where(
        (IpStatsHourly.ip_id == ip_id) & (IpStatsHourly.hour_bucket < naive_utc(limit)))}
    apply(small, ip_id, extra, task="x")
    late = apply(small, ip_id, Script([old.crawls[3]], [old.search[3]]), task="late")
    assert not late[0].applied
    assert below == {(r.hour_bucket, r.inflow, r.outflow) for r in IpStatsHourly.select().where(
        (IpStatsHourly.ip_id == ip_id) & (IpStatsHourly.hour_bucket < naive_utc(limit)))}
    assert_definition(merged(history, extra), ip_id, end + H + 600)


def test_daily_rollup_equals_the_definition_by_day(db, small):
    old = merged(shifted(make_script(2, n_crawls=40), -20 * DAY), shifted(make_script(3, n_crawls=40), -16 * DAY))
    ip_id = add_ip(small)
    apply(small, ip_id, old)
    now = T0
    hourly = expected_hours(old)
    _, sold = expected_events(old)
    first = prune(small, now)
    limit = horizon(small, now)
    days: dict[float, dict] = defaultdict(lambda: {"hours": 0, "inflow": 0, "outflow": 0, "prices": []})
    for h, row in hourly.items():
        if h < limit:
            day = days[h - h % DAY]
            day["hours"] += 1
            day["inflow"] += row["inflow"]
            day["outflow"] += row["outflow"]
    for _, when, price, _, _ in sold:
        if when < limit and price is not None:
            days[when - when % DAY]["prices"].append(price)
    expected = {}
    for day, row in days.items():
        prices = row.pop("prices")
        p25, median, p75 = quartiles(prices) if prices else (None, None, None)
        expected[day] = {**row, "samples": len(prices),
                         "avg": round(statistics.fmean(prices), 2) if prices else None,
                         "median": None if median is None else round(median, 2),
                         "p25": None if p25 is None else round(p25, 2),
                         "p75": None if p75 is None else round(p75, 2),
                         "min": min(prices) if prices else None, "max": max(prices) if prices else None}

    def f(v):
        return None if v is None else round(float(v), 2)

    got = {r.day.replace(tzinfo=timezone.utc).timestamp(): {
        "hours": r.hours, "inflow": r.inflow, "outflow": r.outflow, "samples": r.sample_count, "avg": f(r.avg_price),
        "median": f(r.median_price), "p25": f(r.p25_price), "p75": f(r.p75_price), "min": f(r.min_price),
        "max": f(r.max_price)} for r in IpStatsDaily.select().where(IpStatsDaily.ip_id == ip_id)}
    assert len(expected) >= 3 and sum(d["outflow"] for d in expected.values()) > 0
    assert got == expected
    # the segments' days (every listing is in a goods type) are kept only as far back as a segments window reads
    assert first.segment_daily_rows > 0
    assert not SegmentStatsDaily.select().where(SegmentStatsDaily.day < naive_utc(segment_horizon(small, now))).count()
    # kept RETENTION_DAILY, then pruned
    report = prune(dataclasses.replace(small, retention_daily=1 * DAY), now)
    assert report.daily_rows == len(expected) and count(IpStatsDaily, ip_id) == 0
    assert count(SegmentStatsDaily, ip_id) == 0


def test_windows_beyond_the_retained_range_are_refused(db, small):
    ip_id = add_ip(small)
    apply(small, ip_id, make_script(6, n_crawls=4))
    read = ReadSide(small, None, FrozenClock(T0 + DAY))
    assert read.leaderboard("outflow", WINDOW_HOURS) is not None
    with pytest.raises(WindowBeyondRetention, match="RETENTION_WINDOW"):
        read.leaderboard("outflow", WINDOW_HOURS + 1)
    with pytest.raises(WindowBeyondRetention):
        read.ip_detail(ip_id, WINDOW_HOURS + 1)
    # pruned under a longer retention window, then the window was raised: what reaches before is refused
    prune(dataclasses.replace(small, retention_window=2 * H), T0 + 30 * DAY)
    read = ReadSide(dataclasses.replace(small, retention_window=90 * DAY), None, FrozenClock(T0 + 30 * DAY))
    read.leaderboard("outflow", WINDOW_HOURS)
    with pytest.raises(WindowBeyondRetention, match="pruned"):
        read.leaderboard("outflow", 5 * 24)


def test_prune_storage_is_a_periodic_actor_that_prunes(db, settings, stub_broker, start_worker):
    """The production actor, on the StubBroker with a worker on its queue, prunes with the app's settings and
    clock (RETENTION_WINDOW 90 days: a market last seen 200 days ago is gone, one seen now is kept)."""
    import time

    import actors
    from lib.core.settings import get_settings

    assert actors.prune_storage.options.get("periodic") is not None
    assert actors.prune_storage.queue_name == "maintenance"
    gone, kept = add_ip(settings), add_ip(settings)
    script = make_script(6, n_crawls=4)
    apply(settings, gone, shifted(script, time.time() - 200 * DAY - T0))
    apply(settings, kept, shifted(script, time.time() - 2 * DAY - T0))
    assert count(ListingSighting, gone) > 0
    actors.prune_storage.send()
    start_worker(stub_broker, queues=["maintenance"])
    stub_broker.join("maintenance", timeout=60_000)
    assert pruned_before() == horizon(get_settings(), time.time()) or pruned_before() == horizon(
        get_settings(), time.time() - 120)  # the pass may have started just before midnight UTC
    assert count(ListingSighting, gone) == 0 and count(ListingEvent, gone) == 0
    assert count(ListingSighting, kept) == len(runs_by_definition(script))
