"""With no Redis configured the app runs its own redis-server; the CLIs work on it."""

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from .helpers import run_cli, wait_for

ROOT = Path(__file__).parent.parent


@pytest.fixture
def bare_env():
    data = Path(tempfile.mkdtemp(prefix="at-", dir="/tmp"))  # short: unix socket paths are limited
    yield {"DATA_DIR": str(data)}
    run_cli({"DATA_DIR": str(data)}, "redis", "stop")
    shutil.rmtree(data, ignore_errors=True)


def test_no_configuration_starts_a_private_persistent_redis(bare_env):
    data = Path(bare_env["DATA_DIR"])
    result = run_cli(bare_env, "enqueue", "ping", '{"note": "hi"}')
    assert result.returncode == 0, result.stderr
    assert (data / "redis.sock").exists()
    assert (data / "appendonlydir").is_dir()  # AOF persistence
    assert "running" in run_cli(bare_env, "redis", "status").stdout
    # a second process reuses it rather than starting another
    assert run_cli(bare_env, "enqueue", "ping").returncode == 0
    assert subprocess.run(["pgrep", "-fc", f"{data}/redis.sock"], capture_output=True, text=True).stdout.strip() == "1"
    assert run_cli(bare_env, "db", "init").returncode == 0
    assert (data / "animetop.sqlite3").exists()


def test_enqueue_refuses_what_cannot_run(bare_env):
    assert "no actor 'nope'" in run_cli(bare_env, "enqueue", "nope").stderr
    assert "not JSON" in run_cli(bare_env, "enqueue", "ping", "{bad").stderr
    assert "unexpected keyword argument 'x'" in run_cli(bare_env, "enqueue", "ping", '{"x": 1}').stderr


def test_periodiq_cli_finds_the_periodic_actors(bare_env):
    import os
    import threading

    proc = subprocess.Popen([str(Path(sys.executable).parent / "periodiq"), "actors", "-v"],
                            env={**os.environ, **bare_env}, cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    output: list[str] = []
    threading.Thread(target=lambda: output.extend(proc.stdout), daemon=True).start()
    try:
        wait_for(lambda: any("schedule_tick" in line for line in output), timeout=60,
                 what="periodiq to list schedule_tick")
    finally:
        proc.terminate()
        proc.wait(timeout=20)
