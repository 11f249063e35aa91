"""Alert rules on settled hours, at their thresholds, computed in the tests from the definitions of
docs/concepts/measures.md (trailing median and MAD of the tracked hours; the price move on medians), and no alert in the
warm-up."""

import statistics
from datetime import timedelta
from decimal import Decimal

import pytest

from lib.core.clock import FrozenClock, naive_utc
from lib.core.redis_client import state_redis
from lib.market.processing import CrawlResult, ResultProcessor
from lib.market.statistics import (
    HOT_LIQUIDITY,
    OUTFLOW_SURGE,
    SOLD_PRICE_MOVE,
    evaluate_alerts,
    record_alerts,
    settled_hours,
)
from lib.scheduling.catalogue import Catalogue
from lib.scheduling.schedule import ScheduleStore
from models import IpAlert, IpStatsHourly, ListingEvent

from .test_intervals import exact_ranks

H = 3600.0
T0 = 1_800_000_000.0 - (1_800_000_000.0 % H)
HOUR0 = naive_utc(T0)
LONG_AGO = T0 - 40 * H  # a baseline well before the warm-up's end


@pytest.fixture
def ip(db, settings):
    return Catalogue(ScheduleStore(state_redis(settings)), settings, FrozenClock(T0)).add("チェンソーマン")


def hour(ip, hours_back, inflow=0, outflow=0, prices=()):
    prices = list(prices)
    IpStatsHourly.create(
        ip_id=ip.id, hour_bucket=HOUR0 - timedelta(hours=hours_back), inflow=inflow, outflow=outflow,
        liquidity_index=Decimal(outflow / inflow).quantize(Decimal("0.0001")) if inflow else None,
        sample_count=len(prices), median_price=Decimal(statistics.median(prices)) if prices else None)
    for k, price in enumerate(prices):
        ListingEvent.create(ip_id=ip.id, source_id=f"h{hours_back}-{k}", kind="sold", occurrence=0,
                            event_at=T0 - hours_back * H + k, hour_bucket=HOUR0 - timedelta(hours=hours_back),
                            price=price)


def beyond_noise(prices: list[int], trailing_median: float) -> bool:
    """docs/concepts/measures.md ("Alerts"): the hour's median interval (order statistics, definition 8) excludes the
    trailing median; ranks by the by-hand definition of tests/market/test_intervals.py."""
    ranks = exact_ranks(len(prices), 1, 2)
    ordered = sorted(prices)
    return ranks is not None and not ordered[ranks[0] - 1] <= trailing_median <= ordered[ranks[1] - 1]


def rules(ip, settings, baseline_at=LONG_AGO):
    return {f.rule for f in evaluate_alerts(ip.id, HOUR0, baseline_at, settings)}


def surge_threshold(trailing, settings):
    """docs/concepts/measures.md: max(factor × max(median, 1), median + 3 × 1.4826 × MAD, ALERT_OUTFLOW_MIN)."""
    m = statistics.median(trailing)
    mad = statistics.median([abs(x - m) for x in trailing])
    return max(settings.alert_outflow_surge_factor * max(m, 1), m + 3 * 1.4826 * mad, settings.alert_outflow_min)


@pytest.mark.parametrize("pattern", [[4, 5, 6], [10, 10, 10], [0, 0, 9], [1, 2, 30]])
def test_outflow_surge_at_its_threshold(ip, settings, pattern):
    trailing = [pattern[k % 3] for k in range(24)]
    for k, outflow in enumerate(trailing):
        hour(ip, 24 - k, inflow=1000, outflow=outflow)
    threshold = surge_threshold(trailing, settings)
    first = int(threshold) if threshold == int(threshold) else int(threshold) + 1
    hour(ip, 0, inflow=1000, outflow=first)
    assert OUTFLOW_SURGE in rules(ip, settings)
    IpStatsHourly.update(outflow=first - 1).where(IpStatsHourly.hour_bucket == HOUR0).execute()
    assert OUTFLOW_SURGE not in rules(ip, settings)


