"""Breakouts and the rising board (docs/concepts/forecasts.md, "Breakouts"), on SQLite and MariaDB: a closed day is
held against the forecast stored for it the day before; a day out of its 95 % interval by the margin, with the minimum
sample, is kept and alerted once (the alerts' dedup: one per IP, rule and day); the rising board ranks by the score
written here from its definition; the API and the command line answer it."""

from __future__ import annotations

import json
import math
import time
from datetime import datetime, timedelta

from lib.core.clock import FrozenClock, naive_utc
from lib.core.db import insert_rows, write_transaction
from lib.forecast.breakouts import DOWN, MARGIN, MIN_SAMPLE, UP, Check, record, rising, upper_bound
from lib.forecast.refresh import refresh
from lib.forecast.values import OUTFLOW, DayForecast
from lib.market.daily import roll_up_pending
from lib.market.statistics import day_of
from models import (
    IpAlert,
    IpBreakout,
    IpForecast,
    SegmentBreakout,
    SegmentDailyFlow,
    SegmentForecast,
    SegmentForecastCheck,
)

from ..helpers import run_cli
from ..web.conftest import call, start_dashboard
from ..web.test_api import check_against_openapi
from .test_refresh import write_days

DAY0 = datetime(2026, 1, 1)


def forecast(mean, lo, hi) -> DayForecast:
    return DayForecast(DAY0, mean, lo, hi, lo, hi)


def test_a_breakout_leaves_the_95_interval_by_its_margin_with_its_minimum_sample():
    # the interval 12-30 about 20: a breakout passes 30 + MARGIN × 10 upward, falls under 12 - MARGIN × 8 downward
    up, down = 30 + MARGIN * 10, 12 - MARGIN * 8
    assert Check(1, OUTFLOW, DAY0, up + 0.5, forecast(20, 12, 30)).direction == UP
    assert Check(1, OUTFLOW, DAY0, up, forecast(20, 12, 30)).direction is None  # on the margin's edge
    assert Check(1, OUTFLOW, DAY0, 30.5, forecast(20, 12, 30)).direction is None  # out of the interval, within it
    assert Check(1, OUTFLOW, DAY0, 30.5, forecast(20, 12, 30)).direction_past(0.0) == UP
    assert Check(1, OUTFLOW, DAY0, MIN_SAMPLE - 1, forecast(2, 0, 6)).direction is None  # too few to tell
    assert Check(1, OUTFLOW, DAY0, MIN_SAMPLE, forecast(2, 0, 6)).direction == UP
    assert Check(1, OUTFLOW, DAY0, down - 0.5, forecast(20, 12, 30)).direction == DOWN
    assert Check(1, OUTFLOW, DAY0, 11.5, forecast(20, 12, 30)).direction is None  # under the interval, within it
    assert Check(1, OUTFLOW, DAY0, 0, forecast(MIN_SAMPLE - 1, 3, 16)).direction is None
    assert Check(1, OUTFLOW, DAY0, 40, forecast(20, 12, 30)).score == (40 - 20) / (30 - 20)
    # a breakout upward is a score above 1 + MARGIN
    assert Check(1, OUTFLOW, DAY0, up + 0.5, forecast(20, 12, 30)).score > 1 + MARGIN


def test_a_breakout_is_judged_against_an_ordinary_days_interval():
    """Where the history had bursts the forecast's intervals hold them too (lib/forecast/fit.py): a day is held
    against the 95 % interval of a day without a burst, kept beside them, as the check and the breakout store it."""
    f = DayForecast(DAY0, 20, 14, 40, 12, 60, ordinary_lo95=12, ordinary_hi95=30)
    check = Check(1, OUTFLOW, DAY0, 30 + MARGIN * 10 + 0.5, f)
    assert check.band == (12, 30) and check.direction == UP  # within the forecast's 95 % interval (12-60)
    assert check.score == (check.value - 20) / (30 - 20)
    assert Check(1, OUTFLOW, DAY0, 12 - MARGIN * 8 - 0.5, f).direction == DOWN
    assert forecast(20, 12, 30).ordinary95 == (12, 30)  # without bursts: the 95 % interval itself


def steady(ip_id: int, first: datetime, days: int, level: int) -> dict:
    flows = {first + timedelta(days=i): (24, level + (i * 7) % 5, level + (i * 3) % 5) for i in range(days)}
    write_days(ip_id, flows)
    return flows


