"""Each IP's page plan for its next crawl (lib/market/page_plans.py), as docs/concepts/crawling.md defines it: an
on-sale search that ended is read whole again, one that did not back to the newest listing seen less the late
indexing margin; the sold search back to a listing's life before the crawl. The worker stores it after each
result, a late result leaves the newer plan, SCHEDULER_PAGE_PLAN=false stores none."""

import dataclasses

import pytest

from lib.core import keys
from lib.core.clock import FrozenClock
from lib.core.redis_client import state_redis
from lib.crawling.page_plan import (
    LATE_INDEXING,
    CrawlPlan,
    SearchPlan,
    deep_sold_pages,
    load_plan,
    most_sold_pages,
    spare_sold_pages,
    watch_key,
)
from lib.market.item_state import CrawlItem
from lib.market.page_plans import FALL, RISE, crawl_pages, next_plan, reached_share
from lib.market.processing import CrawlResult, ResultProcessor
from lib.market.reach import MAX_AGE_HOURS
from lib.scheduling.budget_plan import RelistReads
from lib.scheduling.catalogue import Catalogue
from lib.scheduling.schedule import (
    FILL,
    ScheduleStore,
    flow_interval,
    interval_for,
    interval_reason,
    planned_interval,
)
from lib.segments.title_keys import title_match
from models import IpMetadata

H = 3600.0
T0 = 1_800_000_000.0 - (1_800_000_000.0 % H)
LIFE = MAX_AGE_HOURS * H  # written out: 192 h, the search's oldest listings (docs/concepts/simulator.md)


def item(sid, status="on_sale", created=None):
    return {"source_id": sid, "title": f"鬼滅の刃 {sid}", "price": 1000, "status": status,
            "image_url": None, "item_url": None, "created": created, "updated": None}


def items(*raw):
    return [CrawlItem.parse(x) for x in raw]


def test_an_on_sale_search_that_ended_is_read_whole_again(settings):
    plan = next_plan(T0, items(item("a", created=T0 - 50 * H)), {"on_sale": True, "sold": True}, settings)
    assert plan.on_sale.until is None and plan.on_sale.pages == settings.scheduler_pages_on_sale
    assert plan.made_at == T0


def test_an_on_sale_search_that_did_not_end_is_read_back_to_the_newest_listing_seen(settings):
    newest = T0 - 90
    plan = next_plan(T0, items(item("a", created=T0 - 5 * H), item("b", created=newest),
                               item("s", "sold", created=T0 - 30)), {"on_sale": False, "sold": False}, settings)
    assert LATE_INDEXING >= 60  # the reported indexing delays (~50-60 s) fit in the margin
    assert plan.on_sale.until == newest - LATE_INDEXING  # the sold listing's time is not the on-sale search's


def test_a_listing_dated_after_its_crawl_does_not_push_the_plan_past_the_crawl(settings):
    plan = next_plan(T0, items(item("a", created=T0 + 500)), {"on_sale": False}, settings)
    assert plan.on_sale.until == T0 - LATE_INDEXING


def test_without_creation_times_the_on_sale_search_reads_its_cap(settings):
    plan = next_plan(T0, items(item("a")), {"on_sale": False, "sold": False}, settings)
    assert plan.on_sale.until is None


@pytest.mark.parametrize("sold_ended", [True, False])
def test_the_sold_search_is_read_back_a_listing_s_life_before_the_crawl(settings, sold_ended):
    plan = next_plan(T0, items(item("s", "sold", created=T0 - H)), {"on_sale": True, "sold": sold_ended}, settings)
    # every sale after T0 is of a listing created after T0 - LIFE: the pages past that hold none
    assert plan.sold.until == T0 - LIFE - LATE_INDEXING
    assert plan.sold.pages == settings.scheduler_pages_sold


@pytest.fixture
def clock():
    return FrozenClock(T0)


@pytest.fixture
def ip(db, settings, clock):
    return Catalogue(ScheduleStore(state_redis(settings)), settings, clock).add("鬼滅の刃")


def apply(settings, clock, ip, n, at, rows, search):
    clock.set(at)
    ResultProcessor(settings, state_redis(settings), clock).apply(
        CrawlResult.parse(ip.id, f"t{n}", at, rows, search=search))


SEARCH = {"on_sale": {"num_found": None, "pages": 5, "items": 2, "ended": False},
          "sold": {"num_found": None, "pages": 5, "items": 1, "ended": False}}


