"""Filling a 5,000-row pool against the floor (one SELECT plus one pipelined LPUSH of the same rows, in the
same run), and pops per second with 1 and 8 consumer threads.

The floor reads the rows as Peewee model instances (as when the ratio was first set); the fill reads tuples,
so a second line compares it with a floor that reads tuples too: what is left over is the claim (one UPDATE
of the rows and its commit), the fill lock and the execution record."""

from __future__ import annotations

import json
import tempfile
import threading
import time
from pathlib import Path

from lib.core.db import bind_database, database
from lib.core.redis_client import state_redis
from lib.core.settings import load_settings, use_settings
from lib.market.schema import create_tables
from lib.text_pools.pool import PoolConsumer, PoolEmpty, PoolFiller, load_rows, mark_used, model_of
from models import Title
from models.pool import AVAILABLE

from .common import bench_settings, report


def run(rows: int = 5000, repeat: int = 3) -> None:
    print(f"fill_pool: {rows:,} rows (floor: one SELECT + one pipelined LPUSH)")
    with tempfile.TemporaryDirectory() as tmp, bench_settings(Path(tmp)) as base:
        settings = load_settings({"DATA_DIR": base.data_dir, "REDIS_URL": base.state_redis_url,
                                  "BROKER_URL": base.broker_url_resolved,
                                  "DATABASE_URL": base.database_url_resolved, "POOL_SIZE": str(rows),
                                  "POOL_THRESHOLD": str(rows)})
        use_settings(settings)
        bind_database(settings.database_url_resolved)
        create_tables()
        r = state_redis(settings)
        for group in range(1, 2 * repeat + 3):  # fresh groups: each fill and each floor reads unclaimed rows
            load_rows("titles", group, 1, [f"タイトル {group}-{i}" for i in range(rows)])
        fills, floors, tuple_floors = [], [], []
        for k in range(repeat):
            start = time.perf_counter()
            PoolFiller(r, settings).fill("titles", 2 * k + 1)
            fills.append(time.perf_counter() - start)
            query = (Title.select(Title.id, Title.text).where((Title.group_id == 2 * k + 2)
                                                              & (Title.status == AVAILABLE))
                     .order_by(Title.batch_id.desc(), Title.id).limit(rows))
            start = time.perf_counter()
            picked = [(p.id, p.text) for p in query]
            r.lpush("bench:floor", *[json.dumps({"id": i, "text": t}, ensure_ascii=False) for i, t in picked])
            floors.append(time.perf_counter() - start)
            r.delete("bench:floor")
            start = time.perf_counter()
            picked = list(query.clone().tuples())
            r.lpush("bench:floor", *[json.dumps({"id": i, "text": t}, ensure_ascii=False) for i, t in picked])
            tuple_floors.append(time.perf_counter() - start)
            r.delete("bench:floor")
        report("fill 5,000 (s)", min(fills), min(floors))
        report("fill 5,000 against a floor reading tuples (s)", min(fills), min(tuple_floors))

        for threads, group in ((1, 2 * repeat + 1), (8, 2 * repeat + 2)):
            PoolFiller(r, settings).fill("titles", group)
            consumer = PoolConsumer(lambda: r, settings, send_mark_used=lambda k, g, ids: mark_used(model_of(k), ids))
            count = [0] * threads

            def pop(slot: int, consumer: PoolConsumer = consumer, group: int = group, threads: int = threads,
                    count: list[int] = count) -> None:
                for _ in range(rows // threads):
                    try:
                        consumer.pop("titles", group)
                        count[slot] += 1
                    except PoolEmpty:
                        return

            workers = [threading.Thread(target=pop, args=(i,)) for i in range(threads)]
            start = time.perf_counter()
            [w.start() for w in workers]
            [w.join() for w in workers]
            elapsed = time.perf_counter() - start
            consumer.close()
            print(f"  pops/s with {threads} thread(s): {sum(count) / elapsed:,.0f}")
        database.close()
        use_settings(None)


def main() -> None:
    run()


if __name__ == "__main__":
    main()
