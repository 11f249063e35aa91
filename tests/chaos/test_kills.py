"""Scenario 1: the worker SIGKILLed again and again mid-work ends exactly where a run without kills ends.

The Procfile's process types run as real process groups; a killer SIGKILLs
their Dramatiq worker process while it holds messages. The runner restarts
the worker, the broker's heartbeat brings the killed worker's messages back,
and idempotency, locks and the result ledger make the redelivery harmless.
"""

from __future__ import annotations

import random
import threading
import time

import dramatiq
import pytest

from lib.core.db import bind_database, database
from lib.core.redis_client import state_redis
from lib.core.settings import load_settings, use_settings
from lib.market.schema import create_tables
from lib.messaging.broker import build_broker
from lib.messaging.queue_stats import queue_counts
from lib.messaging.queues import ALL_QUEUES, COLLECT, PIPELINE, POOL
from lib.scheduling.catalogue import Catalogue
from lib.scheduling.schedule import ScheduleStore
from models import AppliedResult, ItemSnapshot

from ..helpers import wait_for
from .crawl_results import (
    KEYWORDS,
    assert_same_end_state,
    busy,
    count,
    crawl_items,
    dead_letters,
    faulty_run_setup,
    reference_run,
    send_results,
)


class Killer(threading.Thread):
    """SIGKILLs the process type's Dramatiq worker whenever it holds messages of ``queue``, ``times`` times."""

    def __init__(self, process_type, broker, queue: str, times: int, seed: int = 7) -> None:
        super().__init__(daemon=True)
        self.process_type, self.broker, self.queue, self.times = process_type, broker, queue, times
        self.kills_mid_work = 0
        self.random = random.Random(seed)
        self.stopped = threading.Event()
        self.done_killing = threading.Event()

    def run(self) -> None:
        while self.kills_mid_work < self.times and not self.stopped.is_set():
            if self.live_worker_holds_messages():
                time.sleep(self.random.uniform(0, 0.2))  # somewhere inside the work, if it lasts
                if self.live_worker_holds_messages() and self.process_type.kill_a_worker():
                    self.kills_mid_work += 1
                    time.sleep(0.5)
            time.sleep(0.02)
        self.done_killing.set()

    def live_worker_holds_messages(self) -> bool:
        """A consumer that heartbeats (not one already killed, whose messages wait for requeueing) holds some."""
        client, ns = self.broker.client, self.broker.namespace
        prefix, suffix = f"{ns}:__acks__.", f".{self.queue}"
        now_ms = time.time() * 1000
        for key in client.scan_iter(f"{prefix}*{suffix}"):
            consumer = key.decode()[len(prefix):-len(suffix)]
            beat = client.zscore(f"{ns}:__heartbeats__", consumer)
            if beat is not None and now_ms - beat < 1500 and client.scard(key):
                return True
        return False


@pytest.mark.mysql
@pytest.mark.parametrize("database_url", ["mysql"], indirect=True)  # production's database; SQLite in the others
def test_worker_killed_repeatedly_mid_process_result(env, database_url, process_types, tmp_path):
    expected, ip_ids, first, second = reference_run(env, tmp_path)
    chaos_env = {**env, "DATABASE_URL": database_url, "WORKER_PROCESSES": "1", "WORKER_THREADS": "2",
                 "LOCK_TTL": "3s"}
    settings, broker = faulty_run_setup(chaos_env, ip_ids, first)
    worker = process_types("worker", chaos_env)
    killer = Killer(worker, broker, PIPELINE, times=2)
    send_results(broker, second)
    killer.start()
    try:
        wait_for(lambda: count(AppliedResult) == 2 * len(KEYWORDS) and not busy(broker), timeout=150,
                 interval=0.5, what="every result applied despite the kills")
    finally:
        killer.stopped.set()
    assert killer.kills_mid_work >= 2, "the killer never caught the worker holding a message"
    assert worker.proc.poll() is None  # the runner stayed up and restarted its worker
    assert dead_letters(broker) == 0
    assert_same_end_state(settings, expected)


