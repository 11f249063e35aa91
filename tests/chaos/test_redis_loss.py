"""Chaos scenario 2 (issue #9): the embedded Redis restarted, and Redis lost.

Both run the app as it runs with nothing configured: no REDIS_URL and no BROKER_URL, so the first process
starts the private redis-server under DATA_DIR (unix socket, AOF ``appendfsync everysec``) and the broker
(database 0) and the application state (database 1) both live on it. The worker is the real ``worker``
process type (``animetop run worker``), sharing the test's database (a SQLite file, or MariaDB). Crawl results
are built from the market simulator's truth (``lib.standins.simulator.market.search``) and sent as ``process_result``
messages, as the crawler would send them, so no Chromium is needed.

1. **Restart.** With IPs in the schedule ZSET, crawls claimed in flight, crawl tasks waiting (ready and
   delayed) on the crawl queue, two delayed ``process_result`` messages already prefetched by the worker
   (one due while Redis is down, one after) and item states written, the redis-server is stopped and, after a
   few seconds of downtime, started again on the same socket while the worker stays up. Everything is still
   there, the delayed messages are applied once each, a message sent after the restart is applied, and no
   process of the worker was restarted (same pids of the runner, the ``dramatiq`` command and its worker
   process).

   What ``appendfsync everysec`` can lose: Redis writes each command to the AOF file (the kernel's page
   cache) before it replies, and fsyncs the file once a second; a redis-server that is stopped
   (SHUTDOWN/SIGTERM) fsyncs on the way out, and one that is killed loses nothing the kernel has. What can
   be lost is the last second or two of acknowledged writes on a crash of the machine itself (or when a slow
   disk makes Redis postpone the write of its AOF buffer, up to 2 s). The test waits more than a second
   after the last write it checks before stopping the server, and checks both ways of stopping it.

   The scheduler process type too: Redis down at the minute periodiq sends its ticks does not end it, and
   that minute's tick still runs.

2. **Wipe.** After two crawls of an IP are applied (stats in the database), Redis is flushed (FLUSHALL:
   schedule, item states, idempotency keys, queues). The next scheduler tick rebuilds the schedule from the
   database (``ip_metadata`` + ``collector_execution_state``), a redelivered old result is not counted again
   (the ledger), and a new crawl counts only real transitions: the item states are read back from the
   snapshots. A twin IP fed the very same crawls without the wipe is the reference.
"""

from __future__ import annotations

import logging
import os
import signal
import tempfile
import time
from pathlib import Path

import dramatiq
import pytest
import redis
from dramatiq import Message

from lib.app import setup
from lib.core import keys
from lib.core.db import database
from lib.core.embedded_redis import MAX_SOCKET_PATH, EmbeddedRedis
from lib.core.redis_client import state_redis
from lib.core.settings import load_settings, use_settings
from lib.market.statistics import hour_bucket
from lib.messaging.broker import build_broker
from lib.messaging.in_flight import InFlight
from lib.messaging.queues import CRAWL, PIPELINE
from lib.messaging.routes import PROCESS_RESULT, SCHEDULE_TICK
from lib.scheduling.catalogue import Catalogue
from lib.scheduling.schedule import ScheduleStore, ip_due_from_row
from lib.scheduling.tick import Scheduler, crawl_message, tick_message
from lib.standins.simulator import market
from models import AppliedResult, IpMetadata, IpStatsHourly, ItemSnapshot

from ..conftest import actors
from ..helpers import RedisServer, children, cmdline, descendants, free_port, wait_for
from .state_outage import StateOutageRun

#: Broker keys are prefixed with this (lib.messaging.broker.NAMESPACE).
NS = "animetop"

#: Quiet simulated markets (20–40 new listings an hour): cheap to compute, yet every crawl sees changes.
KEYWORDS = ["負荷IP00015", "負荷IP00016", "負荷IP00035", "負荷IP00042"]


