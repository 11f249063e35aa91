"""The demo's scenario on the production profile: RabbitMQ as the broker, a Redis server for state, MariaDB as
the database, the real process types (``animetop run``) against the simulator, one worker process SIGKILLed
mid-run; every IP's hourly rows equal what the simulator's record says they must be (tests/test_demo.py's
ground truth), and nothing is dead-lettered."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections import defaultdict

import pika
import pymysql
import pytest

from lib.core.redis_urls import with_redis_db
from lib.messaging.queues import ALL_QUEUES

from .conftest import MYSQL_URL, STATE_DB, need
from .helpers import cmdline, descendants, parent_of, processes_matching, recreate_mysql_database, threads, wait_for
from .test_demo import crawl_sessions, expected_hours

pytestmark = [pytest.mark.slow, pytest.mark.mysql, pytest.mark.rabbitmq]

RABBITMQ_URL = os.environ.get("TEST_RABBITMQ_URL", "amqp://guest:guest@127.0.0.1:5672/%2F")


def purge_queues(url: str) -> None:
    """Empty the application's queues (and their delay and dead-letter queues) on RabbitMQ: a fresh broker."""
    connection = pika.BlockingConnection(pika.URLParameters(url))
    try:
        for queue in ALL_QUEUES:
            for name in (queue, f"{queue}.DQ", f"{queue}.XQ"):
                channel = connection.channel()
                try:
                    channel.queue_purge(name)
                except pika.exceptions.ChannelClosedByBroker:
                    pass  # not declared yet
                finally:
                    if channel.is_open:
                        channel.close()
    finally:
        connection.close()


def worker_processes(data_dir: bytes) -> list[int]:
    """The worker process type's Dramatiq worker processes of the demo whose DATA_DIR this is."""
    runners = [p for p in processes_matching(b"DATA_DIR=" + data_dir + b"\0", "environ")
               if b"lib.cli\0run\0worker" in cmdline(p)]
    return [p for runner in runners for p in descendants(runner)
            if b"dramatiq" in cmdline(p) and b"dramatiq" in cmdline(parent_of(p)) and threads(p) > 2]


def test_the_demo_on_rabbitmq_redis_and_mariadb_survives_a_worker_kill(tmp_path, chromium, redis_server):
    need(MYSQL_URL, "MySQL/MariaDB")
    need(RABBITMQ_URL, "RabbitMQ")
    recreate_mysql_database(MYSQL_URL)[0].close()
    state = with_redis_db(redis_server, STATE_DB)
    import redis

    redis.Redis.from_url(state).flushdb()
    purge_queues(RABBITMQ_URL)
    served = tmp_path / "served.jsonl"
    env = {**os.environ, "PYTHONPATH": os.getcwd(), "BROKER_URL": RABBITMQ_URL, "REDIS_URL": state,
           "DATABASE_URL": MYSQL_URL}
    demo = subprocess.Popen([sys.executable, "-m", "lib.cli", "demo", "--minutes", "1.25", "--ips", "3",
                             "--record", str(served)], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    conn = pymysql.connect(host="127.0.0.1", port=3306, user="root", database=MYSQL_URL.rsplit("/", 1)[1],
                            autocommit=True)

    def applied() -> int:
        with conn.cursor() as cur:
            try:
                cur.execute("SELECT COUNT(*) FROM applied_results")
            except pymysql.err.ProgrammingError:
                return 0  # the demo has not created the tables yet
            return int(cur.fetchone()[0])

    try:
        # once results flow, SIGKILL a worker process (as the OOM killer would): its runner restarts it and
        # RabbitMQ delivers the messages it held again
        wait_for(lambda: applied() >= 2, timeout=180, what="two crawl results applied")
        data_dir = str(tmp_path / "var" / "demo").encode()
        victims = wait_for(lambda: worker_processes(data_dir), timeout=30, what="a worker process")
        os.kill(victims[0], signal.SIGKILL)
        out, _ = demo.communicate(timeout=420)
    finally:
        if demo.poll() is None:
            demo.kill()
            demo.wait()
    assert demo.returncode == 0, out
    assert "• services: broker amqp://guest:***@" in out and "database mysql://***@" in out, out  # redacted
    assert "animetop redis stop" not in out  # no embedded Redis to point at
    assert "dead letters: 0" in out and "still queued" not in out, out

    requests = defaultdict(list)
    for line in served.read_text().splitlines():
        req = json.loads(line)
        requests[req["keyword"]].append(req)
    with conn.cursor() as cur:
        cur.execute("SELECT id, keyword FROM ip_metadata")
        ips = dict(cur.fetchall())
        assert len(ips) == 3
        compared = 0
        for ip_id, keyword in ips.items():
            cur.execute("SELECT crawled_at FROM applied_results WHERE ip_id = %s ORDER BY crawled_at", (ip_id,))
            crawls = [t for (t,) in cur.fetchall()]
            assert len(crawls) >= 2, f"{keyword}: {len(crawls)} crawls applied"
            expected, seen_ids = expected_hours(keyword, crawls, crawl_sessions(requests[keyword]))
            cur.execute("SELECT hour_bucket, inflow, outflow, sample_count, min_price, max_price "
                        "FROM ip_stats_hourly WHERE ip_id = %s", (ip_id,))
            actual = {bucket: (inflow, outflow, samples, None if low is None else round(low),
                               None if high is None else round(high))
                      for bucket, inflow, outflow, samples, low, high in cur.fetchall()}
            assert actual == expected, keyword
            cur.execute("SELECT source_id FROM item_snapshots WHERE ip_id = %s", (ip_id,))
            assert {sid for (sid,) in cur.fetchall()} == seen_ids, keyword
            compared += sum(v[0] + v[1] for v in expected.values())
        assert compared > 0  # real inflow and outflow were compared
    conn.close()
