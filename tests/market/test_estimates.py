"""Inflow and outflow where the pages cannot reach back (docs/concepts/measures.md, "Estimates"): the estimators
against a computation written here from their documented definition, the window measures carrying them (an
interval, in JSON too) only where the pages fell short, and their 95 % intervals against the realistic market's
truth (``true_flows``) on simulated IP-days."""

import math
from collections import defaultdict
from dataclasses import replace

import pytest

from bench.reach_crawls import crawl_hourly
from lib.core.clock import FrozenClock
from lib.core.redis_client import state_redis
from lib.core.settings import use_settings
from lib.market import windows
from lib.market.processing import CrawlResult, ResultProcessor
from lib.market.reach import (
    PACE_STEP,
    AgeReference,
    CrawlReach,
    filled_inflow,
    inflow_estimate,
    outflow_estimate,
    pace_variance,
)
from lib.market.values import Estimate, Measure, WindowMeasures
from lib.market.windows import window_measures
from lib.scheduling.catalogue import Catalogue
from lib.scheduling.schedule import ScheduleStore
from lib.standins.simulator.model import DAY, HOUR, MarketModel
from lib.standins.simulator.traits import load_traits
from lib.standins.simulator.truth import true_flows
from models import CrawlSearchTotal, ListingEvent

Z = 1.959963984540054
T0 = 1_800_000_000.0 - (1_800_000_000.0 % DAY)  # a UTC midnight


def test_inflow_estimate_is_the_visible_rate_over_the_unseen_span():
    # the on-sale pages of the crawl at 1 h reach back to 0.5 h; the previous crawl was at 0
    visible = [1800.0 + k * 1700.0 / 9 for k in range(10)]  # 10 listings from the reach to the newest (3500 s)
    gap_sold = [300.0, 900.0]  # two listings of the unseen span, seen on the sold pages
    crawls = [CrawlReach(3600.0, 0.0, 1800.0, None, 3500.0)]
    got = inflow_estimate(visible + gap_sold, crawls, 0.0, 3600.0)
    rate = 9 / 1700.0  # the 9 listings after the oldest one, over its span to the newest
    value = 12 + rate * 1800.0 - 2
    half = Z * math.sqrt(9 / 1700.0 * 1800.0 * (1800.0 / 1700.0 + 1))
    assert isinstance(got, Estimate)
    assert got.value == pytest.approx(round(value, 1))
    # never below the listings seen
    assert got.interval == pytest.approx((round(max(12, value - half), 1), round(value + half, 1)))
    assert got.n == 12


def test_no_inflow_estimate_where_the_pages_reach_the_previous_crawl():
    crawls = [CrawlReach(3600.0, 0.0, -600.0, None, 3500.0), CrawlReach(7200.0, 3600.0, None, None, 7100.0)]
    assert inflow_estimate([100.0, 5000.0], crawls, 0.0, 7200.0) is None


def test_outflow_estimate_divides_the_sales_seen_by_the_share_at_visible_ages():
    reference = AgeReference.of([[(k + 0.5) * HOUR for k in range(100)]])  # ages 0.5 h … 99.5 h, one IP
    middle = 1800.0
    sold_reach = middle - 10 * HOUR  # a sale at the crawls' middle is seen up to 10 h old
    crawls = [CrawlReach(3600.0, 0.0, None, sold_reach)]
    sales = [100.0, 700.0, 1500.0, 2500.0, 3500.0]
    inflow = {h: 20.0 for h in range(-300, 2)}  # a flat inflow: the share is the reference's F(10 h)
    got = outflow_estimate(sales, crawls, inflow, reference, 0.0, 3600.0)
    p = 10 / 100
    # one reference IP: its binomial variance, no spread between IPs measured, raised to a prediction's by
    # (t/z)² with t Student's at one degree of freedom: tan(π·0.475) at 95 %
    var_p = p * (1 - p) / 100 * (math.tan(math.pi * 0.475) / Z) ** 2
    value = 5 / p
    variance = 5 * (1 - p) / p ** 2 + (5 * math.sqrt(var_p) / p ** 2) ** 2
    assert isinstance(got, Estimate)
    assert got.value == pytest.approx(value)
    half = Z * math.sqrt(variance)
    assert got.interval == pytest.approx((round(max(5, value - half), 1), round(value + half, 1)))  # ≥ the seen


