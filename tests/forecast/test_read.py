"""Where the forecasts are seen (docs/concepts/forecasts.md): ``/api/v1/ips/{id}/forecast`` as JSON (against its
OpenAPI document) and CSV, and ``animetop forecast show`` as a table, JSON and CSV, all giving the stored rows; an IP
no one has is refused."""

from __future__ import annotations

import csv
import io
import json
import time
from datetime import datetime, timedelta

from lib.core.clock import FrozenClock, naive_utc
from lib.forecast.read import CSV_COLUMNS, ip_forecast
from lib.forecast.refresh import refresh
from lib.forecast.values import HORIZON, INFLOW, MEDIAN_PRICE, OUTFLOW
from lib.market.daily import roll_up_pending
from lib.market.statistics import day_of
from models import IpForecast

from ..helpers import run_cli
from ..web.conftest import call, start_dashboard
from ..web.test_api import check_against_openapi
from .test_refresh import write_days

DAYS = 21


def filled() -> tuple[float, datetime]:
    """IP 1 with ``DAYS`` tracked days up to yesterday (UTC: the command line reads on the wall clock), IP 2 with
    5; rolled up and forecast now. Returns now and IP 1's last day."""
    now = time.time()
    first = day_of(naive_utc(now)) - timedelta(days=DAYS)
    write_days(1, {first + timedelta(days=i): (24, 40 + 3 * (i % 7), 20 + (i % 5)) for i in range(DAYS)})
    write_days(2, {first + timedelta(days=i): (24, 4, 1) for i in range(DAYS - 5, DAYS)})
    roll_up_pending(now)
    refresh(now)
    return now, first + timedelta(days=DAYS - 1)


def test_the_api_answers_the_stored_forecast_as_json_and_csv(db, settings, broker):
    now, last = filled()
    server, _ = start_dashboard(settings, broker, None, FrozenClock(now))
    try:
        doc = call(f"{server.url}/api/v1/openapi.json").json()
        reply = call(f"{server.url}/api/v1/ips/1/forecast")
        assert reply.status == 200
        check_against_openapi(doc, "/api/v1/ips/{ip_id}/forecast", "get", reply)
        answer = reply.json()
        assert answer == json.loads(json.dumps(ip_forecast(1, now)))
        shown = {f["measure"]: f for f in answer["forecasts"]}
        stored = {m: [(f"{r.day:%Y-%m-%d}", round(r.mean, 3), round(r.hi95, 3))
                      for r in IpForecast.select().where((IpForecast.ip_id == 1) & (IpForecast.measure == m))
                                                  .order_by(IpForecast.day)] for m in (INFLOW, OUTFLOW)}
        for m in (INFLOW, OUTFLOW):
            assert [(d["day"], d["mean"], d["interval_95"][1]) for d in shown[m]["days"]] == stored[m]
            assert len(stored[m]) == HORIZON and shown[m]["origin"] == f"{last:%Y-%m-%d}"
        assert shown[MEDIAN_PRICE]["days"] == [] and shown[MEDIAN_PRICE]["why"].endswith("has 0")

        young = call(f"{server.url}/api/v1/ips/2/forecast")
        check_against_openapi(doc, "/api/v1/ips/{ip_id}/forecast", "get", young)
        assert all(not f["days"] and f["why"] for f in young.json()["forecasts"])

        rows = list(csv.DictReader(io.StringIO(call(f"{server.url}/api/v1/ips/1/forecast?format=csv").body.decode())))
        assert tuple(rows[0]) == CSV_COLUMNS and len(rows) == 2 * HORIZON
        assert [(r["measure"], r["day"], float(r["mean"])) for r in rows] == \
            [(f["measure"], d["day"], d["mean"]) for f in answer["forecasts"] for d in f["days"]]

        missing = call(f"{server.url}/api/v1/ips/999999/forecast")
        assert missing.status == 404
        check_against_openapi(doc, "/api/v1/ips/{ip_id}/forecast", "get", missing)
    finally:
        server.stop()


def test_the_command_shows_the_stored_forecast(db, env):
    now, _ = filled()
    table = run_cli(env, "forecast", "show", "1")
    assert table.returncode == 0, table.stderr
    answer = ip_forecast(1, now)
    outflow = next(f for f in answer["forecasts"] if f["measure"] == OUTFLOW)
    first = outflow["days"][0]
    assert f"{first['day']}  {first['mean']:>10.1f}" in table.stdout
    assert "median price: no forecast (needs 7 days with at least 3 priced sales; has 0)" in table.stdout
    as_json = run_cli(env, "forecast", "show", "1", "--format", "json")
    assert json.loads(as_json.stdout) == json.loads(json.dumps(answer))
    as_csv = list(csv.DictReader(io.StringIO(run_cli(env, "forecast", "show", "1", "--format", "csv").stdout)))
    assert len(as_csv) == 2 * HORIZON and as_csv[0]["day"] == first["day"]
    for bad in ("999999", "0", "x"):
        refused = run_cli(env, "forecast", "show", bad)
        assert refused.returncode == 1 and refused.stderr.startswith("animetop forecast show: "), refused.stderr


def test_the_command_backtests_the_stored_history(db, env):
    """Six weeks of IP 1 give two weekly cuts with 28 days before them (the third would have 21); IP 2's five days
    give none. The scores are the library's on the same history (their definitions: test_backtest.py)."""
    now = time.time()
    first = day_of(naive_utc(now)) - timedelta(days=42)
    write_days(1, {first + timedelta(days=i): (24, 30 + 11 * (i % 7 == 5) + i % 3, 12 + 7 * (i % 7 == 6) + i % 4)
                   for i in range(42)})
    write_days(2, {first + timedelta(days=37 + i): (24, 4, 1) for i in range(5)})
    roll_up_pending(now)
    got = run_cli(env, "forecast", "backtest", "--format", "json")
    assert got.returncode == 0, got.stderr
    answer = json.loads(got.stdout)
    from lib.forecast.backtest import backtest
    from lib.forecast.series import histories

    for measure in (OUTFLOW, INFLOW):
        values = histories([1], day_of(naive_utc(now)))[1][measure].values
        assert len(values) == 42
        summary, scored = backtest({1: values}, [35, 28, 21, 14])
        assert [s.origin for s in scored] == [35, 28]
        assert answer[measure]["ips"] == 1 and answer[measure]["cuts"] == 2
        assert answer[measure]["mase"] == summary.mase and answer[measure]["coverage95"] == summary.coverage95
        assert summary.smooth_coverage80 is not None
        assert answer[measure]["smooth_coverage80"] == summary.smooth_coverage80
    table = run_cli(env, "forecast", "backtest")
    assert table.returncode == 0 and "outflow" in table.stdout and "ratio" in table.stdout
    assert "80 % smoothed" in table.stdout and f"{100 * summary.smooth_coverage95:.1f}%" in table.stdout
    assert run_cli(env, "forecast", "backtest", "--format", "csv").returncode == 2