@pytest.mark.mysql
@pytest.mark.parametrize("database_url", ["mysql"], indirect=True)  # the row-locking claim; SQLite's in test_pool
def test_worker_killed_repeatedly_mid_fill(env, database_url, process_types):
    """Fills and mark_used run in a worker that keeps getting killed while a consumer drains the pool:
    every row is handed out exactly once and ends up used."""
    from lib.messaging.routes import FILL_POOL, MARK_USED, Route
    from lib.text_pools.pool import PoolConsumer, PoolEmpty, load_rows
    from models import Title
    from models.pool import USED

    # enough rows for several fills: a fill claims its rows in one range UPDATE now, so each is short, and the
    # killer needs two of them (or a mark_used) in progress to catch
    total = 12_000
    chaos_env = {**env, "DATABASE_URL": database_url, "WORKER_PROCESSES": "1", "WORKER_THREADS": "2",
                 "POOL_SIZE": "3000", "POOL_THRESHOLD": "1500", "LOCK_BUSY_RETRY_DELAY": "500ms"}
    settings = load_settings(chaos_env)
    use_settings(settings)
    bind_database(database_url)
    create_tables()
    load_rows("titles", 1, 1, [f"タイトル {i}" for i in range(total)])
    broker = build_broker(settings)
    dramatiq.set_broker(broker)

    def send(route: Route, **kwargs) -> None:
        broker.enqueue(route.message(**kwargs))

    consumer = PoolConsumer(lambda: state_redis(settings), settings,
                            send_mark_used=lambda kind, group_id, ids: send(MARK_USED, kind=kind,
                                                                             group_id=group_id, ids=ids),
                            request_fill=lambda kind, group_id: send(FILL_POOL, kind=kind, group_id=group_id))
    worker = process_types("worker", chaos_env)
    send(FILL_POOL, kind="titles", group_id=1)
    killer = Killer(worker, broker, POOL, times=2)
    killer.start()
    handed: list[int] = []
    deadline = time.monotonic() + 150
    try:
        while len(handed) < total:
            assert time.monotonic() < deadline, f"only {len(handed)} of {total} rows handed out"
            try:
                handed.append(consumer.pop("titles", 1).id)
            except PoolEmpty:
                # rows a killed filler claimed wait for a fill to reconcile them (the periodic fill's job)
                send(FILL_POOL, kind="titles", group_id=1)
                time.sleep(0.5)
            if not killer.done_killing.is_set():
                time.sleep(0.002)  # a consumer at a few hundred rows a second while the killer is at work
    finally:
        killer.stopped.set()
        consumer.close()
    assert killer.kills_mid_work >= 2, "the killer never caught the worker holding a message"
    assert len(set(handed)) == total  # every row once: nothing handed out twice, nothing lost
    # as long as the results' wait above: a mark_used that met a busy lock or a slow database is retried after
    # a backoff, and the killed worker's messages come back after the broker's heartbeat timeout
    try:
        wait_for(lambda: _used(Title, USED) == total and not busy(broker), timeout=150, interval=0.5,
                 what="every handed-out row marked used")
    except AssertionError as timed_out:  # say where it stood: rows left unmarked, or messages still waiting
        counts = {queue: queue_counts(broker, queue) for queue in ALL_QUEUES}
        raise AssertionError(f"{timed_out}: {_used(Title, USED)} of {total} used; messages by queue: "
                             f"{ {q: c for q, c in counts.items() if any(c.values())} }") from None
    assert worker.proc.poll() is None
    assert dead_letters(broker) == 0


def _used(model, status) -> int:
    try:
        return model.select().where(model.status == status).count()
    finally:
        database.close()


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)  # the run_id claim is the same SQL on both
def test_worker_killed_repeatedly_mid_collect(env, database_url, process_types):
    """A collection run whose worker keeps getting killed fills the sink exactly as an undisturbed run does."""
    from lib.collection.collector import Collector, DatabaseSink, add_task, find_task
    from lib.collection.export_api import ExportApiClient
    from lib.messaging.routes import COLLECT_BATCH
    from lib.standins.fake_export_api import FakeExportApi

    from ..test_collect import DAY_ROWS, fresh_ids, sink_ids

    api = FakeExportApi(rate_limit=1000, latency=0.05).start()  # ~50 windows of 0.05 s: the kills land in them
    try:
        chaos_env = {**env, "DATABASE_URL": database_url, "WORKER_PROCESSES": "1", "WORKER_THREADS": "2",
                     "COLLECT_API_URL": api.url, "LOCK_TTL": "3s"}
        settings = load_settings(chaos_env)
        use_settings(settings)
        bind_database(database_url)
        create_tables()
        api.add_task("chaos", rows=10 * DAY_ROWS)  # ten days of rows, seven of them fresh
        task = add_task("chaos", "fake", key_field="id", batch_size=20)
        broker = build_broker(settings)
        dramatiq.set_broker(broker)
        worker = process_types("worker", chaos_env)
        first = Collector(ExportApiClient(api.url, "demo", "demo"), DatabaseSink()).start(find_task("chaos"))
        broker.enqueue(COLLECT_BATCH.message(**first.as_kwargs()))
        database.close()
        killer = Killer(worker, broker, COLLECT, times=2)
        killer.start()
        try:
            wait_for(lambda: _run_finished("chaos") and not busy(broker), timeout=150, interval=0.5,
                     what="the run to finish despite the kills")
        except AssertionError as timed_out:  # say where it stood: the run, the messages, the worker's own log
            counts = {queue: queue_counts(broker, queue) for queue in ALL_QUEUES}
            raise AssertionError(
                f"{timed_out}: {_run_state('chaos')}; {killer.kills_mid_work} kill(s); messages by queue: "
                f"{ {q: c for q, c in counts.items() if any(c.values())} }; the worker's log ends:\n"
                f"{_tail(worker.log)}") from None
        finally:
            killer.stopped.set()
        assert killer.kills_mid_work >= 2, "the killer never caught the worker holding a message"
        assert sink_ids(task) == fresh_ids(api, "chaos")  # every fresh row, none twice (unique per key)
        assert worker.proc.poll() is None
        assert dead_letters(broker) == 0
    finally:
        api.stop()
        database.close()


