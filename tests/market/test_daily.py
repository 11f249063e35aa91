"""Daily rows (docs/operating/storage.md), on SQLite and MariaDB: every completed UTC day is rolled up and
equals the definition by day computed here from the crawl history (tests/market/scripted.py); a late result that
changes a past day changes its row; the per-day series reads them back over a long range, beyond the hourly rows'
horizon, with today's partial day."""

from __future__ import annotations

import statistics
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone

from lib.core.clock import FrozenClock, naive_utc
from lib.core.db import database, is_mysql
from lib.market.daily import roll_up_pending
from lib.market.read_side import ReadSide
from lib.market.retention import horizon, prune
from models import IpDayPending, IpStatsDaily, IpStatsHourly

from .scripted import H, Script, expected_events, expected_hours, make_script, quartiles, shifted
from .test_retention import add_ip, apply, merged

DAY = 24 * H


def expected_days(script: Script) -> dict[float, dict]:
    """Each UTC day's row by the definition: its tracked hours (definition 4's hourly rows) and their flows
    summed; over the day's sales with a real price (by event time) the count, mean, median, quartiles and range."""
    days: dict[float, dict] = defaultdict(lambda: {"hours": 0, "inflow": 0, "outflow": 0, "prices": []})
    for h, row in expected_hours(script).items():
        day = days[h - h % DAY]
        day["hours"] += 1
        day["inflow"] += row["inflow"]
        day["outflow"] += row["outflow"]
    for _, when, price, _, _ in expected_events(script)[1]:
        if price is not None:
            days[when - when % DAY]["prices"].append(price)
    out = {}
    for day, row in days.items():
        prices = row.pop("prices")
        p25, median, p75 = quartiles(prices) if prices else (None, None, None)
        out[day] = {**row, "samples": len(prices), "avg": round(statistics.fmean(prices), 2) if prices else None,
                    "median": None if median is None else round(median, 2),
                    "p25": None if p25 is None else round(p25, 2), "p75": None if p75 is None else round(p75, 2),
                    "min": min(prices) if prices else None, "max": max(prices) if prices else None}
    return out


def f(v) -> float | None:
    return None if v is None else round(float(v), 2)


def stored_days(ip_id: int) -> dict[float, dict]:
    return {r.day.replace(tzinfo=timezone.utc).timestamp(): {
        "hours": r.hours, "inflow": r.inflow, "outflow": r.outflow, "samples": r.sample_count, "avg": f(r.avg_price),
        "median": f(r.median_price), "p25": f(r.p25_price), "p75": f(r.p75_price), "min": f(r.min_price),
        "max": f(r.max_price)} for r in IpStatsDaily.select().where(IpStatsDaily.ip_id == ip_id)}


def served_days(settings, ip_id: int, now: float, days: int) -> dict[float, dict]:
    """The per-day series the API serves, keyed like ``expected_days``."""
    got = ReadSide(settings, None, FrozenClock(now)).ip_days(ip_id, days)
    return {datetime.fromisoformat(r["day"]).replace(tzinfo=timezone.utc).timestamp(): {
        "hours": r["hours"], "inflow": r["inflow"], "outflow": r["outflow"], "samples": r["samples"],
        "avg": f(r["avg_price"]), "median": f(r["median_price"]), "p25": f(r["p25_price"]),
        "p75": f(r["p75_price"]), "min": f(r["min_price"]), "max": f(r["max_price"])} for r in got["series"]}


def in_own_connection(fn):
    """Run ``fn`` on this thread's own database connection, closed after."""
    try:
        return fn()
    finally:
        if not database.is_closed():
            database.close()


def several_days() -> Script:
    """Three markets a day apart each, so the crawls cover four or five UTC days."""
    return merged(make_script(11, n_crawls=30), shifted(make_script(12, n_crawls=30), DAY),
                  shifted(make_script(13, n_crawls=30), 2 * DAY))


