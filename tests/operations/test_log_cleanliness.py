"""The production profile's logs hold no ERROR in normal operation: a worker process SIGKILLed (the OOM killer)
is one WARNING line, its siblings stop and the runner restarts them quietly, and a clean stop adds nothing but
INFO. (The demo's full run is checked the same way in tests/test_demo.py.)"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from lib.core.redis_client import state_redis

from ..conftest import RABBITMQ_URL, need_rabbitmq
from ..helpers import cmdline, descendants, free_port, parent_of, run_cli, threads, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.rabbitmq]

ROOT = Path(__file__).parent.parent.parent


def _consuming_workers(runner: int) -> list[int]:
    """Dramatiq's worker processes under the runner (they run consumer threads; the /metrics fork does not)."""
    return [p for p in descendants(runner)
            if b"dramatiq" in cmdline(p) and b"dramatiq" in cmdline(parent_of(p)) and threads(p) > 2]


def test_a_killed_worker_and_a_clean_stop_log_no_error_on_rabbitmq(env, settings, tmp_path):
    need_rabbitmq()
    run_env = {**env, "BROKER_URL": RABBITMQ_URL, "WORKER_PROCESSES": "2", "WORKER_THREADS": "4",
               "METRICS_PORT": str(free_port(2))}
    assert run_cli(run_env, "db", "init").returncode == 0
    log = tmp_path / "worker.log"
    runner = subprocess.Popen([sys.executable, "-m", "lib.cli", "run", "worker"], env={**os.environ, **run_env},
                              cwd=ROOT, start_new_session=True, stdout=open(log, "wb"), stderr=subprocess.STDOUT)
    r = state_redis(settings)

    def ping(note: str) -> None:
        assert run_cli(run_env, "enqueue", "ping", f'{{"note": "{note}"}}').returncode == 0

    def ponged(note: str) -> bool:
        return f"pong {note}" in log.read_text(errors="replace")

    try:
        workers = wait_for(lambda: len(w := _consuming_workers(runner.pid)) == 2 and w, timeout=60,
                           what="two worker processes")
        ping("before")
        wait_for(lambda: ponged("before"), timeout=60, what="a ping handled")
        os.kill(workers[0], signal.SIGKILL)
        # the runner restarts Dramatiq with fresh workers, which take messages again
        wait_for(lambda: (w := _consuming_workers(runner.pid)) and not set(w) & set(workers) and len(w) == 2,
                 timeout=60, what="fresh worker processes")
        ping("after")
        wait_for(lambda: ponged("after"), timeout=60, what="a ping handled after the kill")
    finally:
        os.killpg(runner.pid, signal.SIGTERM)
        assert runner.wait(timeout=90) == 0
    r.close()
    lines = log.read_text(errors="replace").splitlines()
    bad = [line for line in lines if re.search(r"\bERROR\b|\bCRITICAL\b|Traceback", line)]
    assert bad == [], "\n".join(bad[:20])
    warnings = [line for line in lines if re.search(r"\bWARNING\b", line)]
    assert len(warnings) == 1 and "exited unexpectedly (code -9)" in warnings[0], "\n".join(warnings[:20])