def test_a_day_above_its_forecast_is_a_breakout_alerted_once_and_tops_the_rising_board(db, settings, broker, env):
    now = time.time()
    today = day_of(naive_utc(now))
    first = today - timedelta(days=29)
    steady(1, first, 28, 30)  # up to the day before yesterday
    steady(2, first, 28, 30)
    steady(3, first, 28, 30)
    steady(4, first, 28, 30)
    then = now - 86400
    roll_up_pending(then)
    refresh(then)
    yesterday = today - timedelta(days=1)
    before = {ip: IpForecast.get((IpForecast.ip_id == ip) & (IpForecast.measure == OUTFLOW)
                                 & (IpForecast.day == yesterday)) for ip in (1, 2, 3, 4)}
    # out of its 95 % interval, within the margin past it: not a breakout
    edge = math.floor(upper_bound(before[4].mean, before[4].hi95) - 1e-9)
    assert before[4].hi95 < edge
    write_days(1, {yesterday: (24, 30, 90)})  # three times its sales
    write_days(2, {yesterday: (24, 31, 31)})  # as usual
    write_days(3, {yesterday: (24, 30, 0)})  # none
    write_days(4, {yesterday: (24, 30, edge)})
    roll_up_pending(now)
    done = refresh(now)

    (up,) = IpBreakout.select().where((IpBreakout.ip_id == 1) & (IpBreakout.measure == OUTFLOW))
    assert (up.day, up.direction, up.value, up.hi95) == (yesterday, UP, 90, before[1].hi95)
    assert upper_bound(before[1].mean, before[1].hi95) < 90
    (down,) = IpBreakout.select().where((IpBreakout.ip_id == 3) & (IpBreakout.measure == OUTFLOW))
    assert (down.direction, down.value) == (DOWN, 0)
    assert not IpBreakout.select().where(IpBreakout.ip_id.in_([2, 4])).exists()
    alerts = list(IpAlert.select().where(IpAlert.rule == "outflow_breakout").order_by(IpAlert.ip_id))
    assert [(a.ip_id, a.hour_bucket, a.value) for a in alerts] == [(1, yesterday, 90), (3, yesterday, 0)]
    assert sorted(done.alerts) == sorted(a.id for a in alerts)
    # the same breakout found again (a refresh that died before its marks were dropped): no second alert
    assert record([Check(1, OUTFLOW, yesterday, 90, DayForecast(yesterday, before[1].mean, before[1].lo80,
                                                                   before[1].hi80, before[1].lo95, before[1].hi95))],
                  now) == []

    def score(ip: int, value: float) -> float:
        return (value - before[ip].mean) / (before[ip].hi95 - before[ip].mean)

    server, _ = start_dashboard(settings, broker, None, FrozenClock(now))
    try:
        reply = call(f"{server.url}/api/v1/rising")
        check_against_openapi(call(f"{server.url}/api/v1/openapi.json").json(), "/api/v1/rising", "get", reply)
        rows = reply.json()["rows"]
    finally:
        server.stop()
    assert [(r["ip_id"], r["breakout"]) for r in rows] == [(1, True), (4, False), (2, False), (3, False)]
    assert [r["score"] for r in rows] == [round(score(1, 90), 3), round(score(4, edge), 3), round(score(2, 31), 3),
                                          round(score(3, 0), 3)]
    assert 1 < score(4, edge) <= 1 + MARGIN  # out of the interval: ranked as such, not flagged
    shown = run_cli(env, "forecast", "rising", "--format", "json")
    assert json.loads(shown.stdout)["rows"] == rows
    table = run_cli(env, "forecast", "rising")
    assert table.returncode == 0 and "BREAKOUT" in table.stdout.splitlines()[1]


def test_a_stored_forecast_keeps_its_ordinary_days_interval_and_a_closed_day_is_held_against_it(db):
    """An IP whose history had bursts: its stored forecast's 95 % interval holds them and its ordinary day's is
    kept beside it; a day inside the first but past the second by the margin breaks out, stored with the interval
    it was held against."""
    now = time.time()
    today = day_of(naive_utc(now))
    first = today - timedelta(days=29)
    write_days(1, {first + timedelta(days=i): (24, 30 + (i * 7) % 5, 90 if i in (5, 13, 20) else 30 + (i * 3) % 5)
                   for i in range(28)})  # steady, but for three days of three times its sales
    then = now - 86400
    roll_up_pending(then)
    refresh(then)
    yesterday = today - timedelta(days=1)
    f = IpForecast.get((IpForecast.ip_id == 1) & (IpForecast.measure == OUTFLOW) & (IpForecast.day == yesterday))
    assert f.ordinary_lo95 is not None and f.ordinary_hi95 is not None and f.ordinary_hi95 < f.hi95
    value = math.floor(f.hi95)
    assert value > upper_bound(f.mean, f.ordinary_hi95)
    write_days(1, {yesterday: (24, 30, value)})
    roll_up_pending(now)
    refresh(now)
    (up,) = IpBreakout.select().where((IpBreakout.ip_id == 1) & (IpBreakout.measure == OUTFLOW))
    assert (up.day, up.direction, up.value, up.lo95, up.hi95) == (yesterday, UP, value, f.ordinary_lo95,
                                                                   f.ordinary_hi95)


