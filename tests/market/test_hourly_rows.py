"""Definitions 1–4: the hourly rows equal the independent computation (tests/market/scripted.py) for scripted
crawl sequences of several seeds, on SQLite and MariaDB, delivered in order, shuffled, and shuffled with every
result twice — the rows are a function of the set of results applied."""

import random
from datetime import datetime, timezone

import pytest

from lib.core.clock import FrozenClock
from lib.core.redis_client import state_redis
from lib.market.processing import CrawlResult, ResultProcessor
from lib.scheduling.catalogue import Catalogue
from lib.scheduling.schedule import ScheduleStore
from models import IpStatsHourly

from .scripted import T0, expected_hours, make_script


def f(value):
    return None if value is None else round(float(value), 4)


def stored_rows(ip_id: int) -> dict[float, dict]:
    return {r.hour_bucket.replace(tzinfo=timezone.utc).timestamp(): {
        "inflow": r.inflow, "outflow": r.outflow, "liquidity": f(r.liquidity_index), "samples": r.sample_count,
        "avg": f(r.avg_price), "median": f(r.median_price), "p25": f(r.p25_price), "p75": f(r.p75_price),
        "min": f(r.min_price), "max": f(r.max_price)}
        for r in IpStatsHourly.select().where(IpStatsHourly.ip_id == ip_id)}


def rounded(rows: dict[float, dict]) -> dict[float, dict]:
    return {h: {k: (round(v, 2) if isinstance(v, float) and k != "liquidity" else v) for k, v in row.items()}
            for h, row in rows.items()}


def deliver(settings, script, order: str, seed: int) -> int:
    r = state_redis(settings)
    ip = Catalogue(ScheduleStore(r), settings, FrozenClock(T0)).add(f"IP {order} {seed} {random.random()}")
    results = [CrawlResult.parse(ip.id, f"{ip.id}-{n}", at, items, search=script.search[n])
               for n, (at, items) in enumerate(script.crawls)]
    rng = random.Random(seed)
    if order == "shuffled":
        rng.shuffle(results)
    elif order == "duplicated":
        results = results * 2
        rng.shuffle(results)
    elif order == "swapped":  # neighbours swapped, each delivered twice (the measurement)
        for k in range(0, len(results) - 1, 2):
            results[k], results[k + 1] = results[k + 1], results[k]
        results = [x for x in results for _ in range(2)]
    proc = ResultProcessor(settings, r, FrozenClock(T0))
    for result in results:
        proc.apply(result)
    return ip.id


@pytest.mark.parametrize("api", [True, False], ids=["api", "dom"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_hourly_rows_equal_the_definition_in_any_order(db, settings, seed, api):
    script = make_script(seed, api=api)
    expected = {h: {k: (f(v) if isinstance(v, (int, float)) and v is not None and k != "inflow"
                        and k != "outflow" and k != "samples" else v) for k, v in row.items()}
                for h, row in expected_hours(script).items()}
    assert sum(row["outflow"] for row in expected.values()) > 50  # the script has a market to measure
    for order in ("in_order", "shuffled", "duplicated", "swapped"):
        got = stored_rows(deliver(settings, script, order, seed))
        assert got == expected, (order, {h: (got.get(h), expected.get(h)) for h in set(got) | set(expected)
                                         if got.get(h) != expected.get(h)})


def test_fast_sellers_count_as_inflow(db, settings):
    """A listing created and sold between two crawls is inflow and outflow, each in its own hour."""
    script_items = [
        (T0 + 60, [{"source_id": "a", "status": "on_sale", "price": 100, "created": T0 - 600}]),
        (T0 + 2 * 3600 + 60, [{"source_id": "a", "status": "on_sale", "price": 100, "created": T0 - 600},
                              {"source_id": "fast", "status": "sold", "price": 500, "created": T0 + 1200,
                               "updated": T0 + 3600 + 300}]),
    ]
    r = state_redis(settings)
    ip = Catalogue(ScheduleStore(r), settings, FrozenClock(T0)).add("fast")
    proc = ResultProcessor(settings, r, FrozenClock(T0))
    for n, (at, items) in enumerate(script_items):
        proc.apply(CrawlResult.parse(ip.id, f"fast-{n}", at, items))
    rows = {r.hour_bucket: (r.inflow, r.outflow) for r in IpStatsHourly.select().where(IpStatsHourly.ip_id == ip.id)}
    hour = datetime.fromtimestamp(T0, timezone.utc).replace(tzinfo=None)
    assert rows == {hour: (1, 0), hour.replace(hour=hour.hour + 1): (0, 1), hour.replace(hour=hour.hour + 2): (0, 0)}