def test_the_worker_stores_the_plan_of_the_next_crawl_and_a_late_result_leaves_it(settings, clock, ip):
    r = state_redis(settings)
    caps = (settings.scheduler_pages_on_sale, settings.scheduler_pages_sold)
    apply(settings, clock, ip, 1, T0, [item("a", created=T0 - 600)], SEARCH)
    assert load_plan(r, ip.id, *caps).on_sale.until == T0 - 600 - LATE_INDEXING
    apply(settings, clock, ip, 2, T0 + H, [item("a", created=T0 - 600), item("b", created=T0 + 1000)], SEARCH)
    plan = load_plan(r, ip.id, *caps)
    assert (plan.made_at, plan.on_sale.until) == (T0 + H, T0 + 1000 - LATE_INDEXING)
    # a result crawled before the newest one, applied after it: the newer crawl's plan stays
    apply(settings, clock, ip, 3, T0 + H / 2, [item("c", created=T0 + 1500)], SEARCH)
    assert load_plan(r, ip.id, *caps) == plan


def test_with_the_plan_off_the_worker_stores_none(settings, clock, ip):
    off = dataclasses.replace(settings, scheduler_page_plan=False)
    apply(off, clock, ip, 1, T0, [item("a", created=T0 - 600)], SEARCH)
    assert state_redis(settings).get(keys.crawl_plan(ip.id)) is None


def by(sid, seller, created, status="on_sale", title=None):
    return {**item(sid, status, created), "seller": seller, **({"title": title} if title else {})}


def watching(watch):
    return CrawlPlan(SearchPlan(5, watch=watch), SearchPlan(5))


def key(seller, sid):
    return watch_key(seller, title_match(f"鬼滅の刃 {sid}"))


def test_the_plan_watches_the_listings_on_sale_within_relist_within_by_seller_and_title(settings):
    since = T0 - settings.relist_within
    rows = items(by("a", "s1", T0 - H), by("b", "s2", since - 1),  # too old to be relisted
                 by("c", "s3", T0 - 2 * H, "sold"), item("d", created=T0 - H))  # sold; no seller
    watched = {key("s1", "a"): (T0 - 5 * H, since - 10), "elsewhere": (T0 - 3 * H,)}
    plan = next_plan(T0, rows, {"on_sale": False}, settings, last=watching(watched))
    assert plan.on_sale.watch == {key("s1", "a"): (T0 - 5 * H, T0 - H), "elsewhere": (T0 - 3 * H,)}
    # read whole, the next crawl needs no watch
    assert next_plan(T0, rows, {"on_sale": True}, settings, last=watching(watched)).on_sale.watch == {}


def test_a_shop_s_copies_are_all_watched(settings):
    copies = items(*(by(f"a{k}", "s1", T0 - k * 60, title="鬼滅の刃 a") for k in range(10)))
    plan = next_plan(T0, copies, {"on_sale": False}, settings)
    assert plan.on_sale.watch == {key("s1", "a"): tuple(T0 - k * 60 for k in range(9, -1, -1))}


def test_the_worker_carries_the_watch_from_plan_to_plan(settings, clock, ip):
    r = state_redis(settings)
    caps = (settings.scheduler_pages_on_sale, settings.scheduler_pages_sold)
    apply(settings, clock, ip, 1, T0, [by("a", "s1", T0 - 600)], SEARCH)
    apply(settings, clock, ip, 2, T0 + H, [by("b", "s2", T0 + 1000)], SEARCH)  # "a" is past the read
    assert load_plan(r, ip.id, *caps).on_sale.watch == {key("s1", "a"): (T0 - 600,), key("s2", "b"): (T0 + 1000,)}


def test_only_the_newest_listings_the_page_cap_holds_are_watched(settings):
    held = settings.scheduler_pages_on_sale * 120
    rows = items(*(by(f"a{k}", f"s{k % 7}", T0 - k * 60) for k in range(held - 1)))
    old = {"out-of-reach": (T0 - held * 60 - 1,), "in-reach": (T0 - held * 60 + 30,)}
    plan = next_plan(T0, rows, {"on_sale": False}, settings, last=watching(old))
    assert sum(map(len, plan.on_sale.watch.values())) == held
    assert "in-reach" in plan.on_sale.watch and "out-of-reach" not in plan.on_sale.watch


