"""A niche IP crawled in real Chromium on the realistic market, whose pages past the IP's few real results are
padded with other franchises' listings (``lib.standins.simulator.padding``): not one padded listing is counted,
each search stops at its first page without a listing of the IP, and the pages read, matches and misses are in the
result, stored with the crawl and shown with the IP's search totals (docs/concepts/crawling.md, "What is
counted")."""

import asyncio
from dataclasses import replace

import pytest

from lib.core.clock import FrozenClock
from lib.core.redis_client import state_redis
from lib.core.settings import load_settings
from lib.crawling.crawl import Crawler
from lib.market import series
from lib.market.processing import CrawlResult, ResultProcessor
from lib.scheduling.catalogue import Catalogue
from lib.scheduling.schedule import ScheduleStore
from lib.standins.simulator import MarketSimulator
from lib.standins.simulator.model import DAY, MarketModel
from lib.standins.simulator.traits import load_traits
from models import CrawlSearchTotal, ItemSnapshot

from ..helpers import simulator_crawl_env

T = 1_780_239_600.0 + 10 * DAY
NICHE = "ハイキュー!!"
PAGES = 5
SEARCHES = {"on_sale": {"on_sale"}, "sold": {"sold_out", "trading"}}


@pytest.fixture
def niche_market():
    traits = load_traits()
    # no empty answers and no rate limit: this crawl is to see the pages, not the site's refusals
    traits = replace(traits, search=replace(traits.search, empty_answer_share=0.0))
    model = MarketModel(5, traits, sizes={NICHE: 0.3})
    server = MarketSimulator(at=T, speed=0, market="realistic", model=model, rate_limit=False).start()
    yield server
    server.stop()


def test_a_niche_ip_counts_no_padding_and_stops_paging_at_the_first_page_without_a_match(env, db, settings,
                                                                                         niche_market, chromium):
    sim = niche_market
    crawl_settings = load_settings(simulator_crawl_env(env, sim, chromium, SCHEDULER_PAGES_ON_SALE=str(PAGES),
                                                       SCHEDULER_PAGES_SOLD=str(PAGES)))
    # what each search's pages hold, from the market's truth: (the page's listings, its padded ones)
    truth = {label: [sim.truth(NICHE, statuses, number) for number in range(1, PAGES + 1)]
             for label, statuses in SEARCHES.items()}
    expected_pages = {}
    for label, pages in truth.items():
        # the first page holding no listing of the IP is the last read
        expected_pages[label] = next(n for n, page in enumerate(pages, 1)
                                     if page and all(item["truth"]["padded"] for item in page))
    assert expected_pages["on_sale"] < PAGES and expected_pages["sold"] < PAGES  # the stop is what ends paging
    read = {label: [item for page in truth[label][:expected_pages[label]] for item in page] for label in truth}
    padded = {label: {i["id"] for i in items if i["truth"]["padded"]} for label, items in read.items()}
    real = {label: {i["id"] for i in items if not i["truth"]["padded"]} for label, items in read.items()}
    assert padded["on_sale"] and padded["sold"]  # the pages read were padded

    catalogue = Catalogue(ScheduleStore(state_redis(settings)), settings, FrozenClock(T - 3600))
    ip = catalogue.add(NICHE, aliases=["haikyu"])
    due = catalogue.due_info([ip.id])[ip.id]

    async def go():
        crawler = Crawler.from_settings(crawl_settings)
        try:
            return await crawler.crawl(ip.id, due.keyword, "t-niche", due.aliases)
        finally:
            await crawler.close()

    message = asyncio.run(go())
    drift = message.pop("drift")
    assert message["errors"] == {}
    got = {item["source_id"] for item in message["items"]}
    assert got == real["on_sale"] | real["sold"]
    assert not got & (padded["on_sale"] | padded["sold"])  # 0 padded listings counted
    for label in SEARCHES:
        assert message["search"][label]["pages"] == expected_pages[label]
        assert message["search"][label]["items"] == len(real[label])
        assert message["search"][label]["ended"] is True  # past its real results: seen whole, short of the plan
        assert message["relevance"][label] == {"matched": len(real[label]), "missed": len(padded[label])}
    records = [(p["status"], p["page"], p["matched"], p["missed"]) for p in drift["pages"]]
    assert records == [(label, n, sum(not i["truth"]["padded"] for i in page), sum(i["truth"]["padded"] for i in page))
                       for label in SEARCHES for n, page in enumerate(truth[label][:expected_pages[label]], 1)]
    assert records[expected_pages["on_sale"] - 1][2] == 0 and records[-1][2] == 0  # each search's last: no match

    # applied: the padding is in no snapshot (so in no inflow, outflow or price), the misses are stored
    message.pop("duration")  # the crawl's own timing, which the process_result actor takes and does not parse
    ResultProcessor(settings, state_redis(settings), FrozenClock(T)).apply(CrawlResult.parse(**message))
    stored = {s.source_id for s in ItemSnapshot.select().where(ItemSnapshot.ip_id == ip.id)}
    assert stored == got
    totals = {t.status: (t.pages_read, t.items_read, t.items_missed)
              for t in CrawlSearchTotal.select().where(CrawlSearchTotal.ip_id == ip.id)}
    assert totals == {label: (expected_pages[label], len(real[label]), len(padded[label])) for label in SEARCHES}
    [point] = series.search_totals(ip.id, T - DAY)
    assert (point["on_sale_missed"], point["sold_missed"]) == (len(padded["on_sale"]), len(padded["sold"]))