def crawl_items(keyword: str, t: float, per_status: int = 120) -> list[dict]:
    """What one crawl of the first search page of each kind (on sale, sold) returns at ``t``."""
    on_sale = market.search(keyword, {market.ON_SALE}, t)[:per_status]
    sold = market.search(keyword, {market.TRADING, market.SOLD_OUT}, t)[:per_status]
    return [{"source_id": listing.id, "title": listing.name, "price": listing.price_at(t),
             "status": "on_sale" if status == market.ON_SALE else "sold",
             "item_url": f"https://jp.mercari.com/item/{listing.id}",
             "created": int(listing.created), "updated": int(listing.updated_at(t))}
            for listing, status in on_sale + sold]


def result_message(ip_id: int, task_id: str, crawled_at: float, items: list[dict]) -> Message:
    """The ``process_result`` message the crawler sends after a crawl."""
    return PROCESS_RESULT.message(ip_id=ip_id, task_id=task_id, crawled_at=crawled_at, items=items, pages_crawled=2)


def applied(task_id: str) -> AppliedResult | None:
    with database.connection_context():
        return AppliedResult.get_or_none(AppliedResult.task_id == task_id)


def stats_of(ip_id: int) -> dict:
    """The IP's hourly rows, by hour, without the columns that name the row."""
    with database.connection_context():
        return {row.hour_bucket: (row.inflow, row.outflow, row.liquidity_index, row.avg_price, row.min_price,
                                  row.max_price, row.sample_count)
                for row in IpStatsHourly.select().where(IpStatsHourly.ip_id == ip_id)}


def snapshots_of(ip_id: int) -> dict:
    with database.connection_context():
        return {s.source_id: (s.status, s.price, s.first_seen, s.last_seen)
                for s in ItemSnapshot.select().where(ItemSnapshot.ip_id == ip_id)}


def item_states(client: redis.Redis, ip_id: int) -> dict:
    return {key: client.hgetall(key) for key in client.scan_iter(keys.item_state(ip_id, "*"), count=1000)}


def redis_pid(data_dir: Path) -> int:
    return int((data_dir / "redis.pid").read_text().strip())


class App:
    """The app on its own embedded redis-server, seen from the test process."""

    def __init__(self, data_dir: Path, env: dict[str, str]) -> None:
        self.data_dir = data_dir
        self.env = env
        self.settings = load_settings(env)
        use_settings(self.settings)
        self.server = EmbeddedRedis(data_dir)
        self.broker = build_broker(self.settings)  # starts the embedded redis-server, as any process would
        dramatiq.set_broker(self.broker)
        self.state = state_redis(self.settings)
        self.broker_db = self.broker.client
        self.schedule = ScheduleStore(self.state)
        self.catalogue = Catalogue(self.schedule, self.settings)

    def send(self, message: Message, delay_ms: int | None = None) -> Message:
        return self.broker.enqueue(message, delay=delay_ms)

    def close(self) -> None:
        self.broker.close()
        self.server.stop()
        use_settings(None)


@pytest.fixture
def app(db, database_url, tmp_path, monkeypatch):
    """The app with nothing but DATA_DIR and the database configured: the embedded Redis (broker and state).

    Request it before ``process_types`` so the process types are stopped before its redis-server is."""
    for name in ("REDIS_URL", "BROKER_URL", "DATABASE_URL"):
        monkeypatch.delenv(name, raising=False)
    data_dir = tmp_path / "var"
    cleanup = None
    if len(str(data_dir / "redis.sock")) > MAX_SOCKET_PATH:  # a unix socket's path is short
        data_dir = cleanup = Path(tempfile.mkdtemp(prefix="at-", dir="/tmp"))
    env = {
        "DATA_DIR": str(data_dir),
        "DATABASE_URL": database_url,
        "LOG_LEVEL": "INFO",
        "WORKER_PROCESSES": "1",
        "WORKER_THREADS": "2",
        "WORKER_SHUTDOWN_TIMEOUT": "10s",
        "METRICS_PORT": str(free_port(2)),
        "RETRY_MIN_BACKOFF": "100ms",
        "RETRY_MAX_BACKOFF": "1s",
        "LOCK_BUSY_RETRY_DELAY": "200ms",
        # the production heartbeat timeout (10 s) outlasts the downtime: the worker is not taken for dead
        "BROKER_HEARTBEAT_TIMEOUT": "10s",
        # one fixed interval, so the schedule rebuilt from the database is known exactly
        "SCHEDULER_MIN_INTERVAL": "6h", "SCHEDULER_BASE_INTERVAL": "6h", "SCHEDULER_MAX_INTERVAL": "6h",
    }
    application = App(data_dir, env)
    socket_url = f"unix://{data_dir.resolve() / 'redis.sock'}"
    assert application.settings.embedded_redis  # broker (db 0) and state (db 1) on the one embedded server
    assert application.settings.broker_url_resolved == f"{socket_url}?db=0"
    assert application.settings.state_redis_url == f"{socket_url}?db=1"
    yield application
    application.close()
    if cleanup is not None:
        import shutil

        shutil.rmtree(cleanup, ignore_errors=True)


