"""The Procfile's process runner: graceful stop under repeated signals, restart after a kill,
and a killed worker's message back within seconds (Redis broker heartbeat settings)."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lib.core.redis_client import state_redis

from .helpers import wait_for

ROOT = Path(__file__).parent.parent


@pytest.fixture
def worker_process(env, settings):
    procs = []

    def start() -> subprocess.Popen:
        full_env = {**os.environ, **env, "WORKER_PROCESSES": "1", "WORKER_THREADS": "2",
                    "WORKER_SHUTDOWN_TIMEOUT": "30s"}
        proc = subprocess.Popen(
            [sys.executable, "-m", "lib.cli", "run", "worker", "--actors", "tests.workers.app"],
            env=full_env, cwd=ROOT, start_new_session=True,  # its own group, as honcho does
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(proc)
        return proc

    yield start
    for proc in procs:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def send_slow(seconds: float, tag: str) -> None:
    code = f"from tests.workers.app import slow; slow.send({seconds}, {tag!r})"
    subprocess.run([sys.executable, "-c", code], env={**os.environ, **_env_of_test}, cwd=ROOT, check=True,
                   timeout=60)


_env_of_test: dict = {}


@pytest.fixture(autouse=True)
def _remember_env(env):
    _env_of_test.clear()
    _env_of_test.update(env)


def test_repeated_sigterm_to_the_group_finishes_in_flight_work(worker_process, settings):
    r = state_redis(settings)
    proc = worker_process()
    send_slow(3, "graceful")
    wait_for(lambda: r.lrange("started", 0, -1), timeout=60, what="the slow message to start")
    # What honcho does on Ctrl-C, and a terminal too: signal the whole group, more than once.
    os.killpg(proc.pid, signal.SIGTERM)
    time.sleep(0.2)  # a second signal a moment later, as a person pressing Ctrl-C again (not a wait)
    os.killpg(proc.pid, signal.SIGTERM)
    os.killpg(proc.pid, signal.SIGINT)
    assert proc.wait(timeout=60) == 0
    assert r.lrange("finished", 0, -1) == [b"graceful"]