def test_the_reference_share_is_raised_to_a_prediction_for_one_more_ip():
    """Six reference IPs: the pooled share, the binomial variance plus the method-of-moments spread between them,
    times (t₅/z)², t₅ = 2.5706 from the tables."""
    groups = [[float(a) for a in range(1, 11)], [float(a) for a in range(2, 22, 2)]] * 3
    reference = replace(AgeReference.of(groups), pace=0.0)  # the spread of the shares alone (pace: below)
    share, variance = reference.share(5.0)
    counts, sizes = [5, 2] * 3, [10] * 6
    pooled = sum(counts) / sum(sizes)
    sampling = pooled * (1 - pooled)
    spread = sum((c / n - pooled) ** 2 * n for c, n in zip(counts, sizes)) / sum(sizes)
    between = max(0.0, spread - 6 * sampling / sum(sizes))
    assert share == pytest.approx(pooled)
    assert variance == pytest.approx((sampling / sum(sizes) + between) * (2.5706 / Z) ** 2, rel=1e-3)


def test_the_pace_variance_is_the_random_effects_method_of_moments_on_log_ages():
    """Three IPs' ages at sale (minutes): the between-IP variance of their mean log age, (Q − (k − 1)·s²) /
    (N − Σn²/N), written out here; none between IPs whose ages are alike; never negative."""
    groups = [[60.0 * a for a in (2, 3, 5, 8)], [60.0 * a for a in (10, 20, 40)], [60.0 * a for a in (1, 2, 4, 6, 9)]]
    logs = [[math.log(a) for a in g] for g in groups]
    sizes = [len(g) for g in logs]
    n = sum(sizes)
    means = [sum(g) / len(g) for g in logs]
    grand = sum(m * k for m, k in zip(means, sizes)) / n
    within = sum((v - m) ** 2 for g, m in zip(logs, means) for v in g) / (n - 3)
    q = sum(k * (m - grand) ** 2 for m, k in zip(means, sizes))
    expected = (q - 2 * within) / (n - sum(k * k for k in sizes) / n)
    assert expected > 0
    assert pace_variance(groups) == pytest.approx(expected)
    assert AgeReference.of(groups).pace == pytest.approx(expected)
    assert pace_variance([groups[0], list(groups[0]), list(groups[0])]) == 0.0
    assert pace_variance([groups[0]]) == 0.0  # one IP: no spread to measure


def test_the_reference_share_takes_the_spread_its_pace_implies_when_larger():
    """IPs whose shares at an age happen to agree, but whose paces differ: the spread at that age is the pace's
    variance times the squared slope of the pooled share against the log age (a difference over ± PACE_STEP)."""
    groups = [[float(a) for a in range(1, 101)]] * 6  # alike: no spread of the shares at any age
    alike = AgeReference.of(groups)
    assert alike.pace == 0.0
    paced = replace(alike, pace=0.04)
    age = 30.0
    share, base = alike.share(age)
    _, variance = paced.share(age)
    low = sum(a <= age * math.exp(-PACE_STEP) for a in range(1, 101)) / 100
    high = sum(a <= age * math.exp(PACE_STEP) for a in range(1, 101)) / 100
    between = ((high - low) / (2 * PACE_STEP)) ** 2 * 0.04
    t5 = 2.5706  # Student's at five degrees of freedom, 97.5 %, from the tables
    assert share == pytest.approx(0.30)
    assert base == pytest.approx(share * (1 - share) / 600 * (t5 / Z) ** 2, rel=1e-3)
    assert variance == pytest.approx((share * (1 - share) / 600 + between) * (t5 / Z) ** 2, rel=1e-3)


