"""``python -m bench schedule_tick`` end to end on a small fleet: the tick and the budget's planning each against its
floor, on the costs as the worker stores them (a cost's stored form once grew a field the floor did not read). Run
in its own process, as the benchmark binds the app's settings and database for itself."""

import os
import subprocess
import sys
from pathlib import Path

from .conftest import BROKER_DB, STATE_DB
from .helpers import empty_redis_databases

ROOT = Path(__file__).resolve().parent.parent


def test_a_small_run_reports_the_tick_and_the_planning(redis_server):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "BENCH_REDIS_URL": redis_server,
           "BENCH_REDIS_DBS": f"{STATE_DB},{BROKER_DB}"}
    for variable in ("BROKER_URL", "REDIS_URL", "DATABASE_URL"):
        env.pop(variable, None)
    empty_redis_databases(redis_server)
    done = subprocess.run([sys.executable, "-c", "from bench.schedule_tick import run; "
                                                 "run(scheduled=2000, due=100, repeat=1)"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "schedule_tick: 2,000 IPs scheduled, 100 due" in done.stdout
    assert "  tick (seconds)" in done.stdout and "  planning within the budget (seconds)" in done.stdout, done.stdout