def test_one_busy_hour_does_not_lift_the_baseline(ip, settings):
    # a mean would be 1000/24 ≈ 42 and need 125; the median stays 2 and MAD 0 → 20 is a surge
    for k in range(24):
        hour(ip, 24 - k, inflow=1000, outflow=1000 if k == 5 else 2)
    hour(ip, 0, inflow=1000, outflow=20)
    assert OUTFLOW_SURGE in rules(ip, settings)


@pytest.mark.parametrize("hours_tracked, fires", [(12, True), (11, False)])
def test_no_alert_in_the_warm_up(ip, settings, hours_tracked, fires):
    assert settings.alert_warmup_hours == 12
    baseline_at = T0 - (hours_tracked + 1) * H + 300  # the baseline's own hour is partial: not counted
    hour(ip, 0, inflow=10, outflow=90)
    assert bool(rules(ip, settings, baseline_at)) is fires  # zero history: a surge and hot liquidity once warm


@pytest.mark.parametrize("inflow, outflow, fires", [(20, 30, True), (20, 29, False), (13, 19, False)])
def test_hot_liquidity_threshold(ip, settings, inflow, outflow, fires):
    hour(ip, 0, inflow=inflow, outflow=outflow)  # 30/20 = 1.5 fires; 29/20 = 1.45; 19/13 ≥ 1.5 but < 20
    assert (HOT_LIQUIDITY in rules(ip, settings)) is fires


@pytest.mark.parametrize("now_prices, week_prices, fires", [
    ([1200] * 10, [1000] * 10, True), ([800] * 10, [1000] * 10, True), ([1190] * 10, [1000] * 10, False),
    ([1200] * 9, [1000] * 10, False), ([1200] * 10, [1000] * 9, False),
    # one set sale at ¥90,000 in the week does not move the median, and nor does one placeholder this hour
    ([1000] * 9 + [1], [1000] * 10 + [90_000], False),
    # a median 24 % up, but four placeholders this hour: its interval (¥1 to ¥1,300) holds the trailing median
    ([1300, 1300, 1300, 1300, 1300, 1300, 1, 1, 1, 1], [1000, 1050, 1100] * 4, False),
    ([1300] * 8 + [1250, 1280], [1000, 1050, 1100] * 4, True),
    # 25 % up on a spread hour: X(2)..X(9) of its ten prices still reach down to ¥950
    ([900, 950, 1200, 1250, 1250, 1250, 1300, 1350, 1400, 2000], [1000] * 10, False),
])
def test_sold_price_move_on_medians(ip, settings, now_prices, week_prices, fires):
    for k, price in enumerate(week_prices):
        hour(ip, 30 + k, prices=[price])  # inside the trailing 7 days
    hour(ip, 24 * 8, prices=[5000] * 50)  # older than 7 days: ignored
    hour(ip, 0, prices=now_prices)
    change = round(statistics.median(now_prices) / statistics.median(week_prices) - 1, 9)  # 1200/1000-1 ≈ 0.19999…
    expected = (abs(change) >= settings.alert_price_move and len(now_prices) >= settings.alert_price_min_samples
                and len(week_prices) >= settings.alert_price_min_samples
                and beyond_noise(now_prices, statistics.median(week_prices)))
    assert expected is fires
    assert (SOLD_PRICE_MOVE in rules(ip, settings)) is fires


def test_at_most_one_alert_per_ip_rule_and_hour(ip, settings):
    hour(ip, 0, inflow=20, outflow=40)
    for _ in range(3):
        record_alerts(ip.id, HOUR0, evaluate_alerts(ip.id, HOUR0, LONG_AGO, settings), naive_utc(T0))
    assert IpAlert.select().where(IpAlert.ip_id == ip.id).count() == 2  # surge and hot liquidity, once each


def test_settled_hours():
    assert settled_hours(None, T0 + 100, T0 + 100) == []  # the baseline settles nothing
    assert settled_hours(T0 + 100, T0 + 2 * H + 50, T0 + 100) == [HOUR0, HOUR0 + timedelta(hours=1)]
    assert settled_hours(T0 + 100, T0 + 1800, T0 + 100) == []  # the hour is not over
    assert settled_hours(T0 + 2 * H, T0 + H, T0) == []  # a late result settles nothing