def worker_tree(worker) -> dict[int, bytes]:
    """Every process under the runner (the ``dramatiq`` command, its worker process, its metrics fork)."""
    return {pid: cmdline(pid) for pid in descendants(worker.proc.pid)}


# == 1. Redis restarted =======================================================================================

@pytest.mark.parametrize("database_url, stop", [  # each way of stopping once, on one database each
    ("sqlite", "SIGKILL"), pytest.param("mysql", "SHUTDOWN", marks=pytest.mark.mysql)], indirect=["database_url"])
def test_redis_restart_keeps_schedule_messages_and_states_and_the_worker_reconnects(app, process_types, stop):
    r, b = app.state, app.broker_db
    now = time.time()
    ips = [app.catalogue.add(k) for k in KEYWORDS]
    a, c, d = ips[0], ips[2], ips[3]  # ips[1] only waits for its crawl

    worker = process_types("worker", app.env)
    t1 = now - 1800
    app.send(result_message(a.id, "a-1", t1, crawl_items(a.keyword, t1)))
    wait_for(lambda: applied("a-1"), timeout=90, what="the worker to apply the first result")
    wait_for(lambda: item_states(r, a.id), timeout=10, what="item states written")
    # the ledger row commits before the result's last step reschedules the IP: wait for that step (a fresh-clone CI
    # run ticked in between once, and found the IP still due)
    wait_for(lambda: app.schedule.time_of(a.id) == pytest.approx(t1 + 6 * 3600), timeout=30,
             what="the first result's reschedule")
    # a scheduler tick claims the due IPs and pushes their crawls: nobody consumes the crawl queue (no crawler)
    tick = Scheduler(app.settings, r, app.broker).tick()
    assert sorted(tick.enqueued) == sorted(ip.id for ip in ips[1:])
    with database.connection_context():
        a_due = ip_due_from_row(IpMetadata.get_by_id(a.id))
    app.send(crawl_message(a_due, "a-later"), delay_ms=3_600_000)  # a delayed crawl task
    # two results the worker will hold in memory as delayed messages: one due while Redis is down, one after
    sent_at = time.monotonic()
    t_c, t_d = now - 600, now - 300
    app.send(result_message(c.id, "c-1", t_c, crawl_items(c.keyword, t_c)), delay_ms=5_000)
    app.send(result_message(d.id, "d-1", t_d, crawl_items(d.keyword, t_d)), delay_ms=14_000)
    held = f"{NS}:__acks__.*.{PIPELINE}.DQ"
    wait_for(lambda: sum(b.scard(k) for k in b.scan_iter(held)) == 2, timeout=10,
             what="the worker to prefetch the two delayed results")

    schedule_before = app.schedule.all()
    in_flight_before = InFlight(r).members()
    states_before = item_states(r, a.id)
    crawl_ready = b.lrange(f"{NS}:{CRAWL}", 0, -1)
    crawl_messages = b.hgetall(f"{NS}:{CRAWL}.msgs")
    crawl_delayed = b.hgetall(f"{NS}:{CRAWL}.DQ.msgs")
    assert len(crawl_ready) == 3 and len(crawl_messages) == 3 and len(crawl_delayed) == 1
    assert len(states_before) == 240 and in_flight_before == {ip.id for ip in ips[1:]}
    tree_before = worker_tree(worker)
    dramatiq_main = [p for p in children(worker.proc.pid) if b"dramatiq" in cmdline(p)]
    assert len(dramatiq_main) == 1 and worker.dramatiq_workers(), tree_before

    time.sleep(1.2)  # more than everysec's second after the last write we check
    old_pid = redis_pid(app.data_dir)
    stopped_at = time.monotonic()
    if stop == "SHUTDOWN":
        assert app.server.stop()  # SHUTDOWN: writes and fsyncs the AOF, then exits
    else:
        os.kill(old_pid, signal.SIGKILL)  # a crash: whatever is in the AOF file is what comes back
    wait_for(lambda: not app.server.ping(), timeout=10, what="redis-server to go")
    assert stopped_at - sent_at < 4.5, "too slow to stop Redis before the first delayed result fell due"
    time.sleep(5)  # longer than redis-py's retries (~1.5 s): the worker's connections fail for real
    assert not app.server.ping(), "something restarted the embedded Redis during the downtime"
    app.server.ensure_running()  # the same socket, the same AOF
    assert redis_pid(app.data_dir) != old_pid

    # everything survived, byte for byte
    assert {ip: at for ip, at in app.schedule.all().items() if ip not in (c.id, d.id)} == \
        {ip: at for ip, at in schedule_before.items() if ip not in (c.id, d.id)}
    assert InFlight(r).members() == in_flight_before
    assert item_states(r, a.id) == states_before
    assert all(0 < r.pttl(k) for k in states_before)  # with their expiry
    assert b.lrange(f"{NS}:{CRAWL}", 0, -1) == crawl_ready
    assert b.hgetall(f"{NS}:{CRAWL}.msgs") == crawl_messages
    assert b.hgetall(f"{NS}:{CRAWL}.DQ.msgs") == crawl_delayed

    # the worker reconnects by itself and applies the delayed results, the one due during the downtime too
    wait_for(lambda: applied("c-1") and applied("d-1"), timeout=45,
             what="the delayed results held by the worker to be applied after the restart")
    # and what is sent after the restart
    t2 = now - 60
    app.send(result_message(a.id, "a-2", t2, crawl_items(a.keyword, t2)))
    outcome = wait_for(lambda: applied("a-2"), timeout=30, what="a result sent after the restart to be applied")
    assert outcome.inflow + outcome.outflow > 0
    wait_for(lambda: app.schedule.time_of(a.id) == pytest.approx(t2 + 6 * 3600), timeout=30,
             what="the reschedule by the result sent after the restart")

    # no process of the worker was restarted
    assert worker.proc.poll() is None
    assert worker_tree(worker) == tree_before
    log = worker.log.read_text(errors="replace")
    assert "exited unexpectedly" not in log, log[-3000:]
    # That the worker's connections were lost is not read from its log: whether a poll or a heartbeat fell inside
    # the 5 s outage (and logged "connection error") depends on timing, and a fresh-clone CI run had none. It is
    # proven above: the server process was replaced (a new pid), so the results applied after the restart went
    # through connections the worker opened again by itself.
    # nothing went to the dead letters, nothing is left behind: a result's message is acked only after the actor
    # returns, a moment after its apply committed and rescheduled, so wait for the queue to drain (a fresh-clone CI
    # run at load 5 read a-2's message still held)
    assert all(b.zcard(f"{NS}:{q}.XQ") == 0 for q in (PIPELINE, CRAWL))
    wait_for(lambda: b.hlen(f"{NS}:{PIPELINE}.DQ.msgs") == 0 and b.hlen(f"{NS}:{PIPELINE}.msgs") == 0, timeout=30,
             what="the pipeline's messages to be acked")
    assert all(b.zcard(f"{NS}:{q}.XQ") == 0 for q in (PIPELINE, CRAWL))


