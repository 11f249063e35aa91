"""``python -m bench accuracy`` at a tiny size (two IPs, one day): its table's structure, and the bench's own
comparisons (``bench.accuracy.table``) against a computation written here: a measure equal to its truth reads as
such, one off by a known amount reads that amount."""

import csv
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from bench.accuracy import CLASSES, HEADER, DayRow, Served, table, write_rows

from .conftest import BROKER_DB, STATE_DB
from .helpers import empty_redis_databases

ROOT = Path(__file__).resolve().parent.parent


def day(keyword="ip0-40", size=40.0, day=0, **changes) -> DayRow:
    """An IP-day whose every measure equals its truth, but for ``changes``."""
    fields = dict(keyword=keyword, size=size, day=day, inflow=100.0, true_inflow=100, outflow=50.0, true_outflow=50,
                  price=800.0, true_price=800.0, sell_through=0.25, true_sell_through=0.25, time_to_sell=12.0,
                  true_time_to_sell=12.0, heat=55.0, true_heat=55.0, padded_counted=0, relists_created=4,
                  relists_counted=0)
    return DayRow(**(fields | changes))


def cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip("|").split("|")]


def test_measures_equal_to_their_truth_read_as_equal():
    lines = table([day(day=0), day(day=1)], {"ip0-40": Served(requests=480)})
    assert lines[0] == HEADER
    row = cells(lines[2])
    assert row[0] == "middling (10-100/h): 40" and row[1] == "2" and row[2] == "480"
    assert row[3] == "1.00× (100%)" and row[4] == "counted"
    assert row[5] == "1.00× (100%)" and row[6] == "counted"
    assert row[7:11] == ["+0.0 % (–)", "+0.0 pt", "+0.0 %", "+0.0"]
    assert row[11:] == ["0", "0 of 8", "0 of 0"]


def test_measures_off_their_truth_read_the_difference_computed_here():
    rows = [day(inflow=103.0, outflow=40.0, price=720.0, sell_through=0.30, time_to_sell=15.0, heat=50.0,
                padded_counted=7, relists_counted=3, inflow_held=True, outflow_held=False, links=5, links_right=4,
                price_held=False),
            day(day=1, inflow=97.5, outflow=52.0, price=800.0, sell_through=0.25, time_to_sell=12.0, heat=55.0,
                relists_counted=4, inflow_held=True, outflow_held=True, links=2, links_right=2, price_held=True)]
    row = cells(table(rows, {"ip0-40": Served(requests=10)})[2])
    inflow_ratio = (103.0 + 97.5) / 200
    outflow_ratio = (40.0 + 52.0) / 100
    within_inflow = sum(abs(m - 100) <= 3 for m in (103.0, 97.5)) / 2  # ±3 %
    within_outflow = sum(abs(m - 50) <= 2.5 for m in (40.0, 52.0)) / 2  # ±5 %
    assert row[3] == f"{inflow_ratio:.2f}× ({within_inflow:.0%})" and row[4] == "2 of 2"
    assert row[5] == f"{outflow_ratio:.2f}× ({within_outflow:.0%})" and row[6] == "1 of 2"
    price = ((720 - 800) / 800 * 100 + 0.0) / 2  # the median of two IP-days' errors: their mean
    assert row[7] == f"{price:+.1f} % (1 of 2)"
    assert row[8] == f"{(5.0 + 0.0) / 2:+.1f} pt"
    assert row[9] == f"{(25.0 + 0.0) / 2:+.1f} %"
    assert row[10] == f"{(-5.0 + 0.0) / 2:+.1f}"
    assert row[11:] == ["7", "7 of 8", "6 of 7"]


def test_ips_fall_in_their_size_class():
    rows = [day(keyword=f"ip{k}", size=size) for k, size in enumerate((0.3, 5.0, 40.0, 250.0, 1200.0))]
    lines = table(rows, {f"ip{k}": Served() for k in range(5)})
    assert [cells(line)[0].split(":")[0] for line in lines[2:]] == [name for _, name in CLASSES]


def test_rows_are_written_one_per_ip_day_with_an_interval_as_its_two_ends(tmp_path):
    rows = [day(), day(day=1, outflow=61.5, outflow_interval=(52.0, 71.0), outflow_held=True)]
    write_rows(rows, tmp_path / "rows.csv")
    with (tmp_path / "rows.csv").open() as f:
        read = list(csv.DictReader(f))
    assert [(r["day"], r["outflow"], r["outflow_interval_low"], r["outflow_interval_high"], r["outflow_held"])
            for r in read] == [("0", "50.0", "", "", ""), ("1", "61.5", "52.0", "71.0", "True")]


@pytest.mark.slow  # a day of two IPs' hourly crawls through the worker's processing
@pytest.mark.timeout(900)
def test_bench_accuracy_prints_its_table(redis_server, tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "BENCH_REDIS_URL": redis_server,
           "BENCH_REDIS_DBS": f"{STATE_DB},{BROKER_DB}"}
    for variable in ("BROKER_URL", "REDIS_URL", "DATABASE_URL"):
        env.pop(variable, None)
    empty_redis_databases(redis_server)
    done = subprocess.run([sys.executable, "-m", "bench", "accuracy", "--days", "1", "--warmup", "0", "--sizes",
                           "0.3,12", "--rows", str(tmp_path / "rows.csv")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = [line for line in done.stdout.splitlines() if line.startswith("|")]
    assert lines[0] == HEADER and len(lines) == 4, done.stdout
    assert [cells(line)[0] for line in lines[2:]] == ["niche (<1/h): 0.3", "middling (10-100/h): 12"]
    for line in lines[2:]:
        row = cells(line)
        assert row[1] == "1" and int(row[2].replace(",", "")) >= 25  # 25 crawls, at least one page each
        assert re.fullmatch(r"[\d.]+× \(\d+%\)", row[3]) and re.fullmatch(r"[\d.]+× \(\d+%\)", row[5]), line
    with (tmp_path / "rows.csv").open() as f:
        assert sorted(int(float(r["size"]) * 10) for r in csv.DictReader(f)) == [3, 120]
