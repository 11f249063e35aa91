"""The fleet's intervals under its request budget (lib/scheduling/budget_plan.py), held to the problem
docs/concepts/scheduling.md states: fewest listings not yet seen (each IP's flow × interval / 2, summed) within the
budget (each IP's pages / interval + flow / 120, summed), every interval within its bounds. The planner's choice
is compared with a brute-force search over a grid of intervals on small cases; then the worker's closed loop and
the scheduler's tick on real Redis and a real database."""

import dataclasses
import itertools
import math
import random

import pytest

from lib.core import keys
from lib.core.clock import FrozenClock
from lib.core.redis_client import state_redis
from lib.market.processing import CrawlResult, ResultProcessor
from lib.scheduling.budget_plan import (
    PRICE_EVERY,
    Costs,
    CostStore,
    CrawlCost,
    Price,
    RelistReads,
    fleet_budget,
    plan,
    price_if_due,
)
from lib.scheduling.catalogue import Catalogue
from lib.scheduling.schedule import ScheduleStore, longest_interval, planned_interval
from lib.scheduling.tick import Scheduler

H = 3600.0
T0 = 1_800_000_000.0 - (1_800_000_000.0 % H)


def spend(ip, interval):  # requests an hour, written out from the documented definition
    return ip.pages * H / interval + ip.flow / 120


def unseen(ip, interval):
    return ip.flow * (interval / H) / 2


def brute_force(ips, budget, steps=40):
    """The fewest unseen listings over every combination of intervals on a grid of each IP's bounds."""
    grids = [[ip.least + (ip.most - ip.least) * k / (steps - 1) for k in range(steps)] for ip in ips]
    best = None
    for intervals in itertools.product(*grids):
        if sum(spend(ip, t) for ip, t in zip(ips, intervals, strict=True)) <= budget:
            value = sum(unseen(ip, t) for ip, t in zip(ips, intervals, strict=True))
            best = value if best is None else min(best, value)
    return best


def random_ips(rng, n):
    ips = []
    for _ in range(n):
        least = rng.choice([1, 1.5, 2]) * H
        ips.append(CrawlCost(flow=rng.choice([0.0, 0.3, 2, 40, 250, 1200]), pages=rng.choice([2, 3, 6, 10]),
                             least=least, most=max(least, rng.choice([2, 6, 12, 24]) * H), at=T0))
    return ips


@pytest.mark.parametrize("seed", range(12))
def test_the_planner_s_intervals_are_the_brute_force_optimum_within_the_budget(seed):
    rng = random.Random(seed)
    ips = random_ips(rng, 3)
    longest = sum(spend(ip, ip.most) for ip in ips)
    own = sum(spend(ip, ip.least) for ip in ips)
    budget = rng.uniform(longest, own) if own > longest else own
    price = plan(ips, budget)
    chosen = [ip.interval_at(price.price) for ip in ips]
    assert all(ip.least <= t <= ip.most for ip, t in zip(ips, chosen, strict=True))
    assert price.planned == pytest.approx(sum(spend(ip, t) for ip, t in zip(ips, chosen, strict=True)))
    assert price.planned <= budget * (1 + 1e-9)
    best = brute_force(ips, budget)
    # the grid's optimum is one the planner could choose: it does no worse (a grid point is at best as good as
    # the continuous optimum; a finer grid comes closer to it)
    assert price.unseen <= best + 1e-9
    assert price.unseen == pytest.approx(sum(unseen(ip, t) for ip, t in zip(ips, chosen, strict=True)))


def test_a_budget_to_spare_changes_no_interval():
    ips = random_ips(random.Random(1), 20)
    price = plan(ips, sum(spend(ip, ip.least) for ip in ips) + 1)
    assert price.price == 0 and price.lengthened == 0
    assert [ip.interval_at(price.price) for ip in ips] == [ip.least for ip in ips]


def test_the_reads_back_for_relists_come_off_the_budget_before_the_intervals_share_it():
    """Requests spent whatever the intervals: the intervals are planned as on the budget less them, and the plan's
    spend counts them."""
    ips = random_ips(random.Random(2), 12)
    own = sum(spend(ip, ip.least) for ip in ips)
    alone = plan(ips, own - 10)
    with_reads = plan(ips, own + 5, fixed=15)
    assert with_reads.price == alone.price and with_reads.price > 0
    assert with_reads.budget == own + 5 and with_reads.relist_reads == 15
    assert with_reads.planned == pytest.approx(alone.planned + 15)
    assert plan(ips, own + 20, fixed=15).price == 0  # still to spare: no interval moves


