"""process_result through real workers: concurrency, duplicates, bad input, a database outage."""

import time
from urllib.parse import urlsplit

from lib.core.clock import naive_utc
from lib.core.db import bind_database, database
from lib.core.redis_client import state_redis
from lib.market.schema import create_tables
from lib.messaging.dead_letters import DeadLetters
from lib.scheduling.catalogue import Catalogue
from lib.scheduling.schedule import ScheduleStore
from models import AppliedResult, IpStatsHourly

from .conftest import MYSQL_URL, need
from .helpers import TcpProxy, recreate_mysql_database, wait_for

_NOW = time.time()
T0 = _NOW - _NOW % 3600  # an hour boundary (one reading of the clock, not two)


def items(n_sold, n_new):
    base = [{"source_id": f"s{i}", "status": "sold" if i < n_sold else "on_sale", "price": 1000 + i}
            for i in range(20)]
    return base + [{"source_id": f"n{i}", "status": "on_sale", "price": 500} for i in range(n_new)]


def test_results_of_one_ip_at_once_duplicates_and_bad_input(db, settings, broker, app_actors, start_worker):
    ip = Catalogue(ScheduleStore(state_redis(settings)), settings).add("葬送のフリーレン")
    process_result = app_actors.process_result
    process_result.send(ip.id, "t1", T0 + 1, items(0, 0))  # baseline
    start_worker(broker, threads=4)
    wait_for(lambda: AppliedResult.select().count() == 1, what="the baseline")
    # two different results of the same IP at once, each sent twice
    for task, at, sold, new in (("t2", T0 + 60, 3, 2), ("t3", T0 + 120, 5, 4)):
        for _ in range(2):
            process_result.send(ip.id, task, at, items(sold, new))
    process_result.send(ip.id, "t4", T0 + 130, [{"source_id": "x", "status": "??"}])  # malformed
    wait_for(lambda: AppliedResult.select().count() == 3, timeout=30, what="t2 and t3 applied")
    broker.join("pipeline", timeout=30_000)
    row = IpStatsHourly.get(IpStatsHourly.hour_bucket == naive_utc(T0))
    assert (row.inflow, row.outflow) == (4, 5)  # n0..n3 new; s0..s4 sold — each counted once
    letters = DeadLetters.for_broker(broker, broker.reasons)
    dead = wait_for(lambda: letters.list("pipeline"), what="the malformed result dead-lettered")
    assert "status must be one of" in dead[0].reason


def test_database_down_then_back_applies_exactly_once(settings, broker, app_actors, processed, start_worker, tmp_path):
    """MariaDB behind a proxy we cut for a few seconds mid-run; results wait, retry, apply once."""
    need(MYSQL_URL, "MySQL/MariaDB")
    parts = urlsplit(MYSQL_URL)
    recreate_mysql_database(MYSQL_URL, "animetop_outage")[0].close()
    proxy = TcpProxy(parts.hostname, parts.port or 3306)
    try:
        bind_database(f"mysql://{parts.username or 'root'}@127.0.0.1:{proxy.port}/animetop_outage")
        create_tables()
        ip = Catalogue(ScheduleStore(state_redis(settings)), settings).add("薬屋のひとりごと")
        process_result = app_actors.process_result
        process_result.send(ip.id, "b", T0 + 1, items(0, 0))
        start_worker(broker, threads=2)
        wait_for(lambda: AppliedResult.select().count() == 1, what="the baseline")
        database.close()

        proxy.cut()
        for n in range(5):
            process_result.send(ip.id, f"r{n}", T0 + 10 + n, items(n, n))
        # every attempt while it is cut fails: wait until results have met the outage, then bring it back
        wait_for(lambda: processed.failed["process_result"] >= 2, timeout=30, what="results failing on the outage")
        proxy.restore()

        wait_for(lambda: _count_applied() == 6, timeout=60, what="every result applied after the outage")
        broker.join("pipeline", timeout=30_000)
        row = IpStatsHourly.get(IpStatsHourly.hour_bucket == naive_utc(T0))
        # sold: s0..s3 once each (4); new: n0..n3 once each (4)
        assert (row.inflow, row.outflow) == (4, 4)
        assert DeadLetters.for_broker(broker, broker.reasons).list("pipeline") == []
    finally:
        if not database.is_closed():
            database.close()
        proxy.close()


def _count_applied() -> int:
    try:
        return AppliedResult.select().count()
    except Exception:
        database.close()
        return -1
