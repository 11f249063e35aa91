"""Pages that follow change (lib/crawling/page_plan.py, lib/crawling/crawl.py's ``after_page``): a search stops at
its end, at its cap, or at the page that reaches the plan's creation time; a page without creation times never
reaches it; a stored plan is read back (held to today's caps), and a missing or unreadable one reads the caps."""

import asyncio
import dataclasses
import logging

import pytest
import redis

from lib.core import keys
from lib.core.redis_client import state_redis
from lib.core.settings import load_settings
from lib.crawling.crawl import ENDED, REACHED, Crawler, PageRead, after_page
from lib.crawling.page_fetch import PageResult
from lib.crawling.page_plan import (
    LATE_INDEXING,
    PLAN_TTL,
    CrawlPlan,
    SearchPlan,
    caps,
    load_plan,
    plan_for,
    store_plan,
    watch_key,
)
from lib.segments.title_keys import title_match

from ..helpers import simulator_crawl_env

KEYWORD = "鬼滅の刃"
ON_SALE, SOLD = {"on_sale"}, {"sold_out", "trading"}


def page(n_items: int, has_next: bool = True) -> PageResult:
    return PageResult(items=[{"source_id": f"m{k}"} for k in range(n_items)], has_next=has_next)


@pytest.mark.parametrize(("until", "oldest", "reached"), [
    (None, 100.0, False),   # no plan: never
    (100.0, 100.0, True),   # at the plan's time
    (100.0, 99.0, True),    # past it
    (100.0, 101.0, False),  # short of it
    (100.0, None, False),   # no creation time on the page (the DOM's)
])
def test_a_page_reaches_the_plan_when_its_oldest_listing_is_at_or_before_until(until, oldest, reached):
    assert SearchPlan(5, until).reached(oldest) is reached


def test_after_page_stops_at_the_end_of_the_results_first_then_at_the_plan():
    plan = SearchPlan(5, until=100.0)
    assert after_page(page(120, has_next=False), PageRead(120, 0, 50.0), plan) == ENDED
    assert after_page(page(120), PageRead(0, 120, None), plan) == ENDED  # padding only: past the real results
    assert after_page(page(120), PageRead(100, 20, 99.0), plan) == REACHED
    assert after_page(page(120), PageRead(100, 20, 101.0), plan) is None
    assert after_page(page(0), PageRead(0, 0, None), plan) is None  # an empty answer says nothing
    assert after_page(page(120), PageRead(120, 0, 1.0), SearchPlan(5)) is None  # no plan: to the cap


def test_a_stored_plan_is_read_back_within_today_s_caps(settings):
    r = state_redis(settings)
    plan = CrawlPlan(SearchPlan(5, 1000.5, "back to the newest listing the last crawl saw"),
                     SearchPlan(5, None, "the page cap"), made_at=2000.0)
    store_plan(r, 7, plan)
    assert load_plan(r, 7, 5, 5) == plan
    assert 0 < r.ttl(keys.crawl_plan(7)) <= PLAN_TTL
    lowered = load_plan(r, 7, 2, 3)  # SCHEDULER_PAGES_* lowered since the plan was made
    assert (lowered.on_sale.pages, lowered.sold.pages, lowered.on_sale.until) == (2, 3, 1000.5)


@pytest.mark.parametrize("stored", [
    None, b"not json", b"[]", b'{"on_sale": {"pages": 0}, "sold": {"pages": 5}}',
    b'{"on_sale": {"pages": 5, "until": "soon"}, "sold": {"pages": 5}}',
    b'{"on_sale": {"pages": true}, "sold": {"pages": 5}}', b'{"on_sale": {"pages": 5}}',
])
def test_no_plan_or_an_unreadable_one_reads_the_caps(settings, caplog, stored):
    r = state_redis(settings)
    if stored is not None:
        r.set(keys.crawl_plan(8), stored)
    with caplog.at_level(logging.WARNING, logger="lib.crawling.page_plan"):
        assert load_plan(r, 8, 4, 3) == CrawlPlan.caps(4, 3)
    assert ("unreadable" in caplog.text) is (stored is not None)


def test_an_unreachable_state_store_reads_the_caps(caplog):
    unreachable = redis.Redis(host="127.0.0.1", port=1, socket_connect_timeout=1, retry=None)
    with caplog.at_level(logging.WARNING, logger="lib.crawling.page_plan"):
        assert load_plan(unreachable, 9, 5, 5) == CrawlPlan.caps(5, 5)
    assert "could not read its crawl plan" in caplog.text