def segment_days(ip_id: int, days: dict[datetime, dict[str, int]]) -> None:
    """The segments' daily rows of these days, as the rollup would write them: sales (and as many new listings) by
    goods type."""
    with write_transaction():
        insert_rows(SegmentDailyFlow, [{"ip_id": ip_id, "kind": "goods", "key": key, "day": day, "inflow": n,
                                        "outflow": n, "sample_count": 0, "median_price": None}
                                       for day, by_key in days.items() for key, n in by_key.items()])


def test_a_segment_above_its_forecast_is_a_breakout_alerted_once_per_ip_and_day(db, settings, broker, env):
    now = time.time()
    today = day_of(naive_utc(now))
    first = today - timedelta(days=29)
    steady(4, first, 28, 60)
    then = now - 86400
    roll_up_pending(then)
    segment_days(4, {first + timedelta(days=i): {"plush": 20 + (i * 7) % 5, "can_badge": 20 + (i * 3) % 5,
                                                 "figure": 12 + i % 3} for i in range(28)})
    refresh(then)
    yesterday = today - timedelta(days=1)

    def made(key: str) -> SegmentForecast:
        return SegmentForecast.get((SegmentForecast.ip_id == 4) & (SegmentForecast.key == key)
                                   & (SegmentForecast.measure == OUTFLOW) & (SegmentForecast.day == yesterday))

    before = {key: made(key) for key in ("plush", "can_badge", "figure")}
    write_days(4, {yesterday: (24, 60, 60)})
    roll_up_pending(now)
    segment_days(4, {yesterday: {"plush": 80, "can_badge": 21, "figure": 60}})  # plush and figures break out
    done = refresh(now)

    broke = {(b.key, b.measure): b for b in SegmentBreakout.select()}
    assert {k for k, m in broke if m == OUTFLOW} == {"plush", "figure"}
    assert (broke["plush", OUTFLOW].day, broke["plush", OUTFLOW].direction, broke["plush", OUTFLOW].value,
            broke["plush", OUTFLOW].hi95) == (yesterday, UP, 80, before["plush"].hi95)
    check = SegmentForecastCheck.get((SegmentForecastCheck.key == "can_badge")
                                     & (SegmentForecastCheck.measure == OUTFLOW))
    assert (check.day, check.value, check.mean) == (yesterday, 21, before["can_badge"].mean)
    (alert,) = IpAlert.select().where(IpAlert.rule == "segment_breakout")
    assert alert.id in done.alerts and (alert.ip_id, alert.hour_bucket) == (4, yesterday)
    details = json.loads(alert.details)
    assert {(s["key"], s["measure"]) for s in details["segments"]} == set(broke)
    assert "goods plush: sales on" in alert.message and "goods figure: sales on" in alert.message

    def score(key: str, value: float) -> float:
        return (value - before[key].mean) / (before[key].hi95 - before[key].mean)

    rows = rising(OUTFLOW, 10, "goods")
    by_score = sorted([("plush", 80), ("can_badge", 21), ("figure", 60)], key=lambda kv: -score(*kv))
    assert [(r["segment"]["key"], r["score"]) for r in rows] == [(k, round(score(k, v), 3)) for k, v in by_score]
    assert [r["breakout"] for r in rows] == [k != "can_badge" for k, _ in by_score]
    assert rising(OUTFLOW, 10, "character") == [] and all(r["segment"] is None for r in rising(OUTFLOW, 10))
    server, _ = start_dashboard(settings, broker, None, FrozenClock(now))
    try:
        reply = call(f"{server.url}/api/v1/rising?of=goods")
        check_against_openapi(call(f"{server.url}/api/v1/openapi.json").json(), "/api/v1/rising", "get", reply)
        assert reply.json() == {"measure": OUTFLOW, "of": "goods", "rows": rows}
    finally:
        server.stop()
    shown = run_cli(env, "forecast", "rising", "--of", "goods", "--format", "json")
    assert json.loads(shown.stdout)["rows"] == rows
    table = run_cli(env, "forecast", "rising", "--of", "goods")
    assert table.returncode == 0 and table.stdout.splitlines()[1].split()[1:3] == ["forecast", "4"]


def test_breakouts_are_pruned_with_the_daily_rows(db, settings):
    from lib.market.retention import prune

    now = time.time()
    today = day_of(naive_utc(now))
    old, recent = today - timedelta(days=800), today - timedelta(days=1)  # RETENTION_DAILY: 730 days by default
    for day in (old, recent):
        IpBreakout.create(ip_id=1, measure=OUTFLOW, day=day, direction=UP, value=90, mean=30, lo95=20, hi95=45,
                          found_at=now)
        SegmentBreakout.create(ip_id=1, kind="goods", key="plush", measure=OUTFLOW, day=day, direction=UP, value=90,
                               mean=30, lo95=20, hi95=45, found_at=now)
    assert prune(settings, now, dry_run=True).breakouts == 2 and IpBreakout.select().count() == 2
    assert prune(settings, now).breakouts == 2
    assert [b.day for b in IpBreakout.select()] == [recent] and [b.day for b in SegmentBreakout.select()] == [recent]