# == 2. Redis lost ============================================================================================

def test_redis_wiped_rebuilds_the_schedule_from_the_database_and_counts_nothing_twice(app, process_types):
    r, b = app.state, app.broker_db
    keyword = KEYWORDS[0]
    wiped = app.catalogue.add(keyword)
    twin = app.catalogue.add(keyword + " (reference)")  # fed the very same crawls, never wiped
    worker = process_types("worker", app.env)

    now = time.time()
    hour = now - now % 3600
    t1, t2, t3 = hour - 7200 + 600, hour - 3600 + 600, max(hour, now - 5)
    crawls = {n: crawl_items(keyword, t) for n, t in ((1, t1), (2, t2), (3, t3))}
    times = {1: t1, 2: t2, 3: t3}

    def send_crawl(ip, n: int) -> None:
        app.send(result_message(ip.id, f"{ip.id}-{n}", times[n], crawls[n]))

    for n in (1, 2):
        for ip in (wiped, twin):
            send_crawl(ip, n)
        wait_for(lambda: applied(f"{wiped.id}-{n}") and applied(f"{twin.id}-{n}"), timeout=90,
                 what=f"crawl {n} to be applied")
    send_crawl(twin, 3)  # the reference's third crawl, with its item states in Redis
    wait_for(lambda: applied(f"{twin.id}-3"), timeout=30, what="the reference's third crawl")
    assert all(applied(f"{ip.id}-2").inflow + applied(f"{ip.id}-2").outflow > 0 for ip in (wiped, twin))

    stats_before = stats_of(wiped.id)
    assert set(stats_before) == {hour_bucket(t1), hour_bucket(t2)}
    # the ledger row commits before the result's last step reschedules the IP: wait for that step too
    expected_schedule = pytest.approx({wiped.id: t2 + 6 * 3600, twin.id: t3 + 6 * 3600})
    schedule_before = wait_for(lambda: (s := app.schedule.all()) == expected_schedule and s, timeout=30,
                               what="the third crawl's reschedule")
    assert item_states(r, wiped.id)

    # Redis lost: everything, broker database included
    r.flushall()
    # (a live worker's next heartbeat may already be back, nothing else)
    assert r.dbsize() == 0 and set(b.keys()) <= {f"{NS}:__heartbeats__".encode()}

    # the next tick (periodiq sends one a minute) finds the schedule empty and rebuilds it from the database
    app.send(tick_message())
    wait_for(lambda: app.schedule.count() == 2, timeout=30, what="the schedule to be rebuilt")
    assert app.schedule.all() == pytest.approx(schedule_before, abs=1e-3)  # last crawl + interval, as before
    wait_for(lambda: not b.hlen(f"{NS}:scheduler.msgs") and not any(b.scan_iter(f"{NS}:__acks__.*.scheduler")),
             timeout=10, what="the tick to finish")
    assert b.llen(f"{NS}:{CRAWL}") == 0  # nothing was due: no crawl pushed

    # the reference's third crawl, applied before the wipe, delivered again: its idempotency key went with
    # Redis, the ledger in the database still knows it
    twin_stats = stats_of(twin.id)
    send_crawl(twin, 3)
    wait_for(lambda: r.exists(keys.idempotency(PROCESS_RESULT.actor_name, f"task:{twin.id}-3")), timeout=30,
             what="the redelivered crawl to be processed")
    assert stats_of(twin.id) == twin_stats
    with database.connection_context():
        assert AppliedResult.select().where(AppliedResult.ip_id == twin.id).count() == 3

    # the third crawl: the states come back from the snapshots, so only real transitions count
    send_crawl(wiped, 3)
    third = wait_for(lambda: applied(f"{wiped.id}-3"), timeout=30, what="the third crawl after the wipe")
    reference = applied(f"{twin.id}-3")
    assert (third.items, third.inflow, third.outflow) == (reference.items, reference.inflow, reference.outflow)
    stats_after = stats_of(wiped.id)
    # (in event time the third crawl also adds to earlier hours: the sales and listings it saw happened there)
    assert stats_after == stats_of(twin.id)
    assert snapshots_of(wiped.id) == snapshots_of(twin.id)
    with database.connection_context():
        assert IpMetadata.get_by_id(wiped.id).weight == IpMetadata.get_by_id(twin.id).weight
    # the ledger row commits before the result's last step reschedules the IP (as above): wait for that step
    wait_for(lambda: app.schedule.time_of(wiped.id) == pytest.approx(t3 + 6 * 3600), timeout=30,
             what="the third crawl's reschedule after the wipe")
    # and the item states are back in Redis as the reference has them
    third_ids = [i["source_id"] for i in crawls[3]]
    assert [r.hgetall(keys.item_state(wiped.id, i)) for i in third_ids] == \
        [r.hgetall(keys.item_state(twin.id, i)) for i in third_ids]

    # the test can tell double counting: listings sold in both crawls would have counted again as "new sold"
    sold_2 = {i["source_id"] for i in crawls[2] if i["status"] == "sold"}
    sold_3 = {i["source_id"] for i in crawls[3] if i["status"] == "sold"}
    assert len(sold_2 & sold_3) > 10 and third.outflow <= len(sold_3 - sold_2) < len(sold_3)
    assert third.inflow + third.outflow > 0
    assert worker.proc.poll() is None