@pytest.fixture
def crawl_env(env, sim, chromium):
    return simulator_crawl_env(env, sim, chromium)


def created(sim, statuses, number: int, index: int) -> float:
    return float(sim.truth(KEYWORD, statuses, number)[index]["created"])


@pytest.mark.parametrize("path", ["api", "dom"])
def test_a_real_crawl_stops_each_search_where_its_plan_reaches(crawl_env, sim, path):
    """Real Chromium against the simulator: on sale, a time on page 2 stops the search after page 2; sold, a time on
    page 3 after page 3. The DOM shows no creation time, so read from it the same plan reads the caps."""
    env = {**crawl_env, **({"MERCARI_API_PATTERN": r"/v9/renamed:search"} if path == "dom" else {})}
    settings = load_settings(env)
    plan = CrawlPlan(SearchPlan(5, created(sim, ON_SALE, 2, 40)), SearchPlan(5, created(sim, SOLD, 3, 0)))

    async def go():
        crawler = Crawler.from_settings(settings)
        try:
            return await crawler.crawl(7, KEYWORD, "t-plan", plan=plan)
        finally:
            await crawler.close()

    result = asyncio.run(go())
    pages = {label: total["pages"] for label, total in result["search"].items()}
    assert pages == ({"on_sale": 2, "sold": 3} if path == "api" else {"on_sale": 5, "sold": 5})
    assert not result["search"]["on_sale"]["ended"] and not result["search"]["sold"]["ended"]
    want = {x["id"] for n in range(1, pages["on_sale"] + 1) for x in sim.truth(KEYWORD, ON_SALE, n)}
    want |= {x["id"] for n in range(1, pages["sold"] + 1) for x in sim.truth(KEYWORD, SOLD, n)}
    assert {x["source_id"] for x in result["items"]} == want


def listing(created, seller="seller-a", title="鬼滅の刃 ぬいぐるみ 炭治郎"):
    return {"source_id": f"m{created}", "created": created, "seller": seller, "title": title}


def test_a_new_listing_that_may_relist_a_watched_one_takes_the_read_back_past_it():
    title = title_match("鬼滅の刃 ぬいぐるみ 炭治郎")
    plan = SearchPlan(5, until=1000.0, watch={watch_key("seller-a", title): (400.0, 700.0, 1500.0),
                                              watch_key("seller-a", title_match("ワンピース")): (100.0,)})
    deeper = plan.deepened([listing(1200.0)])
    assert deeper.until == 400.0 - LATE_INDEXING and "relist" in deeper.why
    assert plan.deepened([listing(1600.0)]).until == 400.0 - LATE_INDEXING  # only the times before the new one
    # a relister's mark added to the title's start or end: the earlier title is still found
    marked = listing(1200.0, title="【再出品】 鬼滅の刃 ぬいぐるみ 炭治郎")
    assert plan.deepened([marked]).until == 400.0 - LATE_INDEXING
    # a listing read before, another seller, another title, no seller (the DOM's), no time: no deeper
    for items in ([listing(900.0)], [listing(1200.0, "seller-b")], [listing(1200.0, title="鬼滅の刃 缶バッジ")],
                  [listing(1200.0, None)], [listing(None)]):
        assert plan.deepened(items) is plan
    assert SearchPlan(5, watch=plan.watch).deepened([listing(1200.0)]).until is None  # reading to the end anyway


def test_a_plan_s_watch_is_stored_and_read_back(settings):
    r = state_redis(settings)
    plan = CrawlPlan(SearchPlan(5, 1000.0, "back", {"abcd1234": (10.0, 20.5)}), SearchPlan(5))
    store_plan(r, 11, plan)
    assert load_plan(r, 11, 5, 5) == plan
    r.set(keys.crawl_plan(11), b'{"on_sale": {"pages": 5, "watch": {"a": 3}}, "sold": {"pages": 5}}')
    assert load_plan(r, 11, 5, 5) == CrawlPlan.caps(5, 5)  # unreadable: the caps


def test_a_crawl_reads_its_stored_plan_with_the_plans_on_and_the_caps_with_them_off(settings):
    r = state_redis(settings)
    plan = CrawlPlan(SearchPlan(5, 1000.0, "back"), SearchPlan(5, 2000.0, "back"), made_at=3000.0)
    store_plan(r, 12, plan)
    assert plan_for(r, 12, settings) == plan
    assert plan_for(r, 13, settings) == caps(settings) == CrawlPlan.caps(5, 5)  # none stored
    off = dataclasses.replace(settings, scheduler_page_plan=False)
    assert plan_for(r, 12, off) == caps(settings)
