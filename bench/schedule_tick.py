"""A scheduler tick with 100,000 scheduled IPs of which 1,000 are due, against the raw floor:
one ZRANGEBYSCORE plus one pipelined enqueue of the same 1,000 messages.

And the request budget's planning (``lib.scheduling.budget_plan.price_if_due``, run by a tick every 10 minutes) over
as many IPs' costs (flows drawn heavy-tailed, a budget that binds), against the least any plan does: one HGETALL of
the costs, each one's fields parsed, and each IP's interval at a given price computed once. What the planning adds
is finding the price (two sorts of the IPs' bounds and a sweep); both grow with the IPs."""

from __future__ import annotations

import dataclasses
import math
import random
import tempfile
import time
from datetime import datetime
from pathlib import Path

from lib.core import keys
from lib.core.clock import FrozenClock
from lib.core.db import bind_database, database
from lib.core.redis_client import state_redis
from lib.core.settings import load_settings, use_settings
from lib.market.schema import create_tables
from lib.messaging.broker import build_broker, enqueue_many
from lib.messaging.queues import CRAWL
from lib.scheduling.budget_plan import CostStore, CrawlCost, price_if_due
from lib.scheduling.schedule import IpDue, ScheduleStore
from lib.scheduling.tick import Scheduler, crawl_message
from models import IpMetadata

from .common import bench_settings, report

T0 = 1_800_000_000.0


def run(scheduled: int = 100_000, due: int = 1000, repeat: int = 5) -> None:
    print(f"schedule_tick: {scheduled:,} IPs scheduled, {due:,} due (floor: ZRANGEBYSCORE + pipelined enqueue)")
    with tempfile.TemporaryDirectory() as tmp, bench_settings(Path(tmp)) as base:
        settings = load_settings({**_env_of(base),
                                  "SCHEDULER_BATCH_SIZE": str(due), "SCHEDULER_BACKPRESSURE_THRESHOLD": "10000000"})
        use_settings(settings)
        bind_database(settings.database_url_resolved)
        create_tables()
        now = datetime(2027, 1, 1)
        rows = [{"keyword": f"kw{i}", "display_name": f"kw{i}", "weight": 1.0, "created_at": now, "updated_at": now}
                for i in range(scheduled)]
        with database.atomic():
            for start in range(0, scheduled, 5000):
                IpMetadata.insert_many(rows[start:start + 5000]).execute()
        ids = [ip.id for ip in IpMetadata.select(IpMetadata.id)]
        r = state_redis(settings)
        broker = build_broker(settings)
        broker.declare_queue(CRAWL)
        store = ScheduleStore(r)
        clock = FrozenClock(T0)

        def reset() -> None:
            r.flushdb()
            broker.flush(CRAWL)
            store.schedule_many({ip: (T0 - 1 if n < due else T0 + 10_000 + n) for n, ip in enumerate(ids)})

        tick_times, floor_times = [], []
        for _ in range(repeat):
            reset()
            scheduler = Scheduler(settings, r, broker, clock)
            r.set("animetop:schedule:janitor_last_sweep", T0)
            start = time.perf_counter()
            result = scheduler.tick()
            tick_times.append(time.perf_counter() - start)
            assert len(result.enqueued) == due, len(result.enqueued)

            reset()
            start = time.perf_counter()
            rows = store.due(T0, limit=due)
            enqueue_many(broker, [crawl_message(IpDue(int(i), f"kw{i}", 1.0, True, None), f"t{i}") for i, _ in rows])
            floor_times.append(time.perf_counter() - start)
        report("tick (seconds)", min(tick_times), min(floor_times))
        _planning(settings, r, clock, ids, repeat)
        broker.close()
        database.close()


def _planning(settings, r, clock, ids, repeat: int) -> None:
    rng = random.Random(1)
    costs = {ip: CrawlCost(flow=min(2000.0, 0.1 * rng.paretovariate(0.8)), pages=rng.choice([2, 3, 6, 10]),
                           least=3600.0, most=12 * 3600.0, at=T0, outran=rng.random() < 0.05) for ip in ids}
    budget = 0.5 * sum(c.requests_per_hour(c.least) for c in costs.values())
    planned = dataclasses.replace(settings, crawl_rate_limit=math.ceil(budget / 60), scheduler_budget_share=1.0)
    plan_times, floor_times = [], []
    for _ in range(repeat):
        r.flushdb()
        store = CostStore(r)
        for start in range(0, len(ids), 5000):
            r.hset(keys.CRAWL_COSTS, mapping={str(ip): costs[ip].encode() for ip in ids[start:start + 5000]})
        start = time.perf_counter()
        price = price_if_due(planned, r, clock.now())
        plan_times.append(time.perf_counter() - start)
        assert price is not None and price.price > 0 and price.ips == len(ids), price
        start = time.perf_counter()
        read = [[float(v) for v in value.split()] for value in r.hgetall(keys.CRAWL_COSTS).values()]
        root = math.sqrt(price.price)
        spent = sum(p * 3600.0 / (most if f <= 0 else min(max(math.sqrt(2 * p / f) * root * 3600.0, least), most))
                    for f, p, least, most, *_ in read)
        floor_times.append(time.perf_counter() - start)
        assert len(read) == len(ids) and spent > 0
        store.clear_price()
    report("planning within the budget (seconds)", min(plan_times), min(floor_times))


def _env_of(settings) -> dict[str, str]:
    return {"DATA_DIR": settings.data_dir, "REDIS_URL": settings.state_redis_url,
            "BROKER_URL": settings.broker_url_resolved, "DATABASE_URL": settings.database_url_resolved,
            "LOG_LEVEL": "WARNING"}


def main() -> None:
    # the same 1,000 due among 10x more scheduled: the tick's cost should not move
    run(scheduled=10_000)
    run(scheduled=100_000)


if __name__ == "__main__":
    main()
