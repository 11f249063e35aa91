"""The load benchmark at a tiny scale: it runs to the end, prints its tables with every IP crawled and a cost per
IP that is there and plausible, and leaves no process behind; on the production profile it also leaves the
services as empty as it found them. Speeds are printed, never asserted."""

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import pytest
import redis

from lib.core.embedded_redis import EmbeddedRedis
from lib.core.redis_urls import with_redis_db

from .conftest import MYSQL_URL, RABBITMQ_URL, need, need_rabbitmq
from .helpers import cmdline, processes_matching, recreate_mysql_database, wait_for
from .test_production_profile import purge_queues

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def short_tmp():
    """A temporary directory with a short path: the embedded Redis's unix socket goes under it, and a socket's path
    must stay under 108 bytes, which pytest's own temporary paths (popen-gwN/test_…/) can outgrow."""
    path = Path(tempfile.mkdtemp(prefix="atl-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def cost_per_ip(out: str) -> dict[int, dict[str, float]]:
    """The per-IP table: IPs → CPU s/crawl, crawler, worker, Redis KB, keys KB, items KB, DB KB, DB rows/crawl,
    pipeline p50."""
    section = out.split("cost per IP:")[1].split("Redis state keys by kind")[0]
    names = ("cpu", "crawler", "worker", "redis_kb", "keys_kb", "items_kb", "db_kb", "rows_per_crawl", "p50")
    rows = re.findall(r"^\s+(\d+)" + r"\s+([\d.]+)" * 9 + r" /\s*[\d.]+$", section, re.M)
    return {int(r[0]): dict(zip(names, map(float, r[1:]), strict=True)) for r in rows}


def check_cost_per_ip(out: str, scales: list[int]) -> None:
    table = cost_per_ip(out)
    assert sorted(table) == scales, out
    for ips, row in table.items():
        assert row["cpu"] > 0 and row["crawler"] > 0 and row["worker"] > 0, (ips, out)
        assert row["cpu"] >= row["crawler"] + row["worker"] - 0.002, (ips, out)  # the sum of the types (rounding)
        # one IP's item states: 240 listings on 1+1 pages, each a key of at least ~50 bytes
        assert 240 * 0.05 <= row["items_kb"] <= row["keys_kb"], (ips, out)
        # a crawl writes a ledger row, two search totals and a sighting and snapshot per listing
        assert row["rows_per_crawl"] >= 3 and row["db_kb"] > 240 * 0.05, (ips, out)
    keys = out.split("Redis state keys by kind")[1].split("database tables")[0]
    assert re.search(r"^\s+item states\s+2[34]\d\.\d\d x \d+ B", keys, re.M), out  # ~240 states per IP
    tables = out.split("database tables:")[1]
    assert re.search(r"^\s+listing_sightings\s+2[34]\d\.\d / [\d.]+ / \d+", tables, re.M), out  # per crawl


def test_load_benchmark_tiny_scale(short_tmp, chromium):
    tmp_path = short_tmp
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp_path)}  # its DATA_DIRs go under tmp_path
    for name in ("BROKER_URL", "REDIS_URL", "DATABASE_URL"):
        env.pop(name, None)
    result = subprocess.run([sys.executable, "-m", "bench", "load", "--ips", "3,5", "--cycles", "1"],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=150)
    out = result.stdout
    assert result.returncode == 0, out + result.stderr
    rows = re.findall(r"^\s+(\d+)\s+(\d+)\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+.*\s(\d+)/(\d+)$", out, re.M)
    assert [(r[0], r[2], r[3]) for r in rows] == [("3", "3", "3"), ("5", "5", "5")], out  # every IP crawled
    assert all(int(r[1]) >= int(r[0]) for r in rows), out  # at least one crawl per IP in the window
    for section in ("queue depth", "peak memory per process type", "CPU seconds per crawl"):
        assert section in out, out
    check_cost_per_ip(out, [3, 5])
    assert re.search(r"seconds per crawl, 5 IPs \(floor: 3 IPs\).*ratio", out), out
    assert re.search(r"seconds per crawl, 3 IPs \(floor: bare fetch of its pages\).*ratio", out), out
    assert re.search(r"database bytes per IP, 5 IPs \(floor: 3 IPs\).*ratio", out), out
    assert "!" not in out.split("CPU seconds per crawl")[1], out  # no incomplete scale, no dead letters
    assert processes_matching(str(tmp_path).encode()) == []  # its redis-servers and Chromiums are gone
    assert list(tmp_path.glob("animetop-load-*")) == []  # and its data