def test_the_reads_back_for_relists_are_counted_by_hour_over_the_last_day(settings):
    r = state_redis(settings)
    reads = RelistReads(r)
    reads.record(T0 - 30 * H, 100)  # more than a day before: not counted
    reads.record(T0 - 5 * H + 60, 30)
    reads.record(T0 - 5 * H + 120, 18)
    reads.record(T0 - H, 24)
    assert reads.per_hour(T0) == pytest.approx((30 + 18 + 24) / 24)
    reads.record(T0 + 60 * H, 1)  # two days on: the hours before are dropped
    assert r.hkeys(keys.RELIST_READS) == [str(int((T0 + 60 * H) // H)).encode()]


def test_quiet_ips_are_lengthened_first_and_a_busier_one_is_crawled_more_often():
    quiet = CrawlCost(flow=0.5, pages=2, least=H, most=12 * H, at=T0)
    busy = CrawlCost(flow=100, pages=6, least=H, most=6 * H, at=T0)
    own = spend(quiet, H) + spend(busy, H)
    price = plan([quiet, busy], own - 0.5)
    assert quiet.interval_at(price.price) > H and busy.interval_at(price.price) == H
    tight = plan([quiet, busy], spend(quiet, 12 * H) + spend(busy, 3 * H))
    q, b = quiet.interval_at(tight.price), busy.interval_at(tight.price)
    assert q == 12 * H and b == pytest.approx(3 * H)
    # between their bounds, the square-root rule: the interval goes as sqrt(pages / flow)
    mid = CrawlCost(flow=400, pages=6, least=0.01 * H, most=100 * H, at=T0)
    other = dataclasses.replace(mid, flow=100)
    both = plan([mid, other], 10)
    assert other.interval_at(both.price) / mid.interval_at(both.price) == pytest.approx(2.0)


def test_the_share_reached_is_weighted_by_flow():
    full = CrawlCost(flow=30, pages=2, least=H, most=2 * H, at=T0)
    short = CrawlCost(flow=90, pages=6, least=H, most=H, at=T0, seen=0.5)
    assert plan([full, short], 1000).reached == pytest.approx((30 + 45) / 120)
    assert plan([dataclasses.replace(full, flow=0)], 1000).reached is None


def test_spare_requests_read_the_outrunning_ips_sold_search_deeper_all_to_one_depth():
    """docs/concepts/scheduling.md: with the IPs at their own intervals and requests to spare, each sold page
    deeper costs a request a crawl of every IP whose sold search outruns its cap; the depth is the cap plus the
    whole pages the spare pays for, at most the most allowed."""
    deep = CrawlCost(flow=200, pages=1 + 5, least=H, most=H, at=T0, outran=True)
    half = CrawlCost(flow=60, pages=1 + 5, least=2 * H, most=2 * H, at=T0, outran=True)
    quiet = CrawlCost(flow=1, pages=2, least=2 * H, most=12 * H, at=T0)
    ips = [deep, half, quiet]
    own = sum(spend(ip, ip.least) for ip in ips)
    crawls = 1 + 0.5  # the outrunning IPs' crawls an hour
    price = plan(ips, own + 7.9 * crawls, sold=(5, 20))
    assert price.price == 0 and price.deepened == 2
    assert price.sold_pages == 5 + 7  # whole pages: 7.9 pay for 7
    assert price.planned == pytest.approx(own + 7 * crawls) and price.planned <= price.budget
    assert plan(ips, own + 100 * crawls, sold=(5, 20)).sold_pages == 20  # at most the most allowed
    assert plan(ips, own + 0.9 * crawls, sold=(5, 20)).sold_pages == 0  # not a page deeper: the cap
    assert plan(ips, own + 100 * crawls, sold=(5, 5)).sold_pages == 0  # deeper reads off
    # the budget binds: nothing to spare, no deeper
    tight = plan(ips, own - 0.2, sold=(5, 20))
    assert tight.price > 0 and tight.sold_pages == 0 and tight.deepened == 2
    # no IP outruns its sold cap: nothing to deepen
    calm = [dataclasses.replace(ip, outran=False) for ip in ips]
    assert plan(calm, own + 100, sold=(5, 20)).sold_pages == 0
    assert plan(calm, own + 100, sold=(5, 20)).planned == pytest.approx(own)


def test_over_the_budget_every_ip_is_at_its_longest_and_it_says_so():
    ips = [CrawlCost(flow=50, pages=6, least=H, most=2 * H, at=T0) for _ in range(4)]
    price = plan(ips, 1)
    assert price.over and all(ip.interval_at(price.price) == 2 * H for ip in ips)
    assert price.planned == pytest.approx(sum(spend(ip, 2 * H) for ip in ips))


def test_an_ip_without_a_flow_goes_to_its_longest_before_any_other_moves():
    still = CrawlCost(flow=0, pages=2, least=H, most=12 * H, at=T0)
    busy = CrawlCost(flow=40, pages=2, least=H, most=12 * H, at=T0)
    price = plan([still, busy], spend(still, 12 * H) + spend(busy, H))
    assert still.interval_at(price.price) == 12 * H and busy.interval_at(price.price) == H


def test_a_pinned_interval_spends_its_share_and_does_not_move():
    pinned = CrawlCost(flow=0.5, pages=2, least=0.5 * H, most=0.5 * H, at=T0)
    other = CrawlCost(flow=0.5, pages=2, least=H, most=12 * H, at=T0)
    price = plan([pinned, other], spend(pinned, 0.5 * H) + spend(other, 6 * H))
    assert pinned.interval_at(price.price) == 0.5 * H and other.interval_at(price.price) == pytest.approx(6 * H)


def test_the_longest_interval_stops_where_the_flow_fills_the_on_sale_cap(settings):
    cap = settings.scheduler_pages_on_sale * 120
    big = dataclasses.replace(settings, scheduler_max_interval=24 * H)
    assert longest_interval(cap / 3, H, big) == pytest.approx(3 * H)
    assert longest_interval(0.1, H, big) == 24 * H
    assert longest_interval(cap * 10, H, big) == H  # never below the IP's own


def test_a_cost_round_trips_and_an_unreadable_one_is_left_out(settings):
    r = state_redis(settings)
    store = CostStore(r)
    cost = CrawlCost(flow=12.5, pages=3, least=H, most=2 * H, at=T0)
    store.put(7, cost)
    r.hset(keys.CRAWL_COSTS, "8", "not a cost")
    r.hset(keys.CRAWL_COSTS, "10", f"1 2 3600 1800 {T0} 1")  # longest below least
    store.put(9, dataclasses.replace(cost, at=T0 - 30 * 86400))  # not renewed for a month
    assert store.all(T0) == {7: cost}
    assert store.columns(T0) == Costs.of([cost])  # read one by one, as one cannot be read
    r.hdel(keys.CRAWL_COSTS, "8", "10")
    store.put(11, dataclasses.replace(cost, flow=0, seen=0.5))
    # all readable: parsed in one pass, the one not renewed left out as before
    assert store.columns(T0) == Costs.of([cost, dataclasses.replace(cost, flow=0, seen=0.5)]) or \
        store.columns(T0) == Costs.of([dataclasses.replace(cost, flow=0, seen=0.5), cost])
    # whether its sold search outran round-trips; a cost stored without it (six fields) reads as not outrun
    store.put(11, dataclasses.replace(cost, outran=True))
    assert store.all(T0)[11].outran and sum(store.columns(T0).outran) == 1
    r.hset(keys.CRAWL_COSTS, "11", f"12.5 3 3600 7200 {T0} 1")
    assert store.all(T0)[11] == cost and store.columns(T0) == Costs.of([cost, cost])
    r.hset(keys.CRAWL_COSTS, "12", f"12.5 3 3600 7200 {T0} 1 2")  # outran neither 0 nor 1
    assert 12 not in store.all(T0)


def test_the_fleet_budget_is_the_share_of_every_address_s_budget(settings):
    r = state_redis(settings)
    assert fleet_budget(settings, r) is None  # CRAWL_RATE_LIMIT=0: nothing to plan
    two = dataclasses.replace(settings, crawl_rate_limit=48, scheduler_budget_share=0.5,
                              proxy_urls=("http://a.example:1", "http://b.example:2"))
    assert fleet_budget(two, r) == 2 * 48 * 60 * 0.5


@pytest.fixture
def clock():
    return FrozenClock(T0)


SEARCH = {"on_sale": {"num_found": None, "pages": 1, "items": 2, "ended": True},
          "sold": {"num_found": None, "pages": 1, "items": 0, "ended": True}}


def listings(ip_n, at, n):
    return [{"source_id": f"m{ip_n}-{at}-{k}", "title": f"作品{ip_n} グッズ {k}", "price": 1000, "status": "on_sale",
             "image_url": None, "item_url": None, "created": at - 60 * (k + 1), "updated": None} for k in range(n)]


def test_the_tick_prices_the_budget_and_the_worker_lengthens_the_quiet_ip(db, settings, clock):
    """Two IPs crawled twice through the worker; a budget that holds the busy one's own interval and not the
    quiet one's: the tick sets the price, and the quiet IP's next crawl is later than its own interval."""
    budgeted = dataclasses.replace(settings, crawl_rate_limit=1, scheduler_budget_share=0.025,
                                   scheduler_max_interval=12 * H)  # 1.5 requests an hour
    r = state_redis(settings)
    catalogue = Catalogue(ScheduleStore(r), budgeted, clock)
    quiet, busy = catalogue.add("作品1"), catalogue.add("作品2")
    for at in (T0, T0 + H):
        clock.set(at)
        for ip, n in ((quiet, 1), (busy, 40)):
            ResultProcessor(budgeted, r, clock).apply(CrawlResult.parse(
                ip.id, f"{ip.id}-{at}", at, listings(ip.id, at, n), search=SEARCH))
    costs = CostStore(r).all(clock.now())
    assert set(costs) == {quiet.id, busy.id}
    assert costs[busy.id].flow > costs[quiet.id].flow > 0
    # without a price the IPs' own intervals stand
    own = {ip.id: planned_interval(ip, costs[ip.id].flow, budgeted) for ip in (quiet, busy)}
    assert ScheduleStore(r).time_of(quiet.id) == pytest.approx(T0 + H + own[quiet.id])
    from lib.messaging.broker import build_broker
    broker = build_broker(budgeted)
    try:
        result = Scheduler(budgeted, r, broker, clock).tick()
    finally:
        broker.close()
    assert result.price is not None and result.price.budget == pytest.approx(1.5)
    tight = sum(spend(c, own[i]) for i, c in costs.items())
    assert tight > 1.5  # the IPs' own intervals spend more than the budget
    assert result.price.price > 0 and not result.price.over and result.price.planned <= 1.5 + 1e-6
    assert CostStore(r).price() == result.price
    # a tick within PRICE_EVERY does not price again
    clock.set(T0 + H + PRICE_EVERY / 2)
    assert price_if_due(budgeted, r, clock.now()) is None
    # the next result of the quiet IP is scheduled at the priced interval, longer than its own
    at = T0 + 2 * H
    clock.set(at)
    ResultProcessor(budgeted, r, clock).apply(CrawlResult.parse(
        quiet.id, "quiet-3", at, listings(quiet.id, at, 1), search=SEARCH))
    cost = CostStore(r).all(at)[quiet.id]
    assert cost.seen == 1  # its search was read whole
    assert ScheduleStore(r).time_of(quiet.id) == pytest.approx(at + cost.interval_at(result.price.price))
    assert cost.interval_at(result.price.price) > cost.least
    # an IP disabled leaves the planning
    catalogue.disable(quiet.id)
    assert quiet.id not in CostStore(r).all(at)


def test_without_a_budget_the_tick_sets_no_price(db, settings, clock):
    r = state_redis(settings)
    r.set(keys.CRAWL_PRICE, '{"price": 5, "budget": 1, "planned": 1, "ips": 1, "lengthened": 1, "unseen": 1, '
                            f'"at": {T0 - 2 * PRICE_EVERY}}}')
    assert price_if_due(settings, r, T0) is None and CostStore(r).price() is None
    assert math.isfinite(T0)


def test_status_and_metrics_show_the_plan_against_the_budget(env, db, broker):
    from lib.core.settings import load_settings, use_settings
    from lib.operations.metrics import StateCollector
    from lib.operations.status import gather, render

    settings = load_settings({**env, "CRAWL_RATE_LIMIT": "10"})
    r = state_redis(settings)
    assert gather(settings, broker, r)["crawl_plan"] is None  # before the first tick
    CostStore(r).put(1, CrawlCost(flow=30, pages=6, least=H, most=2 * H, at=T0))
    CostStore(r).put(2, CrawlCost(flow=0.2, pages=2, least=2 * H, most=2 * H, at=T0))
    price = price_if_due(settings, r, T0)
    assert price is not None and price.budget == 10 * 60 * settings.scheduler_budget_share
    assert price.price == 0 and price.planned == pytest.approx(6 + 30 / 120 + 1 + 0.2 / 120)
    text = render(gather(settings, broker, r))
    assert f"  planned: 7 of {price.budget:.0f} requests an hour (SCHEDULER_BUDGET_SHARE of the budgets) for 2 IPs; " \
           "every IP at its own interval, as of " in text
    over = Price(price=9, budget=5, planned=8, ips=2, lengthened=2, unseen=40, at=T0)
    CostStore(r).set_price(over)
    text = render(gather(settings, broker, r))
    assert "2 of them crawled less often than their own interval to stay within it (OVER: " in text
    assert "  new listings the last crawls' on-sale pages reached" not in text  # no share without a flow
    CostStore(r).set_price(dataclasses.replace(over, reached=0.8125))
    text = render(gather(settings, broker, r))
    assert "  new listings the last crawls' on-sale pages reached back to the crawl before: 81.2% (the rest is " \
           "estimated)" in text
    assert "outrun their sold pages" not in text
    CostStore(r).set_price(dataclasses.replace(over, reached=0.8125, deepened=3))
    assert "\n  IPs whose sales outrun their sold pages: 3 (no requests to spare: read to SCHEDULER_PAGES_SOLD)" \
        in render(gather(settings, broker, r))
    CostStore(r).set_price(dataclasses.replace(over, reached=0.8125, deepened=3, sold_pages=12))
    assert "\n  IPs whose sales outrun their sold pages: 3, read 12 pages deep with the requests to spare" \
        in render(gather(settings, broker, r))
    assert "reads back and item checks for undecided relists" not in render(gather(settings, broker, r))
    # the reads back for relists of the last day: the tick takes them off the budget and says so
    RelistReads(r).record(T0 + PRICE_EVERY - 2 * H, 36)
    price = price_if_due(settings, r, T0 + PRICE_EVERY)
    assert price is not None and price.relist_reads == 1.5
    assert price.planned == pytest.approx(6 + 30 / 120 + 1 + 0.2 / 120 + 1.5)
    assert "\n  reads back and item checks for undecided relists: 1.5 requests an hour over the last day, taken off " \
           "the budget " \
        "before the intervals" in render(gather(settings, broker, r))
    CostStore(r).set_price(dataclasses.replace(over, reached=0.8125, deepened=3, sold_pages=12))
    use_settings(settings)
    try:
        families = {f.name: f for f in StateCollector().collect()}
    finally:
        use_settings(None)
    shown = {name: families[name].samples[0].value for name in (
        "animetop_crawl_planned_requests_per_hour", "animetop_crawl_plan_budget_requests_per_hour",
        "animetop_crawl_plan_lengthened_ips", "animetop_crawl_plan_sold_pages")}
    assert shown == {"animetop_crawl_planned_requests_per_hour": 8, "animetop_crawl_plan_budget_requests_per_hour": 5,
                     "animetop_crawl_plan_lengthened_ips": 2, "animetop_crawl_plan_sold_pages": 12}
    assert families["animetop_crawl_new_listings_reached_share"].samples[0].value == 0.8125


def test_a_budget_too_small_for_the_longest_intervals_is_said_once_while_it_lasts(env, db, caplog):
    from lib.core.settings import load_settings

    settings = load_settings({**env, "CRAWL_RATE_LIMIT": "1", "SCHEDULER_BUDGET_SHARE": "0.01"})  # 0.6 an hour
    r = state_redis(settings)
    CostStore(r).put(1, CrawlCost(flow=30, pages=6, least=H, most=2 * H, at=T0))
    caplog.set_level("WARNING", logger="lib.scheduling.budget_plan")
    for k in range(3):
        price = price_if_due(settings, r, T0 + k * PRICE_EVERY)
        assert price is not None and price.over
    said = [rec for rec in caplog.records if "over the budget" in rec.getMessage()]
    assert len(said) == 1 and "the rate limit holds the rest" in said[0].getMessage()
