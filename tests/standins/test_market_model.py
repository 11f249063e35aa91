"""The realistic market model (lib/standins/simulator/model.py): each trait against its stated distribution in
market_traits.toml, and the truth computed from the listings' stories. Each test fails if its trait is removed."""

import math
import statistics
from collections import Counter
from dataclasses import replace

import pytest

from lib.standins.simulator.model import DAY, HOUR, MarketModel
from lib.standins.simulator.stories import ON_SALE, Burst
from lib.standins.simulator.traits import TRAITS_FILE, load_traits
from lib.standins.simulator.truth import goods_sale, on_sale_count, true_flow, true_flows

#: A Monday 00:00 in Japan (2026-06-01 00:00 JST).
MONDAY = 1_780_239_600.0
TRAITS = load_traits()


def model(**sizes: float) -> MarketModel:
    return MarketModel(7, sizes=sizes)


def week(m: MarketModel, keyword: str, start: float = MONDAY) -> list:
    return list(m.listings(keyword, start, start + 7 * DAY))


@pytest.fixture(scope="module")
def big():
    """A week of an IP of 150 new listings an hour without bursts (its model, its stories)."""
    m = MarketModel(7, sizes={"big": 150.0}, bursts={"big": ()})
    return m, week(m, "big")


def test_the_traits_file_names_a_source_or_a_modelling_choice_for_every_section():
    text = TRAITS_FILE.read_text(encoding="utf-8")
    sections = [block for block in text.split("\n[") if not block.startswith("#")][1:]
    assert len(sections) >= 12
    for block in sections:
        assert "Source:" in block or "Modelling choice" in block, block.splitlines()[0]


def test_sizes_are_heavy_tailed_across_four_orders_of_magnitude():
    m = MarketModel(1)
    sizes = sorted(m.profile(f"ip-{i}").size for i in range(3000))
    assert sizes[0] >= TRAITS.sizes.minimum and sizes[-1] <= TRAITS.sizes.maximum
    assert math.log10(sizes[-1] / sizes[0]) >= 3.9  # four orders of magnitude
    # a Pareto of tail index 0.45: the median near minimum * 2^(1/0.45), the top 1 % holding over half the flow
    assert 0.2 < statistics.median(sizes) < 0.8
    assert sum(sizes[-30:]) / sum(sizes) > 0.5
    # Hill's estimate of the tail index over the top 300
    top = sizes[-300:]
    hill = 1 / statistics.mean(math.log(s / top[0]) for s in top[1:])
    assert 0.3 < hill < 0.65, hill


def test_sizes_are_the_flow_an_ip_lists(big):
    m, stories = big  # no burst: the week's flow is the size times the cycle's and trend's mean
    listed = sum(1 for s in stories if s.relist_of is None)
    mean_trend = statistics.mean(m.trend("big", MONDAY + h * HOUR) for h in range(168))
    assert listed == pytest.approx(150 * 168 * mean_trend, rel=0.05)


