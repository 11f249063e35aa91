"""A scheduler tick with 100,000 scheduled IPs of which 1,000 are due, against the raw floor:
one ZRANGEBYSCORE plus one pipelined enqueue of the same 1,000 messages."""

from __future__ import annotations

import tempfile
import time
from datetime import datetime
from pathlib import Path

from lib.core.clock import FrozenClock
from lib.core.db import bind_database, database
from lib.core.redis_client import state_redis
from lib.core.settings import load_settings, use_settings
from lib.market.schema import create_tables
from lib.messaging.broker import build_broker, enqueue_many
from lib.messaging.queues import CRAWL
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
        broker.close()
        database.close()


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