def listed(n, since, until, status="on_sale"):
    """``n`` listings created evenly in (since, until]."""
    return [item(f"{status}-{since}-{k}", status, since + (until - since) * (k + 1) / n) for k in range(n)]


def test_the_flow_is_the_new_listings_an_hour_since_the_last_crawl_up_at_once_down_slowly(settings):
    first = next_plan(T0, items(*listed(30, T0 - 5 * H, T0)), {"on_sale": True}, settings)
    assert first.flow is None  # one crawl: no span to count over
    # 20 listings since the last crawl, two hours ago (one of them sold already), and older ones read again
    rows = items(*listed(19, T0, T0 + 2 * H), *listed(1, T0, T0 + H, "sold"), *listed(30, T0 - 5 * H, T0))
    second = next_plan(T0 + 2 * H, rows, {"on_sale": True}, settings, last=first)
    assert second.flow == 10.0
    burst = next_plan(T0 + 3 * H, items(*listed(40, T0 + 2 * H, T0 + 3 * H)), {"on_sale": True}, settings,
                      last=second)
    assert burst.flow == 40.0  # a rise is taken whole
    calm = next_plan(T0 + 4 * H, items(*listed(10, T0 + 3 * H, T0 + 4 * H)), {"on_sale": True}, settings,
                     last=burst)
    assert calm.flow == pytest.approx(40.0 + RISE * 0 + FALL * (10.0 - 40.0))


def test_past_the_page_cap_the_flow_counts_over_the_span_the_pages_reached(settings):
    last = CrawlPlan(SearchPlan(5), SearchPlan(5), made_at=T0, flow=100.0)
    # the pages reached back half an hour of a two-hour span: 300 listings in it
    rows = items(*listed(300, T0 + 1.5 * H, T0 + 2 * H))
    assert next_plan(T0 + 2 * H, rows, {"on_sale": False}, settings, last=last).flow == 600.0


def test_a_burst_steps_the_ip_s_crawls_up_at_the_result_that_sees_it(settings, clock, ip):
    s = dataclasses.replace(settings, scheduler_min_interval=600.0, scheduler_max_interval=86400.0)
    schedule = ScheduleStore(state_redis(s))
    apply(s, clock, ip, 1, T0, listed(10, T0 - H, T0), SEARCH)
    apply(s, clock, ip, 2, T0 + H, listed(10, T0, T0 + H), SEARCH)
    # 10 an hour fill half of 5 pages in 30 hours: the heat's interval stands (2 hours / its weight)
    heat = interval_for(IpMetadata.get_by_id(ip.id).weight, s)
    assert heat >= 2 * H and schedule.time_of(ip.id) == T0 + H + heat
    # ×40: 400 in the hour fill half the pages in 45 minutes: the next crawl comes then
    apply(s, clock, ip, 3, T0 + 2 * H, listed(400, T0 + H, T0 + 2 * H), SEARCH)
    assert schedule.time_of(ip.id) == T0 + 2 * H + FILL * 5 * 120 / 400 * H == T0 + 2 * H + 45 * 60
    assert interval_reason(ip, s, 400.0) == "flow: 400 new listings an hour fill 50% of 5 pages in 45m"
    # a result crawled before that one, applied after it: the burst's interval stands
    apply(s, clock, ip, 4, T0 + 1.5 * H, listed(5, T0 + H, T0 + 1.5 * H), SEARCH)
    assert schedule.time_of(ip.id) == T0 + 2 * H + 45 * 60
    # pinned: the operator's interval, whatever the flow
    assert planned_interval(Pinned(1.0, 6 * H), 400.0, s) == 6 * H
    assert planned_interval(Pinned(1.0, None), 400.0, s) == 45 * 60


@dataclasses.dataclass
class Pinned:
    weight: float
    pinned_interval: float | None


@pytest.mark.parametrize(("flow", "interval"), [
    (None, None), (0.0, 86400.0), (1.0, 86400.0), (100.0, 3 * H), (600.0, 30 * 60), (10_000.0, 600.0)])
def test_the_flow_s_interval_fills_half_the_on_sale_cap_within_the_bounds(settings, flow, interval):
    s = dataclasses.replace(settings, scheduler_min_interval=600.0, scheduler_max_interval=86400.0)
    assert flow_interval(flow, s) == interval