def test_filled_inflow_scales_each_hour_by_the_share_its_crawls_saw():
    """The crawl at 1 h read its on-sale pages back to 0.5 h: hour 0 was half seen, its count doubled. The crawl at
    3 h (after one at 2 h) read back to 2.95 h only: hour 2 was seen 5 %, too little to scale, and counts as the
    mean of the other hours within 12 h. Hours the pages covered stay as counted."""
    crawls = [CrawlReach(0.0, None, None, None), CrawlReach(3600.0, 0.0, 1800.0, None, 3500.0),
              CrawlReach(7200.0, 3600.0, None, None), CrawlReach(10800.0, 7200.0, 10620.0, None, 10700.0)]
    inflow = {0: 10.0, 1: 30.0, 2: 1.0, 3: 50.0}
    filled = filled_inflow(inflow, crawls)
    assert filled[0] == pytest.approx(20.0)
    assert filled[1] == 30.0 and filled[3] == 50.0
    assert filled[2] == pytest.approx((20.0 + 30.0 + 50.0) / 3)
    assert filled_inflow(inflow, crawls[:1]) == inflow  # no crawl fell short


def test_no_outflow_estimate_where_the_sold_pages_reach_back_over_a_listings_life():
    reference = AgeReference.of([[HOUR, 2 * HOUR]])
    crawls = [CrawlReach(3600.0, 0.0, None, None), CrawlReach(7200.0, 3600.0, None, 7200.0 - 200 * HOUR)]
    assert outflow_estimate([100.0], crawls, {}, reference, 0.0, 7200.0) is None


def listing(sid, status, created, updated=None):
    return {"source_id": sid, "title": f"鬼滅の刃 {sid}", "price": 1000, "status": status, "image_url": "",
            "item_url": f"https://jp.mercari.com/item/{sid}", "created": created, "updated": updated}


def short_and_whole(settings, t0):
    """Two IPs crawled alike at ``t0`` and an hour later, 10 listings created from 0.5 h to 0.95 h: one crawl's
    on-sale pages read all 5 planned pages (its reach: the oldest of them), the other's search ended on 2. The IPs
    and the creation times."""
    clock = FrozenClock(t0)
    catalogue = Catalogue(ScheduleStore(state_redis(settings)), settings, clock)
    processor = ResultProcessor(settings, state_redis(settings), clock)
    short, whole = catalogue.add("鬼滅の刃"), catalogue.add("呪術廻戦")
    created = [t0 + 1800.0 + k * 180.0 for k in range(10)]
    for ip, pages in ((short, 5), (whole, 2)):
        search = {"on_sale": {"num_found": 10, "pages": pages, "items": 10},
                  "sold": {"num_found": 0, "pages": 1, "items": 0}}
        clock.set(t0)
        processor.apply(CrawlResult.parse(ip.id, f"{ip.id}-0", t0, [], 1, None, search))
        clock.set(t0 + HOUR)
        items = [listing(f"{ip.id}-{k}", "on_sale", int(at)) for k, at in enumerate(created)]
        processor.apply(CrawlResult.parse(ip.id, f"{ip.id}-1", t0 + HOUR, items, pages + 1, None, search))
    return short, whole, created


