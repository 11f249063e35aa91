"""Long windows from daily summaries (docs/operating/storage.md), on SQLite and MariaDB: per-listing facts are
kept RETENTION_DETAIL; pruning folds the dormant listings into their days' rows first, and every window the API
accepts (1 h to RETENTION_WINDOW), now and later, answers the same before and after a pass — counts exactly,
sold prices within α, times to sell within their buckets — and equals the definitions of docs/concepts/measures.md
computed here (tests/market/scripted.py), never by the production computation."""

from __future__ import annotations

import dataclasses

import pytest

from lib.core.clock import FrozenClock, naive_utc
from lib.market.read_side import ReadSide
from lib.market.retention import detail_horizon, details_pruned_before, horizon, prune
from lib.market.summaries import CUT_ACCURACY, DURATION_ACCURACY, PRICE_ACCURACY
from models import IpStatsDaily, ListingEvent, ListingSighting

from ..helpers import flatten
from .scripted import T0, H, expected_window, make_script, shifted, window_durations
from .test_intervals import km_interval_by_hand
from .test_retention import DAY, add_ip, apply, long_lived, merged
from .test_summaries import bracket, represented
from .test_windows import MINIMUMS, close

WINDOW = 4 * 24  # RETENTION_WINDOW here, in hours
EXACT = ("inflow", "outflow", "tracked_hours", "liquidity", "sell_through", "price_cut_share", "supply",
         "hours_of_supply", "coverage", "heat", "momentum")
PRICES = ("median_price", "p25_price", "p75_price", "trimmed_mean_price")
QUANTILES = {"time_to_sell_p25": 0.25, "time_to_sell_median": 0.5, "time_to_sell_p75": 0.75}


@pytest.fixture
def short(settings):
    return dataclasses.replace(settings, retention_window=WINDOW * H, retention_detail=3 * DAY)


def history():
    """Eight days of markets, one every two days, and listings on sale across the detail horizon."""
    days = [shifted(make_script(seed, n_crawls=30), offset * DAY)
            for seed, offset in ((11, -8), (12, -6), (13, -4), (14, -2), (15, 0))]
    end = max(at for at, _ in days[-1].crawls)
    return merged(*days, long_lived(T0 - 5 * DAY, end)), end


def read(settings, ip_id: int, at: float, hours: int) -> dict:
    return ReadSide(settings, None, FrozenClock(at)).measures(ip_id, hours).to_json()


def counts(m: dict) -> dict:
    return {k: v["n"] for k, v in m.items() if isinstance(v, dict) and "n" in v}


def assert_within_bounds(before: dict, after: dict, script, hours: int, at: float, detail: float) -> None:
    """``after`` (read partly from summaries) against ``before`` (all from the per-listing facts)."""
    assert counts(after) == counts(before)
    assert after["time_to_sell_hours"]["listings"] == before["time_to_sell_hours"]["listings"]
    for k in ("p25", "median", "p75"):
        assert after["time_to_sell_hours"][k]["n"] == before["time_to_sell_hours"][k]["n"]
    a, b = flatten(after), flatten(before)
    assert {k: a[k] for k in EXACT} == {k: b[k] for k in EXACT}
    for k in PRICES:  # α relative, and the 2 places the value is rounded to
        assert (a[k] is None) == (b[k] is None), k
        assert b[k] is None or abs(a[k] - b[k]) <= PRICE_ACCURACY * b[k] + 0.01, (k, a[k], b[k])
    k = "median_price_cut"
    assert (a[k] is None) == (b[k] is None)
    assert b[k] is None or abs(a[k] - b[k]) <= CUT_ACCURACY * b[k] + 1e-4, (a[k], b[k])
    durations = window_durations(script, hours, at, detail)
    for k, q in QUANTILES.items():
        assert (a[k] is None) == (b[k] is None) or a[k] is None, k  # sales first: never reaches q before it does
        if b[k] is None or a[k] is None:
            continue
        low, high = bracket(durations, q, DURATION_ACCURACY)
        assert low is not None and high is not None
        for value in (a[k], b[k]):  # hours, to 2 places
            assert low / H - 0.005 <= value <= high / H + 0.005, (k, value, low / H, high / H)
    # the intervals (definition 8), by hand: Greenwood's over the durations, bucketed as the summaries hold them
    # where the window (or its previous one) reaches before the detail horizon, so reads the summaries
    since = at - at % H - (hours - 1) * H
    bucketed = represented(durations, DURATION_ACCURACY) if since - hours * H < detail else durations
    for k, q in QUANTILES.items():
        expected = km_interval_by_hand(bucketed, q) if a[k] is not None else None
        got = a[f"{k}_interval"]
        assert (got is None) == (expected is None), (k, got, expected)
        if got is not None and expected is not None:
            assert got[0] == pytest.approx(expected[0] / H, abs=0.0051), (k, got, expected)
            assert (got[1] is None) == (expected[1] is None), (k, got, expected)
            assert got[1] is None or got[1] == pytest.approx(expected[1] / H, abs=0.0051), (k, got, expected)