# == 1b. Redis restarted while periodiq sends its minute's ticks ===============================================

@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)  # the scheduler's part; no database case here
def test_redis_down_at_a_periodic_tick_does_not_restart_the_scheduler(app, process_types):
    """periodiq sends the periodic actors' messages on the minute: Redis down at that moment must not end it."""
    r = app.state
    app.catalogue.add(KEYWORDS[0])
    worker = process_types("worker", app.env)
    scheduler = process_types("scheduler", app.env)
    # the scheduler's start-up tick, run by the worker, pushes the crawl of the IP: both are up
    wait_for(lambda: app.broker_db.llen(f"{NS}:{CRAWL}") == 1, timeout=90, what="the start-up tick")
    wait_for(lambda: [p for p in descendants(scheduler.proc.pid) if b"periodiq" in cmdline(p)], timeout=30,
             what="periodiq to run")
    # the worker's tree is whole (its main process, the worker process and the metrics fork, which comes last)
    # before it is taken as the reference: under load the fork can start after the start-up tick has run
    wait_for(lambda: len(worker_tree(worker)) == 3, timeout=30, what="the worker's three processes")
    trees = {p.kind: worker_tree(p) for p in (worker, scheduler)}

    minute = (int(time.time()) // 60 + 1) * 60
    if minute - time.time() < 5:
        minute += 60
    time.sleep(minute - 2.5 - time.time())
    assert app.server.stop()
    time.sleep(minute + 5 - time.time())  # periodiq's sends of this minute fail for a while
    app.server.ensure_running()

    stamp = time.strftime(":%M:00", time.localtime(minute))
    ticks = keys.idempotency(SCHEDULE_TICK.actor_name, "tick:*")
    wait_for(lambda: any(stamp in k.decode() for k in r.scan_iter(ticks)),
             timeout=40, what="the tick of the minute Redis was down at to be run")
    for p in (worker, scheduler):
        assert p.proc.poll() is None
        assert worker_tree(p) == trees[p.kind], f"a process of the {p.kind} was restarted"
        log = p.log.read_text(errors="replace")
        assert "exited unexpectedly" not in log and "Unhandled error" not in log, log[-3000:]


# == 1c. The state server restarted under the real actors, the periodic ones ticking ===========================

@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_a_state_server_restart_costs_no_dead_letter_and_no_error(db, env, tmp_path, start_worker, caplog):
    """The application-state Redis, a single server, SIGKILLed mid-run and started again after 4 s (longer than
    the client's own retries): the messages that meet it run again, the periodic ticks are left to the next one,
    and the run ends with no dead letter, no ERROR line and exactly the end state the results define (the cluster
    counterpart, a failover, is ``tests/cluster/test_failover.py``)."""
    caplog.set_level(logging.INFO)
    server = RedisServer(tmp_path / "state").start()
    settings = load_settings({**env, "REDIS_URL": server.url})
    use_settings(settings)
    broker = setup(settings)
    try:
        actors.declare_on(broker)
        run = StateOutageRun(settings, broker, actors, start_worker, caplog)

        def restart() -> None:
            server.kill()
            time.sleep(4)  # the outage under test, not a wait
            server.start()

        run.run(restart)
        run.check()
    finally:
        broker.close()
        server.stop()
        use_settings(None)
