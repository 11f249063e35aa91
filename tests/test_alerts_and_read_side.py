"""Alert rules at their thresholds, and the leaderboard with its caches."""

from datetime import timedelta
from decimal import Decimal

import pytest
import redis as redis_lib

from lib.core import keys
from lib.core.clock import FrozenClock, naive_utc
from lib.core.redis_client import state_redis
from lib.market.processing import CrawlResult, ResultProcessor
from lib.market.read_side import ReadSide
from lib.market.statistics import HOT_LIQUIDITY, OUTFLOW_SURGE, SOLD_PRICE_MOVE, evaluate_alerts, record_alerts
from lib.scheduling.catalogue import Catalogue
from lib.scheduling.schedule import ScheduleStore
from models import IpAlert, IpStatsHourly

H = 3600.0
T0 = 1_800_000_000.0 - (1_800_000_000.0 % H)
HOUR0 = naive_utc(T0)


@pytest.fixture
def ip(db, settings):
    return Catalogue(ScheduleStore(state_redis(settings)), settings, FrozenClock(T0)).add("チェンソーマン")


def history(ip, hours_back, **fields):
    for h in hours_back:
        IpStatsHourly.create(ip_id=ip.id, hour_bucket=HOUR0 - timedelta(hours=h), **fields)


def now_row(ip, **fields):
    inflow, outflow = fields.get("inflow", 0), fields.get("outflow", 0)
    liq = Decimal(outflow / inflow).quantize(Decimal("0.0001")) if inflow else None
    return IpStatsHourly.create(ip_id=ip.id, hour_bucket=HOUR0, liquidity_index=liq, **fields)


def rules(ip, row, settings):
    return {f.rule for f in evaluate_alerts(row, settings)}


@pytest.mark.parametrize("outflow, fires", [(20, True), (19, False)])
def test_outflow_surge_threshold(ip, settings, outflow, fires):
    history(ip, range(1, 25), inflow=100, outflow=0)
    history_total = 160  # trailing mean 160/24 = 6.67/h → 3x = 20
    IpStatsHourly.update(outflow=history_total // 8).where(
        (IpStatsHourly.ip_id == ip.id) & (IpStatsHourly.hour_bucket >= HOUR0 - timedelta(hours=8))).execute()
    row = now_row(ip, inflow=100, outflow=outflow)
    assert (OUTFLOW_SURGE in rules(ip, row, settings)) is fires


def test_outflow_surge_needs_history(ip, settings):
    history(ip, [1, 2], inflow=10, outflow=1)  # two hours only: too few observations
    row = now_row(ip, inflow=100, outflow=90)
    assert OUTFLOW_SURGE not in rules(ip, row, settings)


@pytest.mark.parametrize("inflow, outflow, fires", [(20, 30, True), (20, 29, False), (13, 19, False)])
def test_hot_liquidity_threshold(ip, settings, inflow, outflow, fires):
    row = now_row(ip, inflow=inflow, outflow=outflow)  # 30/20 = 1.5 fires; 29/20 = 1.45; 19/13 ≥ 1.5 but < 20
    assert (HOT_LIQUIDITY in rules(ip, row, settings)) is fires


@pytest.mark.parametrize("avg, samples, week_samples, fires", [
    (1200, 10, 10, True), (800, 10, 10, True), (1190, 10, 10, False), (1200, 9, 10, False), (1200, 10, 9, False),
])
def test_sold_price_move_threshold(ip, settings, avg, samples, week_samples, fires):
    history(ip, [30], avg_price=Decimal(1000), sample_count=week_samples)  # 7-day average ¥1,000
    history(ip, [24 * 8], avg_price=Decimal(5000), sample_count=50)  # older than 7 days: ignored
    row = now_row(ip, avg_price=Decimal(avg), sample_count=samples)
    assert (SOLD_PRICE_MOVE in rules(ip, row, settings)) is fires


def test_at_most_one_alert_per_ip_rule_and_hour(ip, settings):
    row = now_row(ip, inflow=20, outflow=40)
    for _ in range(3):
        record_alerts(ip.id, HOUR0, evaluate_alerts(row, settings), naive_utc(T0))
    assert IpAlert.select().where(IpAlert.ip_id == ip.id).count() == 1


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
    assert r.exists(keys.leaderboard("outflow", 24))
    detail = side.ip_detail(ips[1].id, 24)
    assert detail["series"][0]["outflow"] == 6 and detail["series"][0]["hour"].endswith("+09:00")
    assert r.exists(keys.ip_cache(ips[1].id, "detail:24"))

    more = [{"source_id": f"s{i}", "status": "sold", "price": 1000} for i in range(10)]
    proc.apply(CrawlResult.parse(ips[0].id, f"{ips[0].id}-3", T0 + 90, more))  # ip 0 sells 9 more
    assert not r.exists(keys.leaderboard("outflow", 24))  # invalidated
    assert r.exists(keys.ip_cache(ips[1].id, "detail:24"))  # another IP's detail is still good
    proc.apply(CrawlResult.parse(ips[1].id, f"{ips[1].id}-3", T0 + 90, []))
    assert not r.exists(keys.ip_cache(ips[1].id, "detail:24"))  # its own is not
    assert side.leaderboard("outflow", 24)[0]["ip_id"] == ips[0].id


def test_read_side_falls_back_to_the_database_when_redis_is_down(db, settings):
    clock = FrozenClock(T0 + 120)
    ips, _ = seed_results(settings, clock)
    dead = redis_lib.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.2)
    side = ReadSide(settings, dead, clock)
    assert side.leaderboard("outflow", 24)[0]["ip_id"] == ips[1].id
    assert side.ip_detail(ips[1].id)["keyword"] == "呪術廻戦"
