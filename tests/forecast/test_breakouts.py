"""Breakouts and the rising board (docs/concepts/forecasts.md, "Breakouts"), on SQLite and MariaDB: a closed day is
held against the forecast stored for it the day before; a day out of its 95 % interval with the minimum sample is
kept and alerted once (the alerts' dedup: one per IP, rule and day); the rising board ranks by the score written
here from its definition; the API and the command line answer it."""

from __future__ import annotations

import json
import time
from datetime import datetime, timedelta

from lib.core.clock import FrozenClock, naive_utc
from lib.forecast.breakouts import DOWN, MIN_SAMPLE, UP, Check, record
from lib.forecast.refresh import refresh
from lib.forecast.values import OUTFLOW, DayForecast
from lib.market.daily import roll_up_pending
from lib.market.statistics import day_of
from models import IpAlert, IpBreakout, IpForecast

from ..helpers import run_cli
from ..web.conftest import call, start_dashboard
from ..web.test_api import check_against_openapi
from .test_refresh import write_days

DAY0 = datetime(2026, 1, 1)


def forecast(mean, lo, hi) -> DayForecast:
    return DayForecast(DAY0, mean, lo, hi, lo, hi)


def test_a_breakout_leaves_the_95_interval_with_its_minimum_sample():
    assert Check(1, OUTFLOW, DAY0, 31, forecast(20, 12, 30)).direction == UP
    assert Check(1, OUTFLOW, DAY0, 30, forecast(20, 12, 30)).direction is None  # on its edge: inside
    assert Check(1, OUTFLOW, DAY0, MIN_SAMPLE - 1, forecast(2, 0, 6)).direction is None  # too few to tell
    assert Check(1, OUTFLOW, DAY0, MIN_SAMPLE, forecast(2, 0, 6)).direction == UP
    assert Check(1, OUTFLOW, DAY0, 11, forecast(20, 12, 30)).direction == DOWN
    assert Check(1, OUTFLOW, DAY0, 0, forecast(MIN_SAMPLE - 1, 3, 16)).direction is None
    assert Check(1, OUTFLOW, DAY0, 40, forecast(20, 12, 30)).score == (40 - 20) / (30 - 20)


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
    then = now - 86400
    roll_up_pending(then)
    refresh(then)
    yesterday = today - timedelta(days=1)
    before = {ip: IpForecast.get((IpForecast.ip_id == ip) & (IpForecast.measure == OUTFLOW)
                                 & (IpForecast.day == yesterday)) for ip in (1, 2, 3)}
    write_days(1, {yesterday: (24, 30, 90)})  # three times its sales
    write_days(2, {yesterday: (24, 31, 31)})  # as usual
    write_days(3, {yesterday: (24, 30, 0)})  # none
    roll_up_pending(now)
    done = refresh(now)

    (up,) = IpBreakout.select().where((IpBreakout.ip_id == 1) & (IpBreakout.measure == OUTFLOW))
    assert (up.day, up.direction, up.value, up.hi95) == (yesterday, UP, 90, before[1].hi95)
    assert before[1].hi95 < 90
    (down,) = IpBreakout.select().where((IpBreakout.ip_id == 3) & (IpBreakout.measure == OUTFLOW))
    assert (down.direction, down.value) == (DOWN, 0)
    assert not IpBreakout.select().where(IpBreakout.ip_id == 2).exists()
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
    assert [(r["ip_id"], r["breakout"]) for r in rows] == [(1, True), (2, False), (3, False)]
    assert [r["score"] for r in rows] == [round(score(1, 90), 3), round(score(2, 31), 3), round(score(3, 0), 3)]
    shown = run_cli(env, "forecast", "rising", "--format", "json")
    assert json.loads(shown.stdout)["rows"] == rows
    table = run_cli(env, "forecast", "rising")
    assert table.returncode == 0 and "BREAKOUT" in table.stdout.splitlines()[1]


def test_breakouts_are_pruned_with_the_daily_rows(db, settings):
    from lib.market.retention import prune

    now = time.time()
    today = day_of(naive_utc(now))
    old, recent = today - timedelta(days=800), today - timedelta(days=1)  # RETENTION_DAILY: 730 days by default
    for day in (old, recent):
        IpBreakout.create(ip_id=1, measure=OUTFLOW, day=day, direction=UP, value=90, mean=30, lo95=20, hi95=45,
                          found_at=now)
    assert prune(settings, now, dry_run=True).breakouts == 1 and IpBreakout.select().count() == 2
    assert prune(settings, now).breakouts == 1
    assert [b.day for b in IpBreakout.select()] == [recent]
