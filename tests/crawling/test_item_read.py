"""Item checks (lib/crawling/item_read.py): the state an item API answer tells, and a real crawl (headless
Chromium, the crawler as it is) that checks listings on their pages against the realistic market's truth."""

import asyncio
from dataclasses import replace

import pytest

from lib.core.settings import load_settings
from lib.crawling.crawl import Crawler
from lib.crawling.driver import ApiResponse
from lib.crawling.item_read import state_from_api
from lib.crawling.page_fetch import ErrorKind, PageError
from lib.crawling.page_plan import CrawlPlan
from lib.standins.simulator import MarketSimulator
from lib.standins.simulator.model import DAY, MarketModel
from lib.standins.simulator.stories import ON_SALE
from lib.standins.simulator.traits import load_traits

from ..helpers import simulator_crawl_env

T = 1_780_239_600.0 + 10 * DAY
#: the answers take-kun/mercapi recorded of the real item API (tests/cassettes/test_item.yml,
#: test_item_not_found.yml), cut to what is read
FOUND = {"result": "OK", "data": {"id": "m12871737078", "status": "sold_out", "name": "DJ Sharpnel / PPPH!",
                                  "price": 8000}, "meta": {}}
NOT_FOUND = {"result": "error", "errors": [{"code": "RecordNotFoundException", "message": "見つかりませんでした"}],
             "meta": {}}


@pytest.mark.parametrize("status, body, state", [
    (200, FOUND, "sold_out"),
    (200, {**FOUND, "data": {**FOUND["data"], "status": "on_sale"}}, "on_sale"),
    (200, {**FOUND, "data": {**FOUND["data"], "status": "trading"}}, "trading"),
    (404, NOT_FOUND, "deleted"),
    (200, {**FOUND, "data": {**FOUND["data"], "status": "stop"}}, "unknown"),  # a status it does not know
    (404, {"result": "error", "errors": [{"code": "SomethingElse"}]}, "unknown"),
    (500, None, "unknown"),
    (200, {"result": "OK"}, "unknown"),
])
def test_the_state_an_item_api_answer_tells(status, body, state):
    assert state_from_api(ApiResponse(status, {}, body)) == state


@pytest.mark.parametrize("status, kind", [(429, ErrorKind.THROTTLED), (403, ErrorKind.BLOCKED)])
def test_a_refused_item_read_is_a_page_error(status, kind):
    with pytest.raises(PageError) as refused:
        state_from_api(ApiResponse(status, {"retry-after": "7"}, {}))
    assert refused.value.kind is kind and (status != 429 or refused.value.retry_after == 7)


def test_a_crawl_checks_listings_on_their_pages_as_the_truth_says(env, chromium):
    traits = load_traits()
    traits = replace(traits, search=replace(traits.search, empty_answer_share=0.0))
    sim = MarketSimulator(at=T, speed=0, market="realistic", model=MarketModel(4, traits, sizes={"mid": 60.0}),
                          rate_limit=False).start()
    try:
        assert sim.realistic is not None
        # listings the search served three days ago: by now sold, deleted (relisted or withdrawn) or still on sale
        stories = [s.story for s in sim.realistic.page("mid", frozenset({ON_SALE}), 1, T - 3 * DAY).items]
        by_fate: dict[str | None, str] = {}
        for story in stories:
            by_fate.setdefault(story.status_at(T), story.id)
        assert set(by_fate) >= {"on_sale", "sold_out", None}, by_fate
        settings = load_settings(simulator_crawl_env(env, sim, chromium))
        plan = replace(CrawlPlan.caps(1, 1), checks=tuple(by_fate.values()))

        async def go():
            crawler = Crawler.from_settings(settings)
            try:
                return await crawler.crawl(3, "mid", "t-checks", plan=plan)
            finally:
                await crawler.close()

        result = asyncio.run(go())
        assert result["errors"] == {}
        assert result["checks"] == {sid: fate or "deleted" for fate, sid in by_fate.items()}
        assert sim.counters["item_api"] == len(by_fate)
    finally:
        sim.stop()