def test_the_share_reached_is_the_span_the_on_sale_pages_read_back_over_the_span_since_the_last_crawl():
    last = CrawlPlan(SearchPlan(5), SearchPlan(5), made_at=T0 - 4 * H)
    read = items(item("a", created=T0 - H), item("b", created=T0 - 10), item("s", "sold", created=T0 - 3.5 * H))
    # the on-sale pages reached back an hour of the four since the last crawl (a sold listing is not the reach)
    assert reached_share(T0, read, False, last) == pytest.approx(0.25)
    assert reached_share(T0, read, True, last) == 1  # read whole: every listing was on the pages
    back = items(item("a", created=T0 - 5 * H))
    assert reached_share(T0, back, False, last) == 1  # the pages reached past the last crawl
    assert reached_share(T0, read, False, None) == 1  # a first crawl: nothing to compare with


def sold_listings(n, newest, spacing):
    return [item(f"s{k}", "sold", newest - k * spacing) for k in range(n)]


def test_a_sold_search_that_outruns_its_cap_is_read_deep_every_few_crawls_and_its_newest_page_between(settings):
    """The cycle of docs/concepts/crawling.md: a read to the cap that falls short of a listing's life, then
    SCHEDULER_SOLD_DEEP_EVERY - 1 reads of the newest page, then one deep read of the cap of that many crawls less
    those pages; a deep read that reaches back a listing's life ends the cycle."""
    settings = dataclasses.replace(settings, scheduler_sold_deep_every=4)
    every, cap = settings.scheduler_sold_deep_every, settings.scheduler_pages_sold
    assert every == 4 and deep_sold_pages(settings) == every * cap - (every - 1)
    short = sold_listings(10, T0 - 60, 60)  # reaches back 10 minutes: far short of a listing's life
    plan = next_plan(T0, items(*short), {"on_sale": True, "sold": False}, settings,
                     last=CrawlPlan(SearchPlan(5), SearchPlan(cap, T0 - H - LIFE), made_at=T0 - H))
    kinds = []
    for k in range(1, 2 * every + 1):
        kinds.append((plan.sold.pages, plan.sold_shallow))
        plan = next_plan(T0 + k * H, items(*short), {"on_sale": True, "sold": False}, settings, last=plan)
    deep = deep_sold_pages(settings)
    assert kinds == [(1, 1), (1, 2), (1, 3), (deep, 0), (1, 1), (1, 2), (1, 3), (deep, 0)]
    # a deep read that reached back a listing's life: back to the cap
    whole = sold_listings(3, T0, 100 * H)
    after = next_plan(T0 + 9 * H, items(*whole), {"on_sale": True, "sold": False}, settings,
                      last=dataclasses.replace(plan, sold_shallow=0))
    assert (after.sold.pages, after.sold_shallow) == (cap, 0)
    # one that ended on its pages, likewise
    ended = next_plan(T0 + 9 * H, items(*short), {"on_sale": True, "sold": True}, settings,
                      last=dataclasses.replace(plan, sold_shallow=0))
    assert (ended.sold.pages, ended.sold_shallow) == (cap, 0)


def test_with_deep_reads_off_every_crawl_reads_the_sold_cap(settings):
    off = settings
    assert off.scheduler_sold_deep_every == 1  # the default
    short = sold_listings(10, T0 - 60, 60)
    plan = next_plan(T0, items(*short), {"sold": False}, off,
                     last=CrawlPlan(SearchPlan(5), SearchPlan(5, T0 - H - LIFE), made_at=T0 - H))
    assert (plan.sold.pages, plan.sold_shallow) == (off.scheduler_pages_sold, 0)


def test_spare_requests_read_an_outrunning_sold_search_deeper_within_the_most_allowed(settings):
    """docs/concepts/scheduling.md, Under the request budget: the price's sold pages replace the cap, up to
    SCHEDULER_PAGES_SOLD_MAX; never below the cap, and not with deep reads every few crawls."""
    short = sold_listings(10, T0 - 60, 60)
    last = CrawlPlan(SearchPlan(5), SearchPlan(5, T0 - H - LIFE), made_at=T0 - H)
    cap, most = settings.scheduler_pages_sold, settings.scheduler_pages_sold_max
    assert (cap, most) == (5, 20)  # the defaults
    for spare, pages in ((12, 12), (0, cap), (3, cap), (most + 7, most)):
        plan = next_plan(T0, items(*short), {"sold": False}, settings, last=last, spare_pages=spare)
        assert (plan.sold.pages, plan.sold.until) == (pages, T0 - LIFE - LATE_INDEXING)
    assert "request budget" in next_plan(T0, items(*short), {"sold": False}, settings, last, 12).sold.why
    cycle = dataclasses.replace(settings, scheduler_sold_deep_every=4)
    assert spare_sold_pages(cycle) == cap and most_sold_pages(cycle) == deep_sold_pages(cycle)
    assert next_plan(T0, items(*short), {"sold": False}, cycle, last=last, spare_pages=12).sold.pages == 1


