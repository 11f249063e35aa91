"""Scenario 5: two schedulers and two pools of workers and crawlers on one broker, Redis and database.

Everything runs twice, as on two machines: ``animetop run scheduler`` ×2
(two periodiq processes firing the same ticks), ``worker`` ×2 and
``crawler`` ×2, against the market simulator on an accelerated clock. The
simulator records every page it serves, so an IP crawled twice at once would
show as two crawls of its keyword interleaved.
"""

from __future__ import annotations

import json
import time
from collections import Counter, defaultdict

import dramatiq

from lib.collection.collector import COLLECT_JOB, add_task
from lib.core.clock import Clock, set_clock
from lib.core.db import bind_database, database
from lib.core.redis_client import state_redis
from lib.core.settings import load_settings, use_settings
from lib.market.schema import create_tables
from lib.messaging.broker import build_broker
from lib.messaging.in_flight import InFlight
from lib.messaging.queue_stats import queue_counts
from lib.messaging.queues import ALL_QUEUES, CRAWL
from lib.messaging.routes import FILL_ALL_POOLS, FILL_POOL, MARK_USED, SCHEDULE_TICK, START_DUE_COLLECTIONS, Route
from lib.operations.demo import demo_env
from lib.scheduling.catalogue import Catalogue
from lib.scheduling.schedule import ScheduleStore
from lib.standins.fake_export_api import FakeExportApi
from lib.standins.simulator import MarketSimulator
from lib.text_pools.pool import PoolConsumer, PoolEmpty, load_rows
from models import AppliedResult, IpMetadata, JobExecutionState

from ..helpers import free_port, wait_for
from ..test_collect import DAY_ROWS, sink_ids
from .crawl_results import KEYWORDS, dead_letters

SPEED = 120.0


def working(broker) -> int:
    """Messages ready or being run (delayed ones are follow-up ticks that will find nothing due)."""
    return sum(c["ready"] + c["running"] for c in (queue_counts(broker, q) for q in ALL_QUEUES))


def crawls_pending(broker) -> Counter:
    """Crawl tasks per IP in the broker: queued or taken by a crawler (the ``.msgs`` hash), or delayed."""
    client, ns = broker.client, broker.namespace
    payloads = client.hvals(f"{ns}:{CRAWL}.msgs") + client.hvals(f"{ns}:{CRAWL}.DQ.msgs")
    return Counter(dramatiq.get_encoder().decode(raw)["kwargs"]["ip_id"] for raw in payloads)


def send(broker, route: Route, **kwargs) -> None:
    broker.enqueue(route.message(**kwargs))