def test_a_process_type_that_dies_mid_scale_is_named_with_how_it_ended_and_its_logs_are_kept(short_tmp, chromium):
    """A scheduler that went away mid-scale once left only "scheduler exited": the report names the signal or
    exit code, the scale's logs stay for the reason, and nothing of the scale is left running."""
    tmp_path = short_tmp
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp_path)}
    for name in ("BROKER_URL", "REDIS_URL", "DATABASE_URL"):
        env.pop(name, None)
    bench = subprocess.Popen([sys.executable, "-m", "bench", "load", "--ips", "200", "--no-floor"], cwd=ROOT,
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        def scheduler_runner() -> list[int]:  # `python -m lib.cli run scheduler` of this bench's scale
            return [p for p in processes_matching(b"DATA_DIR=" + str(tmp_path).encode(), "environ")
                    if cmdline(p).endswith(b"\0run\0scheduler\0")]

        (runner,) = wait_for(scheduler_runner, timeout=90, what="the scale's scheduler process type")
        os.kill(runner, signal.SIGKILL)
        out, _ = bench.communicate(timeout=150)
    finally:
        if bench.poll() is None:
            bench.kill()
            bench.wait()
    assert bench.returncode == 1, out
    assert re.search(r"! 200 IPs: scheduler killed by SIGKILL; see \S+/logs", out), out
    kept = re.search(r"200 IPs: data and logs kept in (\S+)", out)
    assert kept and (Path(kept.group(1)) / "logs" / "scheduler.log").exists(), out
    # its periodiq went with it (the runner's death signal), and the bench stopped the rest
    assert processes_matching(str(tmp_path).encode()) == []


@pytest.mark.mysql
@pytest.mark.rabbitmq
def test_load_benchmark_on_the_production_profile(short_tmp, chromium):
    need(MYSQL_URL, "MySQL/MariaDB")
    need_rabbitmq()
    conn, name = recreate_mysql_database(MYSQL_URL)
    # a Redis server of its own: the bench measures the server's used_memory, which other test workers' flushes
    # of their databases on a shared server would move (it read -1,268 KB per IP once)
    private = EmbeddedRedis(Path("/tmp") / f"animetop-bench-redis-{uuid.uuid4().hex[:8]}")
    private.ensure_running()
    state = with_redis_db(private.url, 1)
    client = redis.Redis.from_url(state)
    client.flushdb()
    purge_queues(RABBITMQ_URL)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(short_tmp), "BROKER_URL": RABBITMQ_URL,
           "REDIS_URL": state, "DATABASE_URL": MYSQL_URL}
    try:
        client.set("somebody's", "data")  # refused, not wiped
        refused = subprocess.run([sys.executable, "-m", "bench", "load", "--ips", "2", "--no-floor", "--production"],
                                 cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
        assert refused.returncode != 0 and "REDIS_URL" in refused.stderr, refused.stdout + refused.stderr
        assert client.get("somebody's") == b"data"
        client.flushdb()

        result = subprocess.run([sys.executable, "-m", "bench", "load", "--ips", "2", "--no-floor", "--production"],
                                cwd=ROOT, env=env, capture_output=True, text=True, timeout=150)
        out = result.stdout
        assert result.returncode == 0, out + result.stderr
        assert "broker amqp://" in out and "database mysql://" in out, out  # it said where it ran
        check_cost_per_ip(out, [2])
        assert "!" not in out.split("CPU seconds per crawl")[1], out
        # emptied again: no state keys, no application tables, no messages
        assert client.dbsize() == 0
        with conn.cursor() as cur:
            cur.execute("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s", (name,))
            assert cur.fetchone()[0] == 0
        import pika

        connection = pika.BlockingConnection(pika.URLParameters(RABBITMQ_URL))
        try:
            channel = connection.channel()
            for queue in ("crawl", "pipeline", "scheduler"):
                assert channel.queue_declare(queue, passive=True).method.message_count == 0, queue
        finally:
            connection.close()
        assert processes_matching(str(short_tmp).encode()) == []
    finally:
        client.flushdb()
        private.stop()
        conn.close()


def steady_state(out: str, ips: int) -> tuple[dict[str, tuple[float, float, float, float]], int, int]:
    """The steady-state table: table → (first KB, rows / steady KB, rows per crawl), and the results before and
    after the last first crawl."""
    section = out.split("database bytes per crawl, per table:")[1]
    # a queue table drained by the later crawls shrinks: its steady state is negative
    number = r"(-?[\d.]+)"
    rows = re.findall(rf"^  (\w[\w ]*?)\s+{number}, {number} / {number}, {number}$", section, re.M)
    counts = re.search(rf"^  {ips} IPs: (\d+) results by the last first crawl, (\d+) after$", section, re.M)
    assert counts, out
    return ({r[0]: (float(r[1]), float(r[2]), float(r[3]), float(r[4])) for r in rows}, int(counts.group(1)),
            int(counts.group(2)))


def test_load_benchmark_reports_bytes_per_crawl_in_steady_state_apart_from_the_first_crawls(short_tmp, chromium):
    """With two cycles or more, bytes and rows per crawl per table after every IP's first crawl: a listing seen
    again unchanged adds no row (its run's last sighting moves), so the steady state's sightings and snapshots per
    crawl are a small part of the first crawls' (every listing new); the totals are the tables' sums."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(short_tmp)}
    for name in ("BROKER_URL", "REDIS_URL", "DATABASE_URL"):
        env.pop(name, None)
    result = subprocess.run([sys.executable, "-m", "bench", "load", "--ips", "3", "--cycles", "3", "--no-floor"],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=200)
    out = result.stdout
    assert result.returncode == 0, out + result.stderr
    tables, first, after = steady_state(out, 3)
    assert first >= 3 and first + after >= 3 * 3, out  # every IP's cycles, first crawls apart
    # a first crawl records every listing it sees: 240 on 1+1 pages
    assert tables["listing_sightings"][1] >= 240 * 3 / first * 0.9, out
    for table in ("listing_sightings", "item_snapshots"):
        assert tables[table][3] < 60, (table, out)  # a quarter of the listings seen: only what changed is new
    for column in range(4):  # "all tables" is the tables' sum (each rounded to one decimal)
        parts = [v[column] for name, v in tables.items() if name != "all tables"]
        assert abs(tables["all tables"][column] - sum(parts)) <= 0.05 * len(parts) + 1e-9, (column, out)
