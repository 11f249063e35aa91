"""The leaderboard with its caches (alert rules: tests/market/test_alerts.py)."""

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest
import redis as redis_lib
from redis.backoff import NoBackoff
from redis.retry import Retry

from lib.core import keys
from lib.core.clock import FrozenClock, naive_utc
from lib.core.redis_client import state_redis
from lib.market.processing import CrawlResult, ResultProcessor
from lib.market.read_side import ReadSide
from lib.scheduling.catalogue import Catalogue
from lib.scheduling.schedule import ScheduleStore

H = 3600.0
T0 = 1_800_000_000.0 - (1_800_000_000.0 % H)
HOUR0 = naive_utc(T0)


@pytest.fixture
def ip(db, settings):
    return Catalogue(ScheduleStore(state_redis(settings)), settings, FrozenClock(T0)).add("チェンソーマン")


def seed_results(settings, clock):
    r = state_redis(settings)
    catalogue = Catalogue(ScheduleStore(r), settings, clock)
    proc = ResultProcessor(settings, r, clock)
    ips = [catalogue.add(k) for k in ("鬼滅の刃", "呪術廻戦", "ワンピース")]
    plans = {ips[0].id: (5, 1), ips[1].id: (2, 6), ips[2].id: (1, 3)}  # new listings, sales
    for ip in ips:
        n_new, n_sold = plans[ip.id]
        base = [{"source_id": f"s{i}", "status": "on_sale", "price": 1000} for i in range(10)]
        proc.apply(CrawlResult.parse(ip.id, f"{ip.id}-1", T0, base))
        second = [{"source_id": f"s{i}", "status": "sold" if i < n_sold else "on_sale", "price": 1000}
                  for i in range(10)] + [{"source_id": f"n{i}", "status": "on_sale", "price": 1} for i in range(n_new)]
        proc.apply(CrawlResult.parse(ip.id, f"{ip.id}-2", T0 + 60, second))
    return ips, proc


def test_leaderboard_order_cache_and_invalidation(db, settings):
    clock = FrozenClock(T0 + 120)
    ips, proc = seed_results(settings, clock)
    r = state_redis(settings)
    side = ReadSide(settings, r, clock)
    assert [row["ip_id"] for row in side.leaderboard("inflow", 24)] == [ips[0].id, ips[1].id, ips[2].id]
    assert [row["ip_id"] for row in side.leaderboard("outflow", 24)] == [ips[1].id, ips[2].id, ips[0].id]
    # liquidity ties (6/2 and 3/1) break on outflow
    by_liq = side.leaderboard("liquidity", 24, limit=2)
    assert [(x["ip_id"], x["liquidity"]) for x in by_liq] == [(ips[1].id, 3.0), (ips[2].id, 3.0)]
    assert r.exists(keys.leaderboard(24))
    assert 0 < r.pttl(keys.leaderboard(24)) <= settings.cache_ttl * 1000  # served at most CACHE_TTL
    detail = side.ip_detail(ips[1].id, 24)
    assert detail["series"][0]["outflow"] == 6 and detail["series"][0]["hour"].endswith("+09:00")
    # its newest crawl, in the display time zone: the window holds nothing after it yet
    assert detail["last_crawled_at"] == datetime.fromtimestamp(T0 + 60, ZoneInfo("Asia/Tokyo")).isoformat()
    assert r.exists(keys.ip_cache(ips[1].id, "detail:24"))

    more = [{"source_id": f"s{i}", "status": "sold", "price": 1000} for i in range(10)]
    proc.apply(CrawlResult.parse(ips[0].id, f"{ips[0].id}-3", T0 + 90, more))  # ip 0 sells 9 more
    # the leaderboard is kept (until CACHE_TTL, or refreshed): a result no longer drops every IP's ranking
    assert side.leaderboard("outflow", 24)[0]["ip_id"] == ips[1].id
    assert r.exists(keys.ip_cache(ips[1].id, "detail:24"))  # another IP's detail is still good
    proc.apply(CrawlResult.parse(ips[1].id, f"{ips[1].id}-3", T0 + 90, []))
    assert not r.exists(keys.ip_cache(ips[1].id, "detail:24"))  # its own is not
    assert side.ip_detail(ips[1].id, 24)["last_crawled_at"] == \
        datetime.fromtimestamp(T0 + 90, ZoneInfo("Asia/Tokyo")).isoformat()
    assert side.refresh(24)
    assert side.leaderboard("outflow", 24)[0]["ip_id"] == ips[0].id


def test_read_side_falls_back_to_the_database_when_redis_is_down(db, settings):
    clock = FrozenClock(T0 + 120)
    ips, _ = seed_results(settings, clock)
    # no retries of its own: the read side's cost during an outage is counted in commands below, not timed
    dead = redis_lib.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.2, retry=Retry(NoBackoff(), 0))
    asked = []
    command = dead.execute_command
    dead.execute_command = lambda *args, **options: asked.append(args[0]) or command(*args, **options)
    side = ReadSide(settings, dead, clock)
    assert side.leaderboard("outflow", 24)[0]["ip_id"] == ips[1].id
    assert side.ip_detail(ips[1].id)["keyword"] == "呪術廻戦"
    assert side.ip_days(ips[1].id, 3)["days"]
    # one command met the outage; the rest of the reads went to the database without trying Redis again (each
    # try costs the client's reconnects and backoff), until CACHE_PAUSE has passed
    assert asked == ["EXISTS"]
    side._cache_down_until = 0.0  # CACHE_PAUSE over: Redis is tried again
    side.ip_detail(ips[1].id)
    assert asked == ["EXISTS", "GET"]