def _run_state(task_id: str) -> str:
    from lib.collection.collector import find_task

    try:
        task = find_task(task_id)
        return (f"run {task.run_id} at offset {task.run_current_offset} (from {task.run_start_offset} down to "
                f"{task.run_end_offset}), last run from {task.last_start_offset}")
    finally:
        database.close()


def _tail(log, lines: int = 30) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:]) if log and log.exists() else "(no log)"


def _run_finished(task_id: str) -> bool:
    from lib.collection.collector import find_task

    try:
        task = find_task(task_id)
        return task.run_id is None and task.last_start_offset is not None
    finally:
        database.close()


def test_crawler_killed_repeatedly_mid_crawl(env, process_types, chromium, tmp_path):
    """Crawls whose crawler keeps getting killed (Chromium and all) are redone: each IP's result is applied
    once and holds exactly what the (frozen) market shows, the IPs are released, no Chromium is left."""
    from lib.messaging.in_flight import InFlight
    from lib.scheduling.tick import Scheduler
    from lib.standins.simulator import MarketSimulator

    from ..helpers import processes_matching

    sim = MarketSimulator(speed=0).start()  # a frozen market: the truth does not move between attempts
    try:
        chaos_env = {**env, "MERCARI_BASE_URL": sim.url, "CHROMIUM_PATH": chromium, "CHROMIUM_NO_SANDBOX": "true",
                     "CRAWLER_THREADS": "1", "WORKER_PROCESSES": "1", "WORKER_THREADS": "2",
                     "WORKER_SHUTDOWN_TIMEOUT": "20s", "LOCK_TTL": "3s"}
        settings = load_settings(chaos_env)
        use_settings(settings)
        bind_database(settings.database_url_resolved)
        create_tables()
        r = state_redis(settings)
        ip_ids = {kw: Catalogue(ScheduleStore(r), settings).add(kw).id for kw in KEYWORDS[:3]}
        broker = build_broker(settings)
        dramatiq.set_broker(broker)
        crawler = process_types("crawler", chaos_env)
        worker = process_types("worker", chaos_env)
        sim.set_mode("slow", delay_ms=300)  # a crawl lasts seconds: the kills land inside one
        ScheduleStore(r).schedule_many({i: 0 for i in ip_ids.values()})
        assert sorted(Scheduler(settings, r, broker).tick().enqueued) == sorted(ip_ids.values())
        killer = Killer(crawler, broker, "crawl", times=2)
        killer.start()
        try:
            wait_for(lambda: count(AppliedResult) == 3 and not InFlight(r).members() and not busy(broker),
                     timeout=240, interval=0.5, what="every IP crawled and applied despite the kills")
        except AssertionError as e:  # what was left, to find the race by (the run before took under 45 s)
            raise AssertionError(f"{e}: {count(AppliedResult)} of 3 results applied, in flight "
                                 f"{sorted(InFlight(r).members())}, {busy(broker)} message(s) queued or unacked, "
                                 f"{killer.kills_mid_work} kill(s) mid-crawl, done killing "
                                 f"{killer.done_killing.is_set()}, crawler exited {crawler.proc.poll()}") from e
        finally:
            killer.stopped.set()
        assert killer.kills_mid_work >= 2, "the killer never caught the crawler holding a crawl"
        assert crawler.proc.poll() is None
        assert dead_letters(broker) == 0
        t = sim.clock.now()
        for keyword, ip_id in ip_ids.items():
            truth = {item["source_id"]: item["status"] for item in crawl_items(keyword, t)}
            try:
                got = {s.source_id: s.status for s in ItemSnapshot.select().where(ItemSnapshot.ip_id == ip_id)}
                assert AppliedResult.select().where(AppliedResult.ip_id == ip_id).count() == 1
            finally:
                database.close()
            assert got == truth, keyword
        assert crawler.stop() == 0 and worker.stop() == 0
    finally:
        sim.stop()
    # nothing the process types started is left (Chromium inherits their DATA_DIR)
    assert processes_matching(f"DATA_DIR={env['DATA_DIR']}\0".encode(), "environ") == []
