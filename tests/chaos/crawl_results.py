"""Crawl results of the chaos scenarios, the run without faults they are compared with, and its end state."""

from __future__ import annotations

import time

import dramatiq

from lib.core import keys
from lib.core.clock import Clock
from lib.core.db import bind_database, database
from lib.core.redis_client import state_redis
from lib.core.settings import Settings, load_settings, use_settings
from lib.market.processing import CrawlResult, ResultProcessor
from lib.market.schema import create_tables
from lib.messaging.broker import build_broker
from lib.messaging.queue_stats import queue_counts
from lib.messaging.queues import ALL_QUEUES
from lib.messaging.routes import PROCESS_RESULT
from lib.scheduling.catalogue import Catalogue
from lib.scheduling.schedule import ScheduleStore
from lib.standins.simulator import MarketSimulator, market
from models import AppliedResult, IpMetadata, IpStatsHourly, ItemSnapshot, ListingEvent, ListingSighting

HOUR = 3600.0
KEYWORDS = ["鬼滅の刃", "呪術廻戦", "ONE PIECE", "推しの子", "チェンソーマン", "葬送のフリーレン", "SPY×FAMILY",
            "ブルーロック", "薬屋のひとりごと", "ダンジョン飯"]


def crawl_items(keyword: str, t: float) -> list[dict]:
    """What a 5+5-page crawl of the market at ``t`` reports (the crawler's message format): the listings the
    simulator's pages serve (each a few short of 120: the site's hidden listings are on none)."""
    served = [pair for statuses in ({market.ON_SALE}, {market.TRADING, market.SOLD_OUT}) for page in range(1, 6)
              for pair in MarketSimulator.page_items(keyword, statuses, page, t)[0]]
    return [{"source_id": item.id, "title": item.name, "price": MarketSimulator.reported_price(item, t),
             "status": "on_sale" if status == market.ON_SALE else "sold", "image_url": "", "item_url": "",
             "created": item.created, "updated": item.updated_at(t)} for item, status in served]


def end_state(settings) -> dict:
    """Everything process_result leaves behind, by keyword (ids may differ between databases)."""
    r = state_redis(settings)
    ips = {ip.id: ip.keyword for ip in IpMetadata.select()}
    snapshots = {(ips[s.ip_id], s.source_id): (s.status, s.price, s.first_seen, s.last_seen)
                 for s in ItemSnapshot.select()}
    pipe = r.pipeline(transaction=False)
    for kw_sid in snapshots:
        ip_id = next(i for i, k in ips.items() if k == kw_sid[0])
        pipe.hgetall(keys.item_state(ip_id, kw_sid[1]))
    states = {kw_sid: {k.decode(): v.decode() for k, v in fields.items()}
              for kw_sid, fields in zip(snapshots, pipe.execute())}
    schedule = ScheduleStore(r)
    try:
        return {
            "stats": {(ips[s.ip_id], s.hour_bucket): (s.inflow, s.outflow, s.sample_count, num(s.avg_price),
                                                       num(s.min_price), num(s.max_price), num(s.liquidity_index),
                                                       num(s.median_price), num(s.p25_price), num(s.p75_price))
                      for s in IpStatsHourly.select()},
            "events": sorted((ips[e.ip_id], e.source_id, e.kind, e.occurrence, e.event_at, e.price, e.listed_price,
                              e.created_at) for e in ListingEvent.select()),
            "sightings": sorted((ips[s.ip_id], s.source_id, s.crawled_at, s.status, s.price)
                                for s in ListingSighting.select()),
            "ledger": sorted((ips[a.ip_id], a.task_id, a.inflow, a.outflow, a.items) for a in AppliedResult.select()),
            "weights": {ip.keyword: ip.weight for ip in IpMetadata.select()},
            "schedule": {ips[i]: schedule.time_of(i) for i in ips},
            "snapshots": snapshots,
            "states": states,
        }
    finally:
        database.close()


def setup_ips(settings, clock) -> dict[str, int]:
    catalogue = Catalogue(ScheduleStore(state_redis(settings)), settings, clock)
    return {kw: catalogue.add(kw).id for kw in KEYWORDS}


def baseline_and_second(ip_ids: dict[str, int], t0: float) -> tuple[list[dict], list[dict]]:
    first = [dict(ip_id=i, task_id=f"crawl-{i}-1", crawled_at=t0, items=crawl_items(kw, t0), pages_crawled=10)
             for kw, i in ip_ids.items()]
    second = [dict(ip_id=i, task_id=f"crawl-{i}-2", crawled_at=t0 + 1800, items=crawl_items(kw, t0 + 1800),
                   pages_crawled=10) for kw, i in ip_ids.items()]
    return first, second


def num(value) -> float | None:
    return None if value is None else float(value)


def count(model) -> int:
    try:
        return model.select().count()
    finally:
        database.close()


def busy(broker) -> int:
    return sum(c["ready"] + c["running"] + c["delayed"] for c in (queue_counts(broker, q) for q in ALL_QUEUES))




def dead_letters(broker) -> int:
    return sum(queue_counts(broker, q)["dead"] for q in ALL_QUEUES)


def reference_run(env: dict, tmp_path) -> tuple[dict, dict[str, int], list[dict], list[dict]]:
    """Baseline and second crawls of every IP applied once, in-process, on a database and Redis of their own:
    the end state a faulty run must reach. Returns it with the IP ids and the two rounds of messages."""
    t0 = time.time() - 2 * HOUR
    t0 -= t0 % HOUR
    clock = Clock()
    reference_env = {**env, "DATABASE_URL": f"sqlite:///{tmp_path / 'reference.sqlite3'}",
                     "REDIS_URL": env["BROKER_URL"], "BROKER_URL": env["REDIS_URL"]}  # (no broker used here)
    reference = load_settings(reference_env)
    use_settings(reference)
    bind_database(reference.database_url_resolved)
    create_tables()
    ip_ids = setup_ips(reference, clock)
    first, second = baseline_and_second(ip_ids, t0)
    processor = ResultProcessor(reference, state_redis(reference), clock)
    for message in first + second:
        processor.apply(CrawlResult.parse(**message))
    expected = end_state(reference)
    state_redis(reference).flushdb()
    database.close()
    assert sum(v[1] for v in expected["stats"].values()) > 100  # real outflow to lose or double count
    return expected, ip_ids, first, second


def faulty_run_setup(env: dict, ip_ids: dict[str, int], first: list[dict]) -> tuple[Settings, dramatiq.Broker]:
    """The same IPs and baselines on the run's own database (``env``), and its broker."""
    settings = load_settings(env)
    use_settings(settings)
    bind_database(settings.database_url_resolved)
    create_tables()
    clock = Clock()
    assert setup_ips(settings, clock) == ip_ids
    processor = ResultProcessor(settings, state_redis(settings), clock)
    for message in first:
        processor.apply(CrawlResult.parse(**message))
    database.close()
    broker = build_broker(settings)
    dramatiq.set_broker(broker)
    return settings, broker


def send_results(broker, messages: list[dict]) -> None:
    for message in messages:
        broker.enqueue(PROCESS_RESULT.message(**message))


def assert_same_end_state(settings: Settings, expected: dict) -> None:
    actual = end_state(settings)
    for part in expected:
        assert actual[part] == expected[part], part