def test_the_worker_plans_the_spare_pages_and_the_crawler_reads_them(settings, clock, ip):
    """Through the worker: the price the tick set gives the next plan its sold pages, the IP's cost says its sold
    search outran (and counts the cap for it), and the crawler's plan holds the deeper pages."""
    from lib.crawling.page_plan import plan_for
    from lib.scheduling.budget_plan import CostStore, Price

    r = state_redis(settings)
    CostStore(r).set_price(Price(price=0.0, budget=500, planned=100, ips=1, lengthened=0, unseen=1, at=T0,
                                 sold_pages=14, deepened=1))
    sold = {**SEARCH, "sold": {"num_found": None, "pages": 5, "items": 600, "ended": False}}
    apply(settings, clock, ip, 1, T0, [item("a", created=T0 - 600), *sold_listings(3, T0 - 60, 60)], sold)
    apply(settings, clock, ip, 2, T0 + H, [item("a", created=T0 - 600), *sold_listings(3, T0 + H - 60, 60)], sold)
    assert plan_for(r, ip.id, settings).sold.pages == 14
    cost = CostStore(r).all(T0 + H)[ip.id]
    assert cost.outran and cost.pages == 1 + settings.scheduler_pages_sold
    # without a price (no budget), the cap
    CostStore(r).clear_price()
    apply(settings, clock, ip, 3, T0 + 2 * H, [item("a", created=T0 - 600)], sold)
    assert plan_for(r, ip.id, settings).sold.pages == settings.scheduler_pages_sold
    CostStore(r).set_price(Price(price=0.0, budget=500, planned=100, ips=1, lengthened=0, unseen=1, at=T0,
                                 sold_pages=14, deepened=1))
    old = item("s-old", "sold", T0 - LIFE - 3 * H)  # past the plan's depth: the sold search reached back
    cases = [(3, True, 5), (9, True, 14),  # within the cap: the cap; it took more pages to reach back: deeper
             (5, False, 5), (20, False, 5)]  # read from the DOM (no creation times): the cap
    for n, (pages, dated, planned) in enumerate(cases, start=4):
        at = T0 + n * H
        rows = [item("a", created=T0 - 600), *sold_listings(3, at - 60, 60), old]
        rows = rows if dated else [{**row, "created": None} for row in rows]
        apply(settings, clock, ip, n, at, rows,
              {**SEARCH, "sold": {"num_found": None, "pages": pages, "items": 600, "ended": False}})
        assert plan_for(r, ip.id, settings).sold.pages == planned, (pages, dated)


def test_a_stored_deep_read_keeps_its_pages_and_a_cap_lowered_since_holds_it(settings):
    deep = CrawlPlan(SearchPlan(5), SearchPlan(17, T0 - LIFE), made_at=T0, sold_shallow=0)
    text = deep.to_json()
    assert CrawlPlan.from_json(text, 5, 17) == deep
    assert CrawlPlan.from_json(text, 5, 5).sold.pages == 5
    shallow = dataclasses.replace(deep, sold=SearchPlan(1, T0 - LIFE), sold_shallow=2)
    assert CrawlPlan.from_json(shallow.to_json(), 5, 17).sold_shallow == 2
    for bad in ('"x"', "-1", "true", "1.5"):
        with pytest.raises(ValueError):
            CrawlPlan.from_json(text.replace('"sold_shallow":0', f'"sold_shallow":{bad}'), 5, 17)


def test_the_pages_a_crawl_spends_whatever_its_interval():
    """What the request budget's planner counts per crawl (docs/concepts/scheduling.md): a search read whole or
    back to its depth, its pages; an on-sale search read back to the last crawl, its first page (the others follow
    the flow); a sold search that outran its pages, the cap (its average over the deep reads' cycle)."""
    from lib.market.processing import SearchTotal

    on_sale, sold = SearchTotal("on_sale", None, 3, 300), SearchTotal("sold", None, 2, 200)
    assert crawl_pages([on_sale, sold], {"on_sale": True, "sold": False}, 5, False) == 3 + 2
    assert crawl_pages([on_sale, sold], {"on_sale": False, "sold": False}, 5, False) == 1 + 2
    assert crawl_pages([on_sale, SearchTotal("sold", None, 1, 120)], {"on_sale": False}, 5, True) == 1 + 5
    assert crawl_pages([], {}, 5, False) == 2