def test_the_daily_cycle_follows_japan_time(big):
    m, stories = big
    by_hour: Counter[int] = Counter()
    for story in stories:
        by_hour[int((story.created + 9 * HOUR) // HOUR) % 24] += 1
    total = sum(by_hour.values())
    for hour in range(24):
        assert by_hour[hour] / total == pytest.approx(TRAITS.cycle.daily[hour] / 24, rel=0.12), hour
    assert by_hour[21] > 5 * by_hour[4]  # the evening peak against the night


def test_the_weekly_cycle_lifts_the_weekend(big):
    m, stories = big
    by_day: Counter[int] = Counter()
    for story in stories:
        by_day[int((story.created - MONDAY) // DAY)] += 1
    trend = [statistics.mean(m.trend("big", MONDAY + d * DAY + h * HOUR) for h in range(24)) for d in range(7)]
    total = sum(by_day[d] / trend[d] for d in range(7))
    for day in range(7):
        assert by_day[day] / trend[day] / total == pytest.approx(TRAITS.cycle.weekly[day] / 7, rel=0.06), day


def test_each_ip_draws_its_own_bursts_deterministically():
    a, b = MarketModel(3), MarketModel(3)
    span = (MONDAY, MONDAY + 365 * DAY)
    bursts = {kw: a.bursts(kw, *span) for kw in ("ip-a", "ip-b", "ip-c")}
    assert bursts == {kw: b.bursts(kw, *span) for kw in bursts}  # the same seed, the same bursts
    assert len({tuple(v) for v in bursts.values()}) == 3  # each IP its own
    per_year = statistics.mean(len(a.bursts(f"ip-{i}", *span)) for i in range(200))
    assert per_year == pytest.approx(365 / TRAITS.bursts.period_days * TRAITS.bursts.per_period, rel=0.15)
    assert {x.kind for v in bursts.values() for x in v} <= {k.name for k in TRAITS.bursts.kinds}


def test_a_burst_raises_the_flow_by_its_factor_in_its_window():
    start = MONDAY + 2 * DAY
    quiet = MarketModel(5, sizes={"ip": 60.0}, bursts={"ip": ()})
    loud = MarketModel(5, sizes={"ip": 60.0}, bursts={"ip": (Burst("announcement", start, start + DAY, 4.0),)})
    inside = [sum(1 for s in m.listings("ip", start, start + DAY) if s.relist_of is None) for m in (quiet, loud)]
    before = [sum(1 for s in m.listings("ip", MONDAY, start) if s.relist_of is None) for m in (quiet, loud)]
    assert inside[1] / inside[0] == pytest.approx(4.0, rel=0.05)
    assert before[1] == before[0]  # nothing changes outside its window


def test_prices_and_times_to_sell_differ_by_goods_type_and_ip(big):
    other = model(small=40.0)
    goods = dict(TRAITS.goods)
    for m, keyword, listed in ((big[0], "big", big[1]), (other, "small", week(other, "small"))):
        level = m.profile(keyword).price_level
        stories = [s for s in listed if s.auction is None and s.relist_of is None]
        by_goods: dict[str, list[int]] = {}
        for s in stories:
            by_goods.setdefault(s.goods, []).append(s.prices[0].price)
        for kind in ("can_badge", "figure"):
            assert statistics.median(by_goods[kind]) == pytest.approx(goods[kind].median_price * level, rel=0.15)
        badges = [s.sold_at - s.created for s in stories if s.goods == "can_badge" and s.sold_at]
        figures = [s.sold_at - s.created for s in stories if s.goods == "figure" and s.sold_at]
        assert statistics.median(badges) < statistics.median(figures)  # cheap badges sell sooner than figures
    assert big[0].profile("big").price_level != pytest.approx(other.profile("small").price_level, rel=0.05)


def test_cheaper_listings_sell_more_often_and_faster(big):
    stories = [s for s in big[1] if s.auction is None and s.relist_of is None and s.relisted_as is None
               and s.goods == "can_badge"]
    median = statistics.median(s.prices[0].price for s in stories)
    cheap = [s for s in stories if s.prices[0].price < median * 0.7]
    dear = [s for s in stories if s.prices[0].price > median * 1.4]
    def share(group):
        return sum(s.sold_at is not None for s in group) / len(group)
    def wait(group):
        return statistics.median(s.sold_at - s.created for s in group if s.sold_at is not None)
    assert share(cheap) > share(dear) + 0.05
    assert wait(cheap) < 0.7 * wait(dear)


def test_price_cuts_happen_at_the_stated_share_and_lower_the_price(big):
    stories = [s for s in big[1] if s.auction is None and s.relist_of is None]
    cut = [s for s in stories if len(s.prices) == 2]
    # a cut drawn after the listing ended is not made: fewer than the share, but most of it
    assert 0.5 * TRAITS.price_cuts.share < len(cut) / len(stories) < TRAITS.price_cuts.share
    for s in cut:
        low, high = TRAITS.price_cuts.factor
        assert s.prices[1].price < s.prices[0].price and s.prices[1].at > s.created
        assert s.prices[1].price >= 300 and s.prices[1].price / s.prices[0].price > low - 0.05
        assert s.price_at(s.prices[1].at + 1) == s.prices[1].price
    sold_after_cut = [s for s in cut if s.sold_at is not None and s.sold_at > s.prices[1].at]
    assert sold_after_cut and all(s.sold_price == s.prices[1].price for s in sold_after_cut)


def test_relists_keep_seller_and_goods_with_a_new_id_and_the_same_or_a_near_same_title():
    m = model(mid=40.0)
    stories = week(m, "mid", MONDAY + 7 * DAY)
    relists = [s for s in stories if s.relist_of is not None]
    assert relists
    originals = {s.id: s for s in m.listings("mid", MONDAY, MONDAY + 14 * DAY)}
    same_title = 0
    for new in relists:
        old = originals[new.relist_of]
        assert old.relisted_as == new.id != old.id
        assert (new.seller_id, new.goods, new.first_listed) == (old.seller_id, old.goods, old.created)
        assert new.created == old.ended_at and old.sold_at is None  # deleted unsold, listed again then
        assert old.status_at(new.created) is None and new.status_at(new.created) == ON_SALE
        assert new.title.startswith(old.title) and len(new.title) - len(old.title) <= 8
        same_title += new.title == old.title
        days = (new.created - old.created) / DAY
        assert days == int(days) and TRAITS.relists.after_days[0] <= days <= TRAITS.relists.after_days[1]
    assert same_title / len(relists) == pytest.approx(TRAITS.relists.same_title, abs=0.12)
    fixed = [s for s in stories if s.relist_of is None and s.auction is None]
    assert 0.1 < sum(s.relisted_as is not None for s in fixed) / len(fixed) < TRAITS.relists.share


def test_auctions_have_rising_bids_and_sell_at_their_last_bid(big):
    stories = big[1]
    auctions = [s for s in stories if s.auction is not None]
    assert len(auctions) / len(stories) == pytest.approx(TRAITS.auctions.share, rel=0.2)
    for s in auctions:
        a = s.auction
        assert [b.price for b in a.bids] == sorted(b.price for b in a.bids)
        assert s.price_at(a.start) == (a.bids[0].price if a.bids and a.bids[0].at == a.start else a.start_price)
        if a.bids:
            assert s.sold_at == a.end and s.sold_price == a.bids[-1].price
        else:
            assert s.sold_at is None and s.ended_at == a.end


def test_the_indexing_delay_is_within_its_stated_range():
    delays = [s.index_delay for s in week(model(mid=10.0), "mid")]
    low, high = TRAITS.search.index_delay_seconds
    assert min(delays) >= low and max(delays) <= high
    assert statistics.mean(delays) == pytest.approx((low + high) / 2, abs=1)


def test_stories_are_deterministic_from_seed_ip_and_time():
    a, b, c = MarketModel(11), MarketModel(11), MarketModel(12)
    hour = int(MONDAY // HOUR) + 30
    assert a.created_in("推しの子", hour) == b.created_in("推しの子", hour)
    # the cache does not change the answer: drawn again from scratch, the same stories
    assert MarketModel(11, cache_hours=1).created_in("推しの子", hour) == a.created_in("推しの子", hour)
    assert a.created_in("推しの子", hour) != c.created_in("推しの子", hour)
    story = a.created_in("推しの子", hour)[3]
    assert a.story("推しの子", story.id, story.created) == story


def test_the_truth_counts_every_story_once():
    m = model(mid=20.0)
    start = MONDAY + 7 * DAY
    days = true_flows(m, "mid", start, start + 3 * DAY)
    hours = true_flows(m, "mid", start, start + 3 * DAY, HOUR)
    assert len(days) == 3 and len(hours) == 72
    assert sum(d.listed for d in days) == sum(h.listed for h in hours)
    assert sum(d.sold for d in days) == sum(h.sold for h in hours)
    whole = true_flow(m, "mid", start, start + DAY)
    stories = list(m.listings("mid", start - 9 * DAY, start + DAY))
    sales = [s for s in stories if s.sold_at is not None and start <= s.sold_at < start + DAY]
    assert whole == days[0]
    assert whole.listed == sum(1 for s in stories if start <= s.created < start + DAY and s.relist_of is None)
    assert whole.relisted == sum(1 for s in stories if start <= s.created < start + DAY and s.relist_of)
    assert whole.sold == len(sales)
    assert whole.sold_price_median == statistics.median(s.sold_price for s in sales if s.auction is None)
    cohort = [s for s in stories if start <= s.created < start + DAY and s.relist_of is None]
    sold = [s for s in cohort if (goods_sale(m, s) or math.inf) < start + DAY]
    assert whole.sell_through == len(sold) / len(cohort)
    # goods that sold under their relist count for the cohort of their first listing
    assert any(s.relisted_as and goods_sale(m, s) for s in cohort)


def test_on_sale_count_is_what_the_on_sale_search_holds():
    m = model(small=3.0)
    t = MONDAY + 10 * DAY
    stories = list(m.listings("small", t - 20 * DAY, t + 1))
    expected = sum(1 for s in stories if s.created + s.index_delay <= t and s.status_at(t - s.index_delay) == ON_SALE)
    assert on_sale_count(m, "small", t) == expected > 0


def test_the_traits_can_be_changed_by_an_operator():
    traits = replace(TRAITS, auctions=replace(TRAITS.auctions, share=0.0))
    stories = list(MarketModel(7, traits, sizes={"big": 40.0}).listings("big", MONDAY, MONDAY + DAY))
    assert stories and not any(s.auction for s in stories)
