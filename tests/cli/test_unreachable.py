"""Every command facing a database, broker or Redis it cannot reach, or a database without its tables, says so
in one line (credentials redacted) and exits non-zero; output piped into ``head`` ends quietly."""

from __future__ import annotations

import datetime
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lib.cli.errors import EXIT_UNAVAILABLE

from ..helpers import free_port, run_cli

ROOT = Path(__file__).parent.parent.parent
SECRET = "s3cret-Pa55"

DATABASE_COMMANDS = [("status",), ("leaderboard",), ("ip", "list"), ("ip", "add", "鬼滅の刃"), ("ip", "show", "1"),
                     ("alerts", "list"), ("pool", "status"), ("collect", "list"), ("db", "init")]
BROKER_COMMANDS = [("status",), ("deadletters", "list"), ("enqueue", "ping", "{}")]


def _closed_port() -> int:
    return free_port()  # nothing listens there


def assert_one_line(result: subprocess.CompletedProcess, *expected: str) -> None:
    lines = result.stderr.strip().splitlines()
    assert result.returncode == EXIT_UNAVAILABLE, (result.returncode, result.stderr)
    assert len(lines) == 1, result.stderr
    for text in expected:
        assert text in lines[0], lines[0]
    assert SECRET not in result.stderr + result.stdout
    assert "Traceback" not in result.stdout


@pytest.fixture
def ready(env, settings):
    """The app's environment with its tables created."""
    assert run_cli(env, "db", "init").returncode == 0
    return env


@pytest.mark.parametrize("command", DATABASE_COMMANDS, ids=" ".join)
def test_database_unreachable(env, command):
    url = f"mysql://animetop:{SECRET}@127.0.0.1:{_closed_port()}/animetop"
    result = run_cli({**env, "DATABASE_URL": url}, *command)
    assert_one_line(result, "cannot reach the database mysql://animetop:***@127.0.0.1:", "Connection refused")


@pytest.mark.parametrize("command", [c for c in DATABASE_COMMANDS if c != ("db", "init")], ids=" ".join)
def test_database_without_its_tables(env, command):
    result = run_cli(env, *command)
    assert_one_line(result, "has no table", "run `animetop db init`")


@pytest.mark.parametrize("scheme", ["redis", "amqp"])
@pytest.mark.parametrize("command", BROKER_COMMANDS, ids=" ".join)
def test_broker_unreachable(ready, command, scheme):
    url = f"{scheme}://animetop:{SECRET}@127.0.0.1:{_closed_port()}/0"
    result = run_cli({**ready, "BROKER_URL": url}, *command)
    assert_one_line(result, f"cannot reach the broker {scheme}://animetop:***@127.0.0.1:", "refused")


@pytest.mark.parametrize("command", [("status",), ("ip", "add", "鬼滅の刃")], ids=" ".join)
def test_state_redis_unreachable(ready, command):
    url = f"redis://:{SECRET}@127.0.0.1:{_closed_port()}/1"
    result = run_cli({**ready, "REDIS_URL": url}, *command)
    assert_one_line(result, "cannot reach Redis redis://:***@127.0.0.1:", "refused")


def test_the_leaderboard_degrades_without_redis_and_says_so(ready):
    url = f"redis://:{SECRET}@127.0.0.1:{_closed_port()}/1"
    result = run_cli({**ready, "REDIS_URL": url}, "leaderboard")
    assert result.returncode == 0, result.stderr
    assert "reading the database" in result.stderr and SECRET not in result.stderr


def test_output_piped_into_head_ends_quietly(ready, settings):
    from lib.core.db import bind_database, database
    from models import IpMetadata

    bind_database(settings.database_url_resolved)
    now = datetime.datetime(2026, 1, 1)
    IpMetadata.insert_many([{"keyword": f"IP {i}", "display_name": f"IP {i}", "created_at": now,
                             "updated_at": now} for i in range(3000)]).execute()
    database.close()
    # what `animetop ip list --format json | head -1` does: read one line, then go away
    proc = subprocess.Popen([sys.executable, "-m", "lib.cli", "ip", "list", "--format", "json"],
                            env={**os.environ, **ready}, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline()
    proc.stdout.close()
    assert proc.stderr.read().decode() == ""
    assert proc.wait(timeout=60) != 0