def test_two_schedulers_and_two_worker_pools(env, process_types, chromium, tmp_path):
    anchor = time.time()
    clock = Clock(SPEED, anchor)
    served = tmp_path / "served.jsonl"
    sim = MarketSimulator(clock=clock, record=str(served)).start()
    api = FakeExportApi(rate_limit=1000).start()
    try:
        app_env = {**demo_env(tmp_path / "var", sim.url, SPEED, anchor, chromium),
                   **{k: env[k] for k in ("REDIS_URL", "BROKER_URL", "DATABASE_URL")},
                   "SCHEDULER_PAGES_ON_SALE": "1", "SCHEDULER_PAGES_SOLD": "1", "CRAWLER_THREADS": "1",
                   "WORKER_THREADS": "2", "COLLECT_API_URL": api.url, "POOL_SIZE": "3000",
                   "POOL_THRESHOLD": "1500", "LOCK_BUSY_RETRY_DELAY": "300ms", "LOG_LEVEL": "INFO",
                   "BROKER_HEARTBEAT_TIMEOUT": "3s", "SCHEDULER_BASE_INTERVAL": "10m",
                   "SCHEDULER_MIN_INTERVAL": "10m", "SCHEDULER_MAX_INTERVAL": "10m"}  # 5 s of real time
        settings = load_settings(app_env)
        use_settings(settings)
        set_clock(clock)
        bind_database(settings.database_url_resolved)
        create_tables()
        r = state_redis(settings)
        catalogue = Catalogue(ScheduleStore(r), settings, clock)
        for keyword in KEYWORDS[:4]:
            catalogue.add(keyword)
        total_rows = 12_000
        load_rows("titles", 1, 1, [f"タイトル {i}" for i in range(total_rows)])
        api.add_task("twice", rows=3 * DAY_ROWS)  # all fresh, whatever the accelerated clock says
        task = add_task("twice", "fake", key_field="id", batch_size=40, interval=24 * 3600)
        database.close()
        broker = build_broker(settings)
        dramatiq.set_broker(broker)

        started = [process_types(kind, {**app_env, "METRICS_PORT": str(free_port(2))})
                   for kind in ("scheduler", "worker", "crawler") * 2]
        # pages so slow that crawls queue up past the IPs' intervals: the IPs fall due again while their
        # crawl is still queued or running, which only the in-flight set keeps from being crawled twice
        sim.set_mode("slow", delay_ms=3000)
        # what two periodiq processes do at the same minute, without waiting for one (the test may not last
        # until a minute boundary; test_redis_loss waits for one)
        for _ in range(2):
            send(broker, SCHEDULE_TICK)
            send(broker, START_DUE_COLLECTIONS)
            send(broker, FILL_ALL_POOLS)

        consumer = PoolConsumer(lambda: r, settings,
                                send_mark_used=lambda kind, group_id, ids: send(
                                    broker, MARK_USED, kind=kind, group_id=group_id, ids=ids),
                                request_fill=lambda kind, group_id: send(broker, FILL_POOL, kind=kind,
                                                                         group_id=group_id))
        handed: list[int] = []
        most_pending, samples = 0, 0
        ends = time.monotonic() + 35
        # past the 35 s, on until the pools have handed out more than one fill's rows (a fill requested at the
        # threshold comes from workers busy with the crawls: later on a loaded machine), within a bound
        bound = time.monotonic() + 150
        next_sample = time.monotonic()
        try:
            while time.monotonic() < ends or (len(handed) <= 3000 and time.monotonic() < bound):
                try:
                    handed.append(consumer.pop("titles", 1).id)
                    time.sleep(0.004)
                except PoolEmpty:
                    time.sleep(0.2)
                if time.monotonic() >= next_sample:
                    pending = crawls_pending(broker)
                    # no tick double-enqueues: at most one crawl task per IP queued, delayed or running
                    assert all(n == 1 for n in pending.values()), pending
                    most_pending, samples = max(most_pending, sum(pending.values())), samples + 1
                    next_sample = time.monotonic() + 0.3
        finally:
            consumer.close()
        assert samples > 60 and most_pending >= 3  # the queue was really looked at while it was full
        for p in started:
            if p.kind == "scheduler":
                assert p.stop() == 0
        # the accelerated clock makes IPs due every few seconds, and the workers' follow-up ticks would
        # go on crawling them: take them off the schedule and let what is in flight finish
        for ip in catalogue.list():
            catalogue.disable(ip.id)
        database.close()
        wait_for(lambda: not InFlight(r).members() and not working(broker), timeout=120, interval=0.5,
                 what="the crawls in flight and every queue to drain")
    finally:
        sim.stop()
        api.stop()
        set_clock(Clock())

    # no IP crawled twice at once: each keyword's served pages alternate on-sale page, sold page
    requests = defaultdict(list)
    for line in served.read_text().splitlines():
        req = json.loads(line)
        requests[req["keyword"]].append(req)
    try:
        ips = {ip.keyword: ip.id for ip in IpMetadata.select()}
        for keyword, reqs in requests.items():
            kinds = [tuple(q["statuses"]) for q in sorted(reqs, key=lambda q: q["t"])]
            assert kinds == [("on_sale",), ("sold_out", "trading")] * (len(kinds) // 2), keyword
            crawls = [a.crawled_at for a in AppliedResult.select().where(AppliedResult.ip_id == ips[keyword])
                      .order_by(AppliedResult.crawled_at)]
            assert len(crawls) == len(kinds) // 2, keyword  # each crawl applied once
            # no tick double-enqueued an IP: its crawls are a scheduled interval apart, not seconds
            gaps = [b - a for a, b in zip(crawls, crawls[1:])]
            assert all(gap >= settings.scheduler_min_interval * 0.9 for gap in gaps), (keyword, gaps)
        assert len(requests) == 4 and sum(len(v) for v in requests.values()) >= 8  # every IP crawled
        # no pool row handed out twice, and the fills of both pools kept up
        assert len(handed) == len(set(handed)) and len(handed) > 3000, (len(handed), len(set(handed)))
        # one collection run, not two overlapping ones: every fresh row, one execution recorded
        assert sink_ids(task) == set(range(3 * DAY_ROWS))
        state = JobExecutionState.get((JobExecutionState.collector_name == COLLECT_JOB)
                                            & (JobExecutionState.param_key == str(task.id)))
        assert state.execution_count == 1
    finally:
        database.close()
    assert dead_letters(broker) == 0
