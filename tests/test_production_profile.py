"""The demo's scenario on the production profile: RabbitMQ as the broker, a Redis server for state, MariaDB as
the database, the real process types against the simulator, one worker process SIGKILLed mid-run; every IP's
hourly rows equal what the simulator's record says they must be (tests/test_demo.py's ground truth), and
nothing is dead-lettered. Once through ``animetop demo`` (which starts them with ``animetop run``), once with the
shipped Procfile under ``honcho start``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import pika
import pymysql
import pytest

from lib.core.redis_urls import with_redis_db
from lib.messaging.purge import purge_rabbitmq_queues
from lib.messaging.queues import ALL_QUEUES

from .conftest import MYSQL_URL, RABBITMQ_URL, STATE_DB, need, need_rabbitmq
from .helpers import (
    cmdline,
    descendants,
    parent_of,
    processes_matching,
    recreate_mysql_database,
    stored_id,
    threads,
    wait_for,
)
from .test_demo import crawl_sessions, expected_hours

pytestmark = [pytest.mark.slow, pytest.mark.mysql, pytest.mark.rabbitmq]

ROOT = Path(__file__).resolve().parent.parent


def purge_queues(url: str) -> None:
    """A fresh broker: the application's queues (with their delay and dead-letter queues) emptied."""
    purge_rabbitmq_queues(pika.URLParameters(url))


def worker_processes(data_dir: bytes) -> list[int]:
    """The worker process type's Dramatiq worker processes of the demo whose DATA_DIR this is."""
    runners = [p for p in processes_matching(b"DATA_DIR=" + data_dir + b"\0", "environ")
               if cmdline(p).endswith(b"\0run\0worker\0")]  # `python -m lib.cli run worker`, `animetop run worker`
    return [p for runner in runners for p in descendants(runner)
            if b"dramatiq" in cmdline(p) and b"dramatiq" in cmdline(parent_of(p)) and threads(p) > 2]


def fresh_production_services(redis_server: str) -> str:
    """The production profile's services of this test worker, emptied: its MariaDB database made again, its state
    Redis database flushed, its RabbitMQ vhost's queues purged. Returns the state Redis URL."""
    import redis

    need(MYSQL_URL, "MySQL/MariaDB")
    need_rabbitmq()
    recreate_mysql_database(MYSQL_URL)[0].close()
    state = with_redis_db(redis_server, STATE_DB)
    redis.Redis.from_url(state).flushdb()
    purge_queues(RABBITMQ_URL)
    return state