def relist_plan(settings, undecided, flow=40.0, read_at=None, at=T0 + 48 * H):
    last = CrawlPlan(SearchPlan(5), SearchPlan(5), made_at=at - H, flow=flow, relists_read_at=read_at)
    return next_plan(at, items(item("a", created=at - 600)), {"on_sale": False, "sold": False}, settings, last,
                     undecided=undecided)


def test_the_on_sale_search_is_read_back_to_what_undecided_listings_may_relist_once_a_day(settings):
    """SCHEDULER_RELIST_PAGES (30) at the IP's flow (about 30 new listings an hour) reach back about 120 hours:
    the read goes back to the oldest earlier listing within them, and a crawl within SCHEDULER_RELIST_EVERY (24 h)
    of the last such read does not."""
    at = T0 + 48 * H
    plan = relist_plan(settings, [at - 30 * H, at - 80 * H, at - 200 * H])
    assert 80 * H < settings.scheduler_relist_pages * 120 / plan.flow * H < 200 * H
    assert (plan.on_sale.pages, plan.on_sale.until) == (30, at - 80 * H - LATE_INDEXING)
    assert plan.relists_read_at == at and "2 undecided" in plan.on_sale.why
    # the next crawl, an hour later: not due; the crawl a day after the read: due again
    assert relist_plan(settings, [at - 30 * H], read_at=at, at=at + H).on_sale.pages == 5
    assert relist_plan(settings, [at - 30 * H], read_at=at, at=at + H).relists_read_at == at
    assert relist_plan(settings, [at - 30 * H], read_at=at, at=at + 24 * H).on_sale.pages == 30


@pytest.mark.parametrize("case", ["none undecided", "out of reach", "flow unknown", "pages at the cap", "ended"])
def test_no_read_back_for_relists_where_it_would_tell_nothing_or_is_off(settings, case):
    at = T0 + 48 * H
    undecided = [] if case == "none undecided" else [at - 80 * H]
    flow = 1200.0 if case == "out of reach" else None if case == "flow unknown" else 40.0
    s = dataclasses.replace(settings, scheduler_relist_pages=5) if case == "pages at the cap" else settings
    if case in ("ended", "flow unknown"):  # the search read whole; the IP's first plan
        last = CrawlPlan(SearchPlan(5), SearchPlan(5), made_at=at - H, flow=flow) if case == "ended" else None
        plan = next_plan(at, items(item("a", created=at - 600)), {"on_sale": case == "ended", "sold": False}, s,
                         last, undecided=undecided)
    else:
        plan = relist_plan(s, undecided, flow)
    assert plan.on_sale.pages == 5 and plan.relists_read_at is None


def test_a_stored_read_back_for_relists_keeps_its_pages_and_the_time_it_was_planned(settings):
    from lib.crawling.page_plan import most_on_sale_pages, plan_for

    plan = relist_plan(settings, [T0])
    assert CrawlPlan.from_json(plan.to_json(), most_on_sale_pages(settings), 5) == plan
    assert CrawlPlan.from_json(plan.to_json(), 5, 5).on_sale.pages == 5  # the most lowered since: it holds
    r = state_redis(settings)
    r.set(keys.crawl_plan(77), plan.to_json())
    assert plan_for(r, 77, settings) == plan  # the crawler reads all its pages