def test_the_demo_warm_up_raises_no_alert(ip, settings):
    """An IP crawled every 2 h whose sales start at once (the demo's shape): the old rule fired 7–14x surges in
    its second and third hour; with the warm-up nothing fires, then a real surge after it does. Sales carry their
    ``updated`` time and listings their ``created`` time, spread evenly between crawls."""
    clock = FrozenClock(T0)
    proc = ResultProcessor(settings, state_redis(settings), clock)
    live: list[str] = []
    for n in range(12):
        at, before = T0 + n * 2 * H + 60, T0 + (n - 1) * 2 * H + 60
        sold = 100 if n == 10 else 25
        items = [{"source_id": sid, "status": "sold", "price": 1000, "updated": before + (k + 1) * 2 * H / sold}
                 for k, sid in enumerate(live[:sold])]
        fresh = [f"L{n}-{k}" for k in range(40)]
        items += [{"source_id": sid, "status": "on_sale", "price": 1000} for sid in live[sold:]]
        items += [{"source_id": sid, "status": "on_sale", "price": 1000, "created": before + (k + 1) * 2 * H / 40}
                  for k, sid in enumerate(fresh)]
        live = live[sold:] + fresh
        proc.apply(CrawlResult.parse(ip.id, f"t{n}", at, items))
    warm_until = HOUR0 + timedelta(hours=1 + settings.alert_warmup_hours)
    assert IpAlert.select().where((IpAlert.ip_id == ip.id) & (IpAlert.hour_bucket < warm_until)).count() == 0
    surges = [a.hour_bucket for a in IpAlert.select().where((IpAlert.ip_id == ip.id) & (IpAlert.rule == OUTFLOW_SURGE))
              .order_by(IpAlert.hour_bucket)]
    assert surges == [HOUR0 + timedelta(hours=18), HOUR0 + timedelta(hours=19)]  # 50/h against a median of 12.5


def test_many_settled_hours_at_once_each_against_its_own_trailing_hours(ip, settings):
    """A crawl after a gap settles many hours at once (``evaluate_alerts_many`` reads their rows and prices in one
    pass): each hour's verdict is the definition on its own trailing 24 tracked hours and its own 7 days of prices,
    computed here hour by hour."""
    from lib.market.statistics import evaluate_alerts_many

    span = 24 * 9
    outflows = {k: (40 if k % 37 == 0 else k % 5) for k in range(span)}  # hours back → outflow
    prices = {k: [1000 + 400 * (k // 50)] * 10 for k in range(span) if k % 3 == 0}  # steps every 50 hours
    for k in range(span):
        hour(ip, k, inflow=20, outflow=outflows[k], prices=prices.get(k, ()))
    baseline_at = T0 - (span + 1) * H
    buckets = [HOUR0 - timedelta(hours=k) for k in range(span)]
    got = {b: {f.rule for f in found}
           for b, found in evaluate_alerts_many(ip.id, buckets, baseline_at, settings).items()}

    expected = {}
    for k in range(span):
        history = span - k  # full tracked hours before hour k back (the baseline's hour is partial)
        if history < settings.alert_warmup_hours:
            continue
        trailing = [outflows[j] for j in range(k + 1, min(k + 24, span - 1) + 1)]
        fired = set()
        if outflows[k] >= surge_threshold(trailing, settings):
            fired.add(OUTFLOW_SURGE)
        if outflows[k] / 20 >= settings.alert_liquidity_min and outflows[k] >= settings.alert_outflow_min:
            fired.add(HOT_LIQUIDITY)
        week = [p for j in range(k + 1, k + 24 * 7 + 1) for p in prices.get(j, [])]
        now = prices.get(k, [])
        if len(now) >= settings.alert_price_min_samples and len(week) >= settings.alert_price_min_samples:
            change = round(statistics.median(now) / statistics.median(week) - 1, 9)
            if abs(change) >= settings.alert_price_move and beyond_noise(now, statistics.median(week)):
                fired.add(SOLD_PRICE_MOVE)
        if fired:
            expected[HOUR0 - timedelta(hours=k)] = fired
    assert {rule for rules in expected.values() for rule in rules} == {OUTFLOW_SURGE, HOT_LIQUIDITY, SOLD_PRICE_MOVE}
    assert got == expected