def test_the_demo_on_rabbitmq_redis_and_mariadb_survives_a_worker_kill(tmp_path, chromium, redis_server):
    state = fresh_production_services(redis_server)
    served = tmp_path / "served.jsonl"
    env = {**os.environ, "PYTHONPATH": os.getcwd(), "BROKER_URL": RABBITMQ_URL, "REDIS_URL": state,
           "DATABASE_URL": MYSQL_URL}
    # no history: the worker is killed while the process types apply the live crawls; two minutes, so that the
    # largest IP (whose pages cost the simulator most to build) has a second crawl applied on a loaded machine
    demo = subprocess.Popen([sys.executable, "-m", "lib.cli", "demo", "--minutes", "2", "--ips", "3",
                             "--history", "0", "--port", "0", "--record", str(served)], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
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

    check_against_truth(conn, served, 3)
    conn.close()


def check_against_truth(conn, served, count: int) -> None:
    """Every IP's hourly rows and snapshots equal what the pages the simulator served to its applied crawls
    define (a crawl served but never applied, cut by a stop, is no crawl: tests/test_demo.py's ``expected_hours``
    pairs each applied crawl with the first crawl session that started after it did)."""
    requests = defaultdict(list)
    for line in served.read_text().splitlines():
        req = json.loads(line)
        requests[req["keyword"]].append(req)
    with conn.cursor() as cur:
        cur.execute("SELECT id, keyword FROM ip_metadata")
        ips = dict(cur.fetchall())
        assert len(ips) == count
        compared = 0
        for ip_id, keyword in ips.items():
            cur.execute("SELECT crawled_at FROM applied_results WHERE ip_id = %s ORDER BY crawled_at", (ip_id,))
            crawls = [t for (t,) in cur.fetchall()]
            assert len(crawls) >= 2, f"{keyword}: {len(crawls)} crawls applied"
            expected, seen_ids = expected_hours(crawls, crawl_sessions(requests[keyword]))
            cur.execute("SELECT hour_bucket, inflow, outflow, sample_count, min_price, max_price "
                        "FROM ip_stats_hourly WHERE ip_id = %s", (ip_id,))
            actual = {bucket: (inflow, outflow, samples, None if low is None else round(low),
                               None if high is None else round(high))
                      for bucket, inflow, outflow, samples, low, high in cur.fetchall()}
            assert actual == expected, keyword
            cur.execute("SELECT source_id FROM item_snapshots WHERE ip_id = %s", (ip_id,))
            assert {stored_id(sid) for (sid,) in cur.fetchall()} == seen_ids, keyword
            compared += sum(v[0] + v[1] for v in expected.values())
        assert compared > 0  # real inflow and outflow were compared


def test_the_procfile_under_honcho_on_rabbitmq_redis_and_mariadb(tmp_path, chromium, redis_server):
    """The shipped Procfile under ``honcho start`` (its three process types, nothing else), a worker process
    SIGKILLed mid-run, honcho stopped with Ctrl-C once every IP has three crawls applied: every applied crawl's
    hours equal the simulator's truth, nothing is dead-lettered, nothing is left running."""
    from lib.core.clock import Clock
    from lib.operations.demo import SAMPLE_IPS, demo_env
    from lib.standins.simulator import MarketSimulator

    state = fresh_production_services(redis_server)
    served = tmp_path / "served.jsonl"
    speed, anchor = 120.0, time.time()
    sim = MarketSimulator(clock=Clock(speed, anchor), record=str(served)).start()  # the process types' clock
    data_dir = tmp_path / "var"
    bin_dir = str(Path(sys.executable).parent)  # `animetop`, as the Procfile names it, from this checkout
    env = {**os.environ, **demo_env(data_dir, sim.url, speed, anchor, chromium), "BROKER_URL": RABBITMQ_URL,
           "REDIS_URL": state, "DATABASE_URL": MYSQL_URL, "PYTHONPATH": str(ROOT),
           "PATH": f"{bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}"}
    honcho = None
    conn = pymysql.connect(host="127.0.0.1", port=3306, user="root", database=MYSQL_URL.rsplit("/", 1)[1],
                           autocommit=True)
    try:
        for args in (["db", "init"], *(["ip", "add", keyword] for keyword in SAMPLE_IPS[:3])):
            done = subprocess.run([sys.executable, "-m", "lib.cli", *args], env=env, cwd=ROOT,
                                  capture_output=True, text=True, timeout=60)
            assert done.returncode == 0, done.stdout + done.stderr
        honcho = subprocess.Popen([os.path.join(bin_dir, "honcho"), "start"], cwd=ROOT, env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                  start_new_session=True)

        def applied_per_ip() -> list[int]:
            with conn.cursor() as cur:
                cur.execute("SELECT COUNT(a.task_id) FROM ip_metadata i LEFT JOIN applied_results a "
                            "ON a.ip_id = i.id GROUP BY i.id")
                return [int(n) for (n,) in cur.fetchall()]

        wait_for(lambda: sum(applied_per_ip()) >= 2, timeout=180, what="two crawl results applied")
        victims = wait_for(lambda: worker_processes(str(data_dir).encode()), timeout=30, what="a worker process")
        os.kill(victims[0], signal.SIGKILL)  # as the OOM killer would: its runner restarts it
        wait_for(lambda: min(applied_per_ip()) >= 3, timeout=300, interval=0.5, what="three crawls of every IP")
        honcho.send_signal(signal.SIGINT)  # Ctrl-C: honcho stops every process type (SIGKILL after 5 s)
        out, _ = honcho.communicate(timeout=60)
    finally:
        if honcho is not None and honcho.poll() is None:
            os.killpg(honcho.pid, signal.SIGKILL)
            honcho.wait()
        sim.stop()
    assert all(kind in out for kind in ("scheduler.1", "crawler.1", "worker.1")), out  # the Procfile's types
    assert wait_for(lambda: processes_matching(b"DATA_DIR=" + str(data_dir).encode() + b"\0", "environ") == [],
                    timeout=30, what="every process of the run gone") is True
    check_against_truth(conn, served, 3)
    conn.close()
    import pika

    connection = pika.BlockingConnection(pika.URLParameters(RABBITMQ_URL))
    try:
        channel = connection.channel()
        for queue in ALL_QUEUES:
            try:
                dead = channel.queue_declare(f"{queue}.XQ", passive=True).method.message_count
            except pika.exceptions.ChannelClosedByBroker:
                channel = connection.channel()  # never declared: nothing dead-lettered there
                continue
            if dead:  # say which message, and what the run printed
                _, properties, body = channel.basic_get(f"{queue}.XQ", auto_ack=False)
                first = (body or b"")[:300]
                raise AssertionError(f"{dead} message(s) dead-lettered on {queue}; the first: {first!r}, headers "
                                     f"{getattr(properties, 'headers', None)}; the run's output ends:\n{out[-4000:]}")
    finally:
        connection.close()
