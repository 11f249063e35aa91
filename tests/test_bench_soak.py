"""``python -m bench soak``: on a tiny setting it runs to its end in both modes and prints a slope per process type.
Memory slopes are printed, never asserted (they are a benchmark's, measured on a long run)."""

import os
import re
import subprocess
import sys
from pathlib import Path

from bench.memory import Sample, growth, slope

from .conftest import BROKER_DB, STATE_DB
from .helpers import empty_redis_databases

ROOT = Path(__file__).resolve().parent.parent
ROW = r"\s+[\d.]+ MB\s+[\d.]+ MB\s+-?[\d.]+\s+(-?[\d.]+)?\s+\d+$"


def bench_env(redis_server: str) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "BENCH_REDIS_URL": redis_server,
           "BENCH_REDIS_DBS": f"{STATE_DB},{BROKER_DB}"}
    for variable in ("BROKER_URL", "REDIS_URL", "DATABASE_URL"):
        env.pop(variable, None)
    return env


def test_soak_runs_the_process_types_to_its_end_and_prints_each_ones_slope(redis_server):
    empty_redis_databases(redis_server)
    done = subprocess.run([sys.executable, "-m", "bench", "soak", "--ips", "2", "--hours", "1", "--speed", "600",
                           "--warmup", "0.25", "--every", "5"],
                          cwd=ROOT, env=bench_env(redis_server), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert re.search(r"results applied; dead letters: 0; ERROR lines: 0$", out, re.M), out
    for kind in ("scheduler", "crawler", "worker", "chromium"):
        assert re.search(rf"^  {kind}{ROW}", out, re.M), out


def test_soak_in_process_applies_every_result_and_prints_the_worker_slope(redis_server):
    """With two child processes making the crawls: every result is still applied."""
    empty_redis_databases(redis_server)
    done = subprocess.run([sys.executable, "-m", "bench", "soak", "--in-process", "--ips", "3", "--hours", "2",
                           "--pages", "1", "--crawlers", "2"],
                          cwd=ROOT, env=bench_env(redis_server), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"^    \+  2 h: +\d+ results applied; PSS \d+ MB; glibc heaps (\d+|\?) MB \((\d+|\?) in use\), "
                     r"mapped (\d+|\?) MB; SQLite (\d+|\?) MB \(peak (\d+|\?)\); \d+k Python blocks$",
                     done.stdout, re.M), done.stdout
    assert "\n  6 results applied\n" in done.stdout, done.stdout
    assert re.search(rf"^  worker{ROW}", done.stdout, re.M), done.stdout


def test_soak_refuses_what_it_does_not_take():
    done = subprocess.run([sys.executable, "-m", "bench", "soak", "--hours", "many"], cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "usage: python -m bench soak" in done.stderr


def test_the_fit_leaves_the_warm_up_out_and_gives_mb_per_day_and_kb_per_thousand_results():
    assert slope([0, 1, 2], [1, 3, 5]) == 2
    assert slope([1, 1], [1, 5]) == 0  # no spread: no slope
    # a fast start (caches filling) then 1 MB per simulated hour, 1 MB per 100 results
    samples = [Sample(0, 0, 50), Sample(1, 10, 90)] + [Sample(h, 100 * h, 100 + h) for h in range(2, 10)]
    fit = growth("worker", samples, warmup_hours=2)
    assert (fit.start_mb, fit.end_mb, fit.samples) == (102, 109, 8)
    assert abs(fit.mb_per_day - 24) < 1e-9
    assert abs(fit.kb_per_1000_results - 1024 * 10) < 1e-6
    assert growth("worker", [Sample(h, 5, 100) for h in range(3)], 0).kb_per_1000_results is None