def test_a_window_gives_the_outflow_estimate_its_inflow_hours_filled_where_the_on_sale_pages_fell_short(db, settings):
    """Crawls at 0 h (a day before the window read), 1 h and 25 h: the one at 1 h read its on-sale pages back to
    0.5 h only, so hour 0's ten listings are its seen half; the crawl at 25 h read its sold pages back 3 h, short
    of a listing's life. The hours the outflow estimate weighs ages by are the rows' counts, hour 0's doubled."""
    clock = FrozenClock(T0)
    processor = ResultProcessor(settings, state_redis(settings), clock)
    ip = Catalogue(ScheduleStore(state_redis(settings)), settings, clock).add("鬼滅の刃")
    created = [T0 + 1800.0 + k * 180.0 for k in range(10)]
    whole = {"on_sale": {"num_found": 10, "pages": 1, "items": 10}, "sold": {"num_found": 0, "pages": 1, "items": 0}}
    short = {"on_sale": {"num_found": 10, "pages": 5, "items": 10}, "sold": {"num_found": 1, "pages": 5, "items": 1}}
    processor.apply(CrawlResult.parse(ip.id, "c0", T0, [], 1, None, whole))
    clock.set(T0 + HOUR)
    items = [listing(f"l{k}", "on_sale", int(at)) for k, at in enumerate(created)]
    processor.apply(CrawlResult.parse(ip.id, "c1", T0 + HOUR, items, 6, None, short))
    clock.set(T0 + 25 * HOUR)
    sold = [listing("s", "sold", int(T0 + 22 * HOUR), int(T0 + 24.5 * HOUR))]
    processor.apply(CrawlResult.parse(ip.id, "c2", T0 + 25 * HOUR, sold, 6, None, short))
    w = windows.Window(24, T0 + 25 * HOUR + 60)
    data: dict[int, windows._IpData] = defaultdict(windows._IpData)
    windows._load_reach([ip.id], w, data)
    hours = data[ip.id].inflow_hours
    hour = int(T0 // HOUR)
    assert hours[hour] == pytest.approx(20.0)  # ten seen in the half hour the pages reached
    assert hours[hour + 22] == pytest.approx(1.0)  # the sold listing's hour, which the pages covered


@pytest.mark.parametrize("on", [True, False], ids=["FLOW_ESTIMATES=true", "false"])
def test_a_window_carries_an_estimate_only_where_the_on_sale_pages_fell_short(db, settings, on):
    """Two IPs crawled alike at 0 and 1 h: one crawl's on-sale pages read all 5 planned pages and reach back only
    to 0.5 h (inflow estimated: the count of listings seen plus the unseen half hour's share); the other IP's
    search ended on its pages (inflow counted). With FLOW_ESTIMATES off both are counted."""
    assert settings.flow_estimates  # the default
    settings = replace(settings, flow_estimates=on)
    use_settings(settings)  # the reads' (the fixture puts it back)
    short, whole, created = short_and_whole(settings, T0)
    measures = window_measures([short.id, whole.id], 24, T0 + HOUR + 60)
    counted = measures[whole.id].inflow
    assert type(counted) is Measure and counted.value == 10
    if not on:
        assert type(measures[short.id].inflow) is Measure and measures[short.id].inflow.value == 10
        return
    estimated = measures[short.id].inflow
    seen = [int(at) for at in created]
    rate = 9 / (seen[-1] - seen[0])
    gap = seen[0] - T0  # from the previous crawl (its pages held nothing) to the reach
    assert isinstance(estimated, Estimate)
    assert estimated.value == pytest.approx(round(10 + rate * gap, 1))
    assert estimated.interval is not None and estimated.interval[0] <= 10 + rate * gap <= estimated.interval[1]
    # the JSON says so: an interval, read back as an estimate
    again = WindowMeasures.from_json(measures[short.id].to_json())
    assert isinstance(again.inflow, Estimate) and again.inflow.interval == estimated.interval
    assert "interval" not in measures[whole.id].to_json()["inflow"]


def _held(estimate: Estimate | None, truth: int) -> bool | None:
    if estimate is None:
        return None
    assert estimate.interval is not None
    low, high = estimate.interval
    return low is not None and high is not None and low <= truth <= high


def _band(n: int) -> tuple[float, float]:
    """Where the share of n IP-days held lies when each holds with chance 0.95: its 99 % binomial band."""
    half = 2.576 * math.sqrt(0.95 * 0.05 / n)
    return 0.95 - half, 0.95 + half


@pytest.mark.slow
@pytest.mark.timeout(900)  # drawing a large IP's every listing of three days
def test_inflow_intervals_hold_the_true_inflow_of_simulated_ip_days():
    """IPs large enough that five on-sale pages hold less than an hour's listings at their busy hours, crawled
    hourly for three days: each IP-day with an estimate, its interval against ``true_flows``' inflow (new goods
    and relists: both are listings created, which the pages count alike)."""
    sizes = {f"large{k}": size for k, size in enumerate((600.0, 800.0, 1000.0, 1200.0, 1500.0, 2000.0))}
    traits = load_traits()
    # listings withdrawn after a day instead of eight: the truth's inflow is the same listings, and ``true_flows``
    # then draws a day of a large IP's stories before the window instead of eight (the test's cost)
    traits = replace(traits, selling=replace(traits.selling, life_hours=24.0))
    model = MarketModel(11, traits, sizes=sizes, bursts={kw: () for kw in sizes})
    held = []
    for keyword in sizes:
        seen = crawl_hourly(model, keyword, T0, T0 + 2 * DAY, sold=False)
        for truth in true_flows(model, keyword, T0, T0 + 2 * DAY):
            got = inflow_estimate(list(seen.created.values()), seen.crawls, truth.start, truth.end)
            held.append(_held(got, truth.listed + truth.relisted))
    estimated = [h for h in held if h is not None]
    assert len(estimated) >= 10, held
    low, high = _band(len(estimated))
    assert low <= sum(estimated) / len(estimated) <= 1.0, (sum(estimated), len(estimated))


@pytest.mark.slow
def test_outflow_intervals_hold_the_true_outflow_of_simulated_ip_days():
    """Small IPs whose sold pages reach back over a listing's life give the reference ages at sale; middling and
    large IPs, crawled hourly from a day before, have each day's outflow estimated and held against
    ``true_flows``' sales."""
    references = {f"small{k}": size for k, size in enumerate((1.0, 1.5, 2.0, 2.5, 1.2, 1.8))}
    sizes = {f"mid{k}": size for k, size in enumerate((15.0, 30.0, 60.0, 100.0, 180.0, 300.0))}
    model = MarketModel(7, sizes=references | sizes, bursts={kw: () for kw in references | sizes})
    reference = AgeReference.of([crawl_hourly(model, kw, T0 - 10 * DAY, T0 + 3 * DAY).reference_ages
                                 for kw in references])
    assert reference.sales > 1000
    held = []
    for keyword in sizes:
        seen = crawl_hourly(model, keyword, T0 - DAY, T0 + 3 * DAY)
        inflow = seen.inflow_by_hour()
        for truth in true_flows(model, keyword, T0, T0 + 3 * DAY):
            got = outflow_estimate(list(seen.sales.values()), seen.crawls, inflow, reference, truth.start,
                                   truth.end)
            held.append(_held(got, truth.sold))
    estimated = [h for h in held if h is not None]
    assert len(estimated) >= 15, held
    low, high = _band(len(estimated))
    assert low <= sum(estimated) / len(estimated) <= 1.0, (sum(estimated), len(estimated))


def test_a_sale_carries_its_listings_creation_even_from_before_the_baseline(db, settings):
    """The reference ages at sale come from the sales' ``created_at``: a listing created before the IP's first crawl
    counts no inflow, but its sale's age is known all the same (else the reference keeps only young listings'
    sales, and the outflow estimate reads high shares, too low an outflow)."""
    clock = FrozenClock(T0)
    processor = ResultProcessor(settings, state_redis(settings), clock)
    ip = Catalogue(ScheduleStore(state_redis(settings)), settings, clock).add("鬼滅の刃")
    before, after = T0 - 50 * HOUR, T0 + 600.0
    processor.apply(CrawlResult.parse(ip.id, "t0", T0, [listing("old", "on_sale", int(before))]))
    clock.set(T0 + HOUR)
    processor.apply(CrawlResult.parse(ip.id, "t1", T0 + HOUR, [
        listing("old", "sold", int(before), int(T0 + 1800)), listing("new", "sold", int(after), int(T0 + 3000))]))
    sales = dict(ListingEvent.select(ListingEvent.source_id, ListingEvent.created_at)
                 .where((ListingEvent.ip_id == ip.id) & (ListingEvent.kind == "sold")).tuples())
    assert sales == {"old": int(before), "new": int(after)}
    created = [sid for (sid,) in ListingEvent.select(ListingEvent.source_id)
               .where((ListingEvent.ip_id == ip.id) & (ListingEvent.kind == "created")).tuples()]
    assert created == ["new"]


@pytest.mark.parametrize(("pages", "errors", "reach"), [
    (2, None, None),  # fewer pages than planned, none failed: the search ended, seen whole
    (5, None, 2000.0),  # every planned page read: it goes on past them
    (2, {"on_sale:2": "timeout"}, 2000.0),  # a page failed and the crawl went on: the search did not end there
])
def test_a_searchs_reach_is_kept_unless_it_ended_on_its_pages(db, settings, pages, errors, reach):
    clock = FrozenClock(T0)
    processor = ResultProcessor(settings, state_redis(settings), clock)
    ip = Catalogue(ScheduleStore(state_redis(settings)), settings, clock).add("鬼滅の刃")
    items = [listing(f"i{k}", "on_sale", int(T0 - 2000 + 500 * k)) for k in range(3)]  # created 2000 s … 1000 s ago
    search = {"on_sale": {"num_found": 3, "pages": pages, "items": 3}}
    processor.apply(CrawlResult.parse(ip.id, "t", T0, items, pages, errors, search))
    row = CrawlSearchTotal.get((CrawlSearchTotal.ip_id == ip.id) & (CrawlSearchTotal.status == "on_sale"))
    assert (row.reach, row.newest) == ((None if reach is None else T0 - reach), T0 - 1000.0)


def test_time_to_sell_counts_a_listing_at_risk_while_the_sold_pages_would_show_its_sale():
    """A busy IP: its listings drop off the on-sale pages an hour after listing, while hourly crawls' sold pages
    reach back 20 h. 30 % of them sell at 10 h (seen), the rest stay unsold. Censored at their last on-sale
    sighting, the unsold would leave the risk set at 1 h and the median read 10 h; held at risk while a sale
    would still have shown (until the last crawl whose sold pages reach back to their creation), the share unsold
    after 10 h is 0.7 and the median is beyond what the pages see: insufficient, never 10 h."""
    from lib.market.windows import _time_to_sell

    listings = [(T0 + k * 60.0, T0 + k * 60.0 + 10 * HOUR if k % 10 < 3 else None, T0 + k * 60.0 + HOUR)
                for k in range(100)]
    end = T0 + 30 * HOUR
    crawls = [CrawlReach(T0 + h * HOUR, T0 + (h - 1) * HOUR, T0 + (h - 1) * HOUR, T0 + (h - 20) * HOUR)
              for h in range(1, 30)]
    assert _time_to_sell(listings, T0, end).median.value == pytest.approx(10.0)  # the last sightings alone
    ttl = _time_to_sell(listings, T0, end, crawls)
    assert ttl.median.value is None and ttl.p25.value == pytest.approx(10.0)
    assert dict(ttl.curve)[10.0] == pytest.approx(0.7)


def test_price_shift_is_each_reference_ips_log_ratio_of_medians_weighted_by_sales():
    """Two reference IPs, their prices rising with the age at sale: each one's log ratio of the median price of
    its sales at or above the visible age to that of those below, averaged by sales; the variance as one IP's:
    the spread between them beyond their sampling, plus the mean's sampling."""
    from statistics import median, pvariance

    from lib.market.reach import price_shift

    def ip(level, n):
        return [(k * HOUR, level * (1 + k / n)) for k in range(n)]  # age k h, price rising with it

    a, b = ip(1000.0, 40), ip(3000.0, 60)
    reference = AgeReference.of([[age for age, _ in a], [age for age, _ in b]], [a, b])
    visible = 20 * HOUR

    def ratio(sales):
        logs = [math.log(p) for _, p in sales]
        young = [math.log(p) for age, p in sales if age < visible]
        old = [math.log(p) for age, p in sales if age >= visible]
        return median(old) - median(young), math.pi / 2 * pvariance(logs) * (1 / len(young) + 1 / len(old))

    (ra, va), (rb, vb) = ratio(a), ratio(b)
    mean = (ra * 40 + rb * 60) / 100
    sampling = (va * 40 + vb * 60) / 100
    spread = ((ra - mean) ** 2 * 40 + (rb - mean) ** 2 * 60) / 100 * 2
    shift, variance = price_shift(reference, visible)
    assert shift == pytest.approx(mean) and shift > 0
    assert variance == pytest.approx(max(spread - sampling, 0.0) + sampling / 2)
    # an IP with too few sales on one side of the visible age gives no ratio: none at all here
    assert price_shift(reference, 2 * HOUR) is None


def test_a_mixture_quantile_solves_the_mixed_distribution():
    """Seen prices 100…199 (one each); a quarter of all sales unseen, priced as the seen ones doubled: the median
    of all is where 3/4·G(x) + 1/4·G(x/2) = 1/2, G the seen prices' distribution, found here by a scan."""
    from lib.market.reach import mixture_quantile

    seen = list(range(100, 200))

    def share(x):
        below = sum(1 for p in seen if p <= x) / len(seen)
        return 0.75 * below + 0.25 * sum(1 for p in seen if 2 * p <= x) / len(seen)

    expected = next(x for x in range(100, 400) if share(x) >= 0.5)
    got = mixture_quantile(seen, 0.25, math.log(2), 0.5)
    assert expected - 1 < got <= expected + 1e-6
    assert mixture_quantile(seen, 0.0, math.log(2), 0.5) == pytest.approx(149, abs=1)  # nothing unseen
    assert mixture_quantile([], 0.5, 1.0, 0.5) is None


def test_time_to_sell_leaves_out_listings_the_on_sale_pages_could_not_have_seen_unsold():
    """A huge IP: each hourly crawl's on-sale pages reach back half an hour, its sold pages 20 h. 40 % of its
    listings sell 15 minutes after listing, the rest do not. A listing of the unseen half hour is known only if it
    sold (from the sold pages): counted, the quick sellers of those spans would make up 57 % of the cohort and the
    median 0.25 h. Only the listings the on-sale pages would have seen unsold are the cohort: 40 % sell, no
    median (insufficient)."""
    from lib.market.windows import _time_to_sell

    listings = []
    for k in range(600):  # one a minute for 10 h
        at = T0 + k * 60.0
        sells = k % 5 < 2
        covered = (at - T0) % HOUR >= HOUR / 2  # the half hour before each crawl
        if sells:
            listings.append((at, at + 900.0, None if not covered else at))
        elif covered:
            listings.append((at, None, at + HOUR))  # seen on sale, then off the pages
    end = T0 + 12 * HOUR
    crawls = [CrawlReach(T0 + h * HOUR, T0 + (h - 1) * HOUR, T0 + h * HOUR - HOUR / 2, T0 + (h - 20) * HOUR)
              for h in range(1, 12)]
    sold_share = sum(1 for _, sold, _ in listings if sold) / len(listings)
    assert sold_share == pytest.approx(0.4 / 0.7)  # the quick sellers over-represented
    assert _time_to_sell(listings, T0, end, crawls[:0]).median.value == pytest.approx(0.25)  # reach unknown
    ttl = _time_to_sell(listings, T0, end, crawls)
    assert ttl.listings == 300 and ttl.median.value is None and ttl.p25.value == pytest.approx(0.25)


def test_a_crawl_s_sold_reach_is_the_furthest_back_it_or_a_later_crawl_read():
    """A sale is on every later read reaching back to its listing's creation: a deep read every few crawls shows
    the sales of the shallow ones between (None: a read to the search's end, which saw everything)."""
    from lib.market.reach import furthest_later

    assert furthest_later([100.0, 110.0, 50.0, 120.0, 125.0]) == [50.0, 50.0, 50.0, 120.0, 125.0]
    assert furthest_later([100.0, None, 130.0]) == [None, None, 130.0]
    assert furthest_later([]) == []
