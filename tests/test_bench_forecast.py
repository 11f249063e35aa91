"""``python -m bench forecast``: its options, the breakout scores against bursts placed by hand, and a tiny run."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.forecast import (
    DAY,
    MARGINS,
    T0,
    Options,
    board_backtest,
    breakout_scores,
    day_checks,
    flagged_days,
    options,
    tails,
)
from lib.forecast.backtest import cuts, forecasts
from lib.forecast.values import OUTFLOW
from lib.standins.simulator.model import MarketModel
from lib.standins.simulator.stories import Burst

ROOT = Path(__file__).resolve().parent.parent


def test_options_and_their_bounds():
    assert options([]) == Options()
    assert options(["--ips", "3", "--days", "42", "--cuts", "2", "--max-size", "50", "--seed", "4"]) == Options(
        3, 42, 2, 50.0, 4)
    for wrong in (["--days", "40", "--cuts", "2"], ["--ips", "0"], ["--what", "1"], ["--ips"]):
        with pytest.raises(SystemExit):
            options(wrong)


def test_a_tripled_day_is_found_and_counted_as_in_its_burst():
    """Two IPs selling 40 a day: one triples on day 40 (a burst placed there), the other's day 45 triples without
    one. Recall: the burst found; precision: of the two days flagged, one in a burst; b's day 45 the one ordinary
    day above its interval."""
    flat = [40.0 + (d * 7) % 5 for d in range(50)]
    series = {"a": list(flat), "b": list(flat)}
    series["a"][40] = 120.0
    series["b"][45] = 120.0
    model = MarketModel(seed=1, bursts={"a": (Burst("announcement", T0 + 40 * DAY + 3600, T0 + 41 * DAY, 3.0),),
                                        "b": ()})
    checked = day_checks(series, OUTFLOW, 50, 14)
    got = breakout_scores(model, series, flagged_days(series, OUTFLOW, 50, 14, checked), 50, 14, None)
    assert (got.bursts, got.found, got.flagged, got.in_burst) == (1, 1, 2, 1)
    # the ordinary days: 14 of each IP's but a's burst, days 40 to 42 (it ends as day 41 begins, and the day after its
    # end counts with it); above its interval, b's day 45
    ordinary = tails(model, series, checked, 50, 14, None)
    assert (ordinary.days, ordinary.above) == (25, 1)


def test_the_boards_goods_type_adds_up_the_ips_forecasts_of_it_and_scores_the_sum():
    """Three IPs' sales of plush over 35 days: two with a weekly cycle, one too thin to forecast (a sale a week). The
    board's cut of plush is the two forecast IPs' point forecasts added up, scored against their true sales added up
    on the scale of their history added up (MASE: the mean absolute error over the in-sample weekly naive's)."""
    cycle = [4.0, 3, 3, 4, 6, 9, 8]
    a = [c + (d % 3) for d, c in enumerate(cycle * 5)]
    b = [2 * c + (d % 2) for d, c in enumerate(cycle * 5)]
    thin = [1.0 if d % 7 == 0 else 0.0 for d in range(35)]
    per_ip, board = board_backtest({("a", "plush"): a, ("b", "plush"): b, ("c", "plush"): thin}, [28])
    assert sorted(s.key for s in per_ip) == [("a", "plush"), ("b", "plush")]
    selected = cuts({("a", "plush"): a, ("b", "plush"): b}, [28], 28)
    made = forecasts(selected, OUTFLOW, "goods")
    mean = [made[0][h].mean + made[1][h].mean for h in range(7)]
    actual = [a[28 + h] + b[28 + h] for h in range(7)]
    history = [a[t] + b[t] for t in range(28)]
    scale = sum(abs(history[t] - history[t - 7]) for t in range(7, 28)) / 21
    (plush,) = board
    assert plush.key == "plush" and plush.origin == 28
    assert plush.mase == pytest.approx(sum(abs(x - m) for x, m in zip(actual, mean, strict=True)) / 7 / scale)
    assert plush.naive_mase == pytest.approx(sum(abs(x - history[21 + h]) for h, x in enumerate(actual)) / 7 / scale)


@pytest.mark.slow  # draws a month of four IPs and fits a few hundred series
@pytest.mark.timeout(600)
def test_bench_forecast_prints_its_tables():
    done = subprocess.run([sys.executable, "-m", "bench", "forecast", "--ips", "4", "--days", "42", "--cuts", "2",
                           "--max-size", "20"], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = [line for line in done.stdout.splitlines() if line.startswith("|")]
    assert lines[2].startswith("| IPs' sales | 8 |") and any(line.startswith("| sales, all IPs |") for line in lines)
    assert any(line.startswith("| each IP's goods types' sales |") for line in lines)
    assert any(line.startswith("| goods types' sales, IPs' forecasts added up |") and line.endswith("| | | |")
               for line in lines)
    assert any(line.startswith("| each IP's goods types' sales, of 10+ a day (") for line in lines)
    # recall and precision at each margin, sales, new listings, either flow and the goods types
    margins = [line for line in lines if line.split("|")[1].strip() in {f"{m:g}" for m in MARGINS}]
    assert [line.split("|")[1].strip() for line in margins] == [f"{m:g}" for m in MARGINS]
    assert all(len(line.split("|")) == 7 for line in margins)


@pytest.mark.slow  # a benchmark run (tests/forecast/test_refresh.py holds the refresh itself in the fast tier)
def test_bench_forecast_refresh_refits_what_changed_only():
    done = subprocess.run([sys.executable, "-m", "bench", "forecast_refresh", "--ips", "10", "--goods", "3"], cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    closes, floor, late = [line for line in done.stdout.splitlines() if line.startswith("  a") or
                           line.startswith("  e")]
    refit = int(closes.split("marked, ")[1].split(" series")[0])
    assert "10 IPs marked" in closes and refit >= 20 and ", 0 unchanged" in closes
    assert f"0 series refit, {refit} unchanged" in floor
    assert late.split(": ")[1].startswith("1 IPs marked, 1 series refit")
    assert done.stdout.count("rows not finite: 0)") == 1
    segments = int(done.stdout.split("segment series fitted: ")[1].split(" of 90")[0])
    assert 20 <= segments <= 90 and refit >= 20 + segments