def test_every_completed_day_is_rolled_up_by_the_definition(db, settings):
    script = several_days()
    ip_id = add_ip(settings)
    apply(settings, ip_id, script)
    end = max(at for at, _ in script.crawls)
    now = end - end % DAY + DAY + 3 * H  # the day after the last crawl's: every day with crawls is complete
    expected = expected_days(script)
    assert len(expected) >= 4 and all(d < now - now % DAY for d in expected)
    assert sum(d["outflow"] for d in expected.values()) > 0

    assert roll_up_pending(now) == len(expected)
    assert stored_days(ip_id) == expected
    assert IpDayPending.select().where(IpDayPending.ip_id == ip_id).count() == 0
    assert roll_up_pending(now) == 0  # idempotent: nothing pending, nothing missing
    assert stored_days(ip_id) == expected
    assert served_days(settings, ip_id, now, 30) == expected


def test_a_late_result_updates_a_past_day(db, settings):
    script = several_days()
    # a crawl whose result arrives after all the later ones, changing an earlier day (by event time)
    full = expected_days(script)
    late = next(k for k in range(1, len(script.crawls) - 1)
                if expected_days(Script(script.crawls[:k] + script.crawls[k + 1:],
                                        script.search[:k] + script.search[k + 1:])) != full
                and script.crawls[k][0] - script.crawls[k][0] % DAY < max(at for at, _ in script.crawls) - DAY)
    without = Script(script.crawls[:late] + script.crawls[late + 1:], script.search[:late] + script.search[late + 1:])
    ip_id = add_ip(settings)
    apply(settings, ip_id, without)
    end = max(at for at, _ in script.crawls)
    now = end - end % DAY + DAY + 3 * H
    roll_up_pending(now)
    assert stored_days(ip_id) == expected_days(without) != full

    apply(settings, ip_id, Script([script.crawls[late]], [script.search[late]]), task="late")
    changed = {d for d in full if expected_days(without).get(d) != full[d]}
    assert changed and all(d < now - now % DAY - DAY for d in changed)  # a day rolled up before, not yesterday
    # the series is right at once (the changed day is read from the hourly rows until it is rolled up again)
    assert served_days(settings, ip_id, now, 30) == full
    # two passes at once (a second process, its lock lapsed): the day is rolled up once, to the right values
    with ThreadPoolExecutor(2) as pool:
        counts = list(pool.map(lambda _: in_own_connection(lambda: roll_up_pending(now)), range(2)))
    assert sum(counts) == len(changed)
    assert stored_days(ip_id) == full
    assert IpDayPending.select().where((IpDayPending.ip_id == ip_id)
                                       & (IpDayPending.day < naive_utc(now - now % DAY))).count() == 0
    assert served_days(settings, ip_id, now, 30) == full


def test_the_per_day_series_reaches_beyond_the_hourly_horizon(db, settings):
    """300 days of an IP's market, its old hourly rows and listings pruned: the per-day series of all 300 days,
    today's partial day included, is the definition by day."""
    recent = make_script(21, n_crawls=30)
    history = merged(shifted(make_script(22, n_crawls=20), -290 * DAY),
                     shifted(make_script(23, n_crawls=20), -200 * DAY),
                     shifted(make_script(24, n_crawls=20), -100 * DAY), recent)
    ip_id = add_ip(settings)
    apply(settings, ip_id, history)
    end = max(at for at, _ in recent.crawls)
    now = end + 600
    prune(settings, now)
    limit = horizon(settings, now)
    assert limit < now - 150 * DAY  # the -290 and -200 day markets are before it
    if not is_mysql():  # (MariaDB drops whole months of them)
        assert IpStatsHourly.select().where((IpStatsHourly.ip_id == ip_id)
                                            & (IpStatsHourly.hour_bucket < naive_utc(limit))).count() == 0
    roll_up_pending(now)

    first = now - now % DAY - 299 * DAY
    expected = {d: row for d, row in expected_days(history).items() if d >= first}
    assert min(expected) < limit and max(expected) == now - now % DAY  # before the horizon, and today
    assert sum(row["outflow"] for d, row in expected.items() if d < limit) > 0
    got = served_days(settings, ip_id, now, 300)
    assert got == expected
    today = ReadSide(settings, None, FrozenClock(now)).ip_days(ip_id, 300)["series"][-1]
    assert today["partial"] and today["day"] == f"{naive_utc(now):%Y-%m-%d}"
    assert naive_utc(now).date() - timedelta(days=299) == naive_utc(first).date()