@pytest.mark.slow  # eight days of markets, pruned; the fast tier keeps test_retention's pruning and test_daily's
def test_every_window_answers_the_same_before_and_after_pruning(db, short):
    script, end = history()
    ip_id = add_ip(short)
    apply(short, ip_id, script)
    now = end + 600
    detail = detail_horizon(short, now)
    assert detail == (now - 3 * DAY) - (now - 3 * DAY) % DAY and detail > horizon(short, now)
    # every third window length up to the longest (each is computed twice from the definition: a third of them
    # still reaches past the detail horizon in many places)
    times = {now: (*range(1, WINDOW, 3), 30, 60, WINDOW), now + 5 * H: (1, 24, 36, 60, 95, 96),
             now + 11 * H: (12, 48, 96)}
    before = {(at, hours): read(short, ip_id, at, hours) for at, hs in times.items() for hours in hs}
    # the long windows' definition: exactly what the per-listing facts give before any pass
    reaching = 0
    for hours in times[now]:
        expected = expected_window(script, hours, now, MINIMUMS, detail_from=detail)
        got = flatten(before[now, hours])
        wrong = {k: (got[k], expected[k]) for k in expected if not close(got[k], expected[k])}
        assert not wrong, (hours, wrong)
        reaching += hours * H + (hours - 1) * H > now - detail
    assert reaching > 12
    long = flatten(before[now, WINDOW])
    assert all(long[k] is not None for k in (*PRICES, "sell_through", "time_to_sell_median", "heat", "momentum",
                                             "price_cut_share", "coverage")), long
    events = ListingEvent.select().where(ListingEvent.ip_id == ip_id).count()

    report = prune(short, now)

    assert details_pruned_before() == detail
    assert report.dormant_listings > 500 and report.days_summarized >= 6
    assert ListingEvent.select().where(ListingEvent.ip_id == ip_id).count() < events / 2
    assert ListingSighting.select().where((ListingSighting.ip_id == ip_id)
                                          & (ListingSighting.crawled_at < detail)
                                          & ListingSighting.source_id.startswith("m11-")).count() == 0
    summarized = IpStatsDaily.select().where((IpStatsDaily.ip_id == ip_id) & (IpStatsDaily.pruned_created > 0))
    assert all(r.day < naive_utc(detail) for r in summarized) and summarized.count() >= 4
    # the listings on sale across the horizon keep their facts (they are read from the detail)
    assert ListingEvent.select().where((ListingEvent.ip_id == ip_id) & ListingEvent.source_id.startswith("L")
                                       & (ListingEvent.event_at < detail)).count() == 20
    for (at, hours), was in before.items():
        assert_within_bounds(was, read(short, ip_id, at, hours), script, hours, at, detail)
    # a second pass summarizes nothing again (each listing once) and changes nothing
    again = prune(short, now)
    assert again.days_summarized == 0 and again.dormant_listings == 0
    assert read(short, ip_id, now, WINDOW) == read(short, ip_id, now, WINDOW)
    for hours in (WINDOW, 60, 30):
        assert_within_bounds(before[now, hours], read(short, ip_id, now, hours), script, hours, now, detail)
    # the leaderboard reads the same way
    board = ReadSide(short, None, FrozenClock(now)).board(WINDOW)
    row = next(r for r in board["rows"] if r["ip_id"] == ip_id)
    mine = read(short, ip_id, now, WINDOW)
    assert (row["sell_through"], row["median_price"], row["heat"]) == (
        mine["sell_through"]["value"], mine["median_price"]["value"], mine["heat"]["value"])


def test_db_init_adds_the_summary_columns_to_an_existing_database(db, short):
    """A database written by the previous version (daily rows without the summaries) gets the columns from
    `animetop db init`, keeps its rows, and a pruning pass then summarizes into them."""
    from playhouse.migrate import SchemaMigrator, migrate

    from lib.core.db import database
    from lib.market.schema import create_tables

    new = [f.column_name for f in IpStatsDaily._meta.sorted_fields if f.column_name.startswith("pruned_")]
    assert len(new) == 7
    migrator = SchemaMigrator.from_database(database.obj)
    for column in new:
        migrate(migrator.drop_column("ip_stats_daily", column))
    assert not {c.name for c in database.get_columns("ip_stats_daily")} & set(new)
    script = shifted(make_script(21, n_crawls=30), -6 * DAY)
    ip_id = add_ip(short)
    apply(short, ip_id, script)
    end = max(at for at, _ in script.crawls)
    database.execute_sql(f"INSERT INTO ip_stats_daily (ip_id, day, hours, inflow, outflow, sample_count) "
                         f"VALUES ({ip_id}, '2020-01-01 00:00:00', 24, 7, 3, 0)")

    create_tables()

    assert set(new) <= {c.name for c in database.get_columns("ip_stats_daily")}
    old = IpStatsDaily.get(IpStatsDaily.ip_id == ip_id)
    assert (old.inflow, old.pruned_created, old.pruned_prices) == (7, 0, None)
    now = end + 5 * DAY  # the whole market is dormant then
    created = ListingEvent.select().where((ListingEvent.ip_id == ip_id) & (ListingEvent.kind == "created")).count()
    report = prune(short, now)
    assert report.dormant_listings > 100 and report.days_summarized >= 2
    assert ListingEvent.select().where(ListingEvent.ip_id == ip_id).count() == 0
    assert sum(r.pruned_created for r in IpStatsDaily.select().where(IpStatsDaily.ip_id == ip_id)) == created > 100
