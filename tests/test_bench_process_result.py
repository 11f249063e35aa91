"""``python -m bench process_result`` on SQLite and, with ``--db mysql://…``, on MariaDB: it runs to its end and
prints each time against its floor. Speeds are printed, never asserted."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import BROKER_DB, STATE_DB, _with_db
from .helpers import empty_redis_databases

ROOT = Path(__file__).resolve().parent.parent
RATIO = r"\s+[\d.]+ s\s+floor\s+[\d.]+\s+ratio\s+[\d.]+x$"


def test_process_result_bench_times_a_result_against_its_floor_on_both_databases(database_url, redis_server):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "BENCH_REDIS_URL": redis_server,
           "BENCH_REDIS_DBS": f"{STATE_DB},{BROKER_DB}"}
    for variable in ("BROKER_URL", "REDIS_URL", "DATABASE_URL"):
        env.pop(variable, None)
    empty_redis_databases(redis_server)  # the worker's own: a bench refuses databases holding others' keys
    mysql = database_url.startswith("mysql")
    done = subprocess.run([sys.executable, "-m", "bench", "process_result", *(["--db", database_url] if mysql else [])],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert f"1,000-item results on {'mysql' if mysql else 'sqlite'}" in out, out
    assert re.search(rf"^  process_result end to end \(s\){RATIO}", out, re.M), out
    assert re.search(rf"^    against a floor with its Redis scripts \(s\){RATIO}", out, re.M), out
    assert re.search(rf"^  a quiet market: one price in 20 moves \(s\){RATIO}", out, re.M), out
    assert re.search(rf"^  naive, one round trip per item \(s\){RATIO}", out, re.M), out


def test_process_result_bench_refuses_what_it_does_not_take():
    done = subprocess.run([sys.executable, "-m", "bench", "process_result", "--db", "/tmp/x.sqlite3"], cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "usage: python -m bench process_result [--db mysql://" in done.stderr


def test_a_bench_refuses_a_redis_database_that_holds_keys_it_did_not_leave(redis_server):
    """BENCH_REDIS_DBS is a number anyone may get wrong: a database holding keys no benchmark left stops the run,
    naming the setting, and keeps its keys; an empty one is flushed and marked, and a database a benchmark left
    may be flushed again whatever it holds."""
    import redis

    from bench.common import BENCH_OWNED, claim_redis_database

    empty_redis_databases(redis_server)
    url = _with_db(redis_server, STATE_DB)
    client = redis.Redis.from_url(url)
    client.set("someone:else", "theirs")
    refusal = r"BENCH_REDIS_DBS: the Redis database \S+ holds 1 key\(s\) that no benchmark left"
    with pytest.raises(SystemExit, match=refusal):
        claim_redis_database(url)
    assert client.get("someone:else") == b"theirs"
    client.delete("someone:else")
    claim_redis_database(url)
    assert client.keys("*") == [BENCH_OWNED.encode()]
    client.set("left:by:the:bench", "1")
    claim_redis_database(url)
    assert client.keys("*") == [BENCH_OWNED.encode()]

    client.set("someone:else", "theirs")
    client.delete(BENCH_OWNED)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "BENCH_REDIS_URL": redis_server,
           "BENCH_REDIS_DBS": f"{STATE_DB},{BROKER_DB}"}
    done = subprocess.run([sys.executable, "-m", "bench", "process_result"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode != 0 and "BENCH_REDIS_DBS: the Redis database" in done.stderr, done.stderr
    assert client.get("someone:else") == b"theirs"


def test_a_second_bench_on_the_same_redis_databases_stops_while_the_first_runs(redis_server, tmp_path, monkeypatch):
    """Two benchmarks on one pair of Redis databases would flush and write each other's keys mid-run: while one
    runs, another started on the same pair stops at once, saying so, and the running one's keys stay; once it ends,
    the pair is free again."""
    import redis

    from bench.common import bench_settings, hold_redis_databases

    empty_redis_databases(redis_server)
    monkeypatch.setenv("BENCH_REDIS_URL", redis_server)
    monkeypatch.setenv("BENCH_REDIS_DBS", f"{STATE_DB},{BROKER_DB}")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    state, broker = _with_db(redis_server, STATE_DB), _with_db(redis_server, BROKER_DB)
    with bench_settings(tmp_path) as settings:
        assert settings.redis_url == state
        client = redis.Redis.from_url(state)
        client.set("animetop:running:bench", "1")
        done = subprocess.run([sys.executable, "-m", "bench", "process_result"], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode != 0
        assert f"another benchmark is running on the Redis databases {state} and {broker}" in done.stderr
        assert client.get("animetop:running:bench") == b"1"
    hold_redis_databases(state, broker).close()  # free again