def test_the_worker_plans_a_read_back_to_an_undecided_listing_s_earlier_listing(settings, clock, ip):
    """A shop's listing left undecided: the worker's next plan reads the on-sale search back to its earlier
    listing, and that crawl decides it (tests/market/test_relists.py). With item checks on, a listing the next crawl
    checks is left to its check."""
    from lib.crawling.page_plan import plan_for

    checking = settings
    settings = dataclasses.replace(settings, scheduler_relist_checks=0)
    shop = [by(f"s{k}", "shop", T0 - 2 * H - k, title="鬼滅の刃 缶バッジ") for k in range(12)]
    apply(settings, clock, ip, 1, T0, [by("e", "shop", T0 - H), *shop], SEARCH)
    apply(settings, clock, ip, 2, T0 + H, [by("x", "other", T0 + H - 900)], SEARCH)  # a second crawl: a flow
    apply(settings, clock, ip, 3, T0 + 30 * H, [by("r", "shop", T0 + 30 * H - 600, title="鬼滅の刃 e")], SEARCH)
    plan = plan_for(state_redis(settings), ip.id, settings)
    assert plan.on_sale.pages == settings.scheduler_relist_pages
    assert plan.on_sale.until == T0 - H - LATE_INDEXING
    # the crawl reads 12 pages back: the 11 past the first are the read's cost, which the budget's planner takes
    # off the budget (lib.scheduling.budget_plan.RelistReads); the crawl after it, a usual one, costs it nothing
    deep = {**SEARCH, "on_sale": {"num_found": None, "pages": 12, "items": 2, "ended": False}}
    apply(settings, clock, ip, 4, T0 + 31 * H, [by("r", "shop", T0 + 30 * H - 600, title="鬼滅の刃 e"),
                                                  by("old", "other", T0 - 3 * H)], deep)
    apply(settings, clock, ip, 5, T0 + 32 * H, [by("r", "shop", T0 + 30 * H - 600, title="鬼滅の刃 e")], deep)
    assert RelistReads(state_redis(settings)).per_hour(T0 + 33 * H) == pytest.approx(11 / 24)
    assert plan_for(state_redis(settings), ip.id, settings).on_sale.pages == settings.scheduler_pages_on_sale
    apply(checking, clock, ip, 6, T0 + 60 * H, [by("r2", "shop", T0 + 60 * H - 600, title="鬼滅の刃 e")], SEARCH)
    plan = plan_for(state_redis(settings), ip.id, settings)
    assert plan.checks == ("r",) and plan.on_sale.pages == settings.scheduler_pages_on_sale


def test_the_worker_plans_checks_of_undecided_listings_and_counts_them_against_the_budget(settings, clock, ip):
    """A shop's listing left undecided: the worker's next plan checks its earlier listing on its page (at most
    SCHEDULER_RELIST_CHECKS, the longest undecided first); the checks the crawl made, read or failed, are requests
    the budget's planner takes off the budget (lib.scheduling.budget_plan.RelistReads)."""
    from lib.crawling.page_plan import plan_for

    settings = dataclasses.replace(settings, scheduler_relist_pages=0)  # no read back: the checks alone
    shop = [by(f"s{k}", "shop", T0 - 2 * H - k, title="鬼滅の刃 缶バッジ") for k in range(12)]
    apply(settings, clock, ip, 1, T0, [by("e1", "shop", T0 - H, title="鬼滅の刃 ア"),
                                       by("e2", "shop", T0 - H + 1, title="鬼滅の刃 イ"), *shop], SEARCH)
    apply(settings, clock, ip, 2, T0 + H, [by("r2", "shop", T0 + H - 900, title="鬼滅の刃 イ"),
                                           by("r1", "shop", T0 + H - 600, title="鬼滅の刃 ア")], SEARCH)
    r = state_redis(settings)
    assert plan_for(r, ip.id, settings).checks == ("e2", "e1")
    clock.set(T0 + 2 * H)
    ResultProcessor(settings, r, clock).apply(CrawlResult.parse(
        ip.id, "t3", T0 + 2 * H, [], errors={"check:e1": "timeout"}, search=SEARCH, checks={"e2": "on_sale"}))
    assert RelistReads(r).per_hour(T0 + 3 * H) == pytest.approx(2 / 24)
    assert plan_for(r, ip.id, settings).checks == ("e1",)  # e2's listing decided; e1's not read yet
    ResultProcessor(dataclasses.replace(settings, scheduler_relist_checks=0), r, clock).apply(CrawlResult.parse(
        ip.id, "t4", T0 + 3 * H, [], search=SEARCH))
    assert plan_for(r, ip.id, settings).checks == ()
    # a request budget that binds (a price above 0): no checks; one that does not: checks
    from lib.scheduling.budget_plan import CostStore, Price

    for price, checks in ((0.5, ()), (0.0, ("e1",))):
        CostStore(r).set_price(Price(price=price, budget=500, planned=100, ips=1, lengthened=0, unseen=1, at=T0))
        apply(settings, clock, ip, f"p{price}", T0 + 4 * H, [], SEARCH)
        assert plan_for(r, ip.id, settings).checks == checks
