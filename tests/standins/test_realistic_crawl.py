"""One real crawl (headless Chromium, the crawler as it is) of the realistic market: both read paths see what
the market's truth says the pages hold, padding and auctions included."""

import asyncio
from dataclasses import replace

import pytest

from lib.core.settings import load_settings
from lib.crawling.crawl import Crawler
from lib.standins.simulator import MarketSimulator
from lib.standins.simulator.model import DAY, MarketModel
from lib.standins.simulator.traits import load_traits

from ..helpers import simulator_crawl_env

T = 1_780_239_600.0 + 10 * DAY


@pytest.fixture
def realistic_sim():
    traits = load_traits()
    # no empty answers and no rate limit: this crawl is to see the pages, not the site's refusals
    traits = replace(traits, search=replace(traits.search, empty_answer_share=0.0))
    model = MarketModel(4, traits, sizes={"niche": 0.5, "mid": 60.0})
    server = MarketSimulator(at=T, speed=0, market="realistic", model=model, rate_limit=False).start()
    yield server
    server.stop()


@pytest.mark.parametrize("keyword", ["niche", "mid"])
def test_a_crawl_of_the_realistic_market_reads_its_pages_as_the_truth_says(env, realistic_sim, chromium, keyword):
    sim = realistic_sim
    settings = load_settings(simulator_crawl_env(env, sim, chromium, SCHEDULER_PAGES_ON_SALE="2",
                                                 SCHEDULER_PAGES_SOLD="2"))

    async def go():
        crawler = Crawler.from_settings(settings)
        try:
            return await crawler.crawl(3, keyword, "t-realistic")
        finally:
            await crawler.close()

    result = asyncio.run(go())
    assert result["errors"] == {}
    truth = {item["id"]: item for statuses in ({"on_sale"}, {"sold_out", "trading"}) for page in (1, 2)
             for item in sim.truth(keyword, statuses, page)}
    got = {item["source_id"]: item for item in result["items"]}
    padded = [sid for sid, want in truth.items() if want["truth"]["padded"]]
    # the IP's listings are all read, the padding is not counted (its titles do not name the keyword)
    assert got.keys() == truth.keys() - set(padded)
    for sid, want in truth.items():
        if sid in got:
            assert got[sid]["title"] == want["name"] and got[sid]["price"] == int(want["price"])
            assert got[sid]["created"] == int(want["created"])
    if keyword == "niche":  # its few real listings, then the padding the crawler reads and leaves out
        assert padded and all(keyword not in truth[sid]["name"] for sid in padded)
        assert sum(r["missed"] for r in result["relevance"].values()) == len(padded)
    else:
        assert not padded and any("auction_info" in want for want in truth.values())
