"""Rows per second from the fake export API into the database sink, for 100,000 rows, against the floor:
fetching the same pages and bulk-inserting the same rows with no framework, in the same run."""

from __future__ import annotations

import json
import tempfile
import time
import urllib.request
from pathlib import Path

from lib.collection.collector import Collector, DatabaseSink, add_task, find_task
from lib.collection.export_api import ExportApiClient
from lib.core.clock import Clock
from lib.core.db import bind_database, database
from lib.market.schema import create_tables
from lib.standins.fake_export_api import FakeExportApi
from models import CollectedRow

from .common import bench_settings, report


def collect(collector: Collector, task_id: str) -> None:
    msg = collector.start(find_task(task_id))
    while msg is not None:
        msg = collector.batch(msg).next_message


def floor(api: FakeExportApi, task_id: str, total: int, batch: int, task_pk: int) -> None:
    token_req = urllib.request.Request(f"{api.url}/token", method="POST", headers={"Content-Type": "application/json"},
                                       data=json.dumps({"username": "demo", "password": "demo",
                                                        "grant_type": "password"}).encode())
    token = json.loads(urllib.request.urlopen(token_req).read())["data"]["access_token"]
    offset = total - batch
    while offset >= 0:
        req = urllib.request.Request(f"{api.url}/data/all?taskId={task_id}&offset={offset}&size={batch}",
                                     headers={"Authorization": f"Bearer {token}"})
        rows = json.loads(urllib.request.urlopen(req).read())["data"]["data"]
        with database.atomic():
            CollectedRow.insert_many([{"task": task_pk, "record_key": str(r["id"]), "data": json.dumps(r),
                                       "collected_at": "2027-01-01 00:00:00"} for r in rows]).execute()
        offset -= batch


def run(rows: int = 100_000, batch: int = 100) -> None:
    print(f"collect_batch: {rows:,} rows from the fake export API into the database sink (floor: raw fetch + insert)")
    with tempfile.TemporaryDirectory() as tmp, bench_settings(Path(tmp)) as settings:
        bind_database(settings.database_url_resolved)
        create_tables()
        api = FakeExportApi(rate_limit=1_000_000).start()
        # every row fresh (1 minute apart), so the whole source is collected
        api.add_task("bench", rows, spacing_minutes=0.05)
        api.add_task("floor", rows, spacing_minutes=0.05)
        collector = Collector(ExportApiClient(api.url, "demo", "demo"), DatabaseSink(), Clock())
        task = add_task("bench", "fake", key_field="id", batch_size=batch, filter_days=3650)
        start = time.perf_counter()
        collect(collector, "bench")
        ours = time.perf_counter() - start
        assert CollectedRow.select().where(CollectedRow.task == task.id).count() == rows
        start = time.perf_counter()
        floor(api, "floor", rows, batch, task_pk=999_999)
        raw = time.perf_counter() - start
        report("seconds for 100,000 rows", ours, raw)
        print(f"  rows/s: ours {rows / ours:,.0f}, floor {rows / raw:,.0f}")
        api.stop()
        database.close()


def main() -> None:
    run()


if __name__ == "__main__":
    main()
