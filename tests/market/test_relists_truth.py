"""Relists and auctions on the realistic market (lib/standins/simulator/model.py), held to its truth
(lib/standins/simulator/truth.py): a mid-size IP crawled every hour for a week, each crawl the pages the crawler reads
(``lib.operations.backfill.past_crawl``: the crawler's own code on the simulator's API answers, as deep as the IP's
page plan) applied by the real result path. Its relists are not counted as new supply, its daily inflow is the true
count of new goods, and its sell-through and time to sell follow the goods across their relists."""

from dataclasses import dataclass, replace

import pytest

from lib.core.clock import FrozenClock
from lib.core.redis_client import state_redis
from lib.core.settings import load_settings
from lib.crawling.page_plan import plan_for
from lib.market.processing import CrawlResult, ResultProcessor
from lib.market.statistics import tuples
from lib.market.windows import window_measures
from lib.operations.backfill import past_crawl
from lib.scheduling.catalogue import Catalogue
from lib.scheduling.schedule import ScheduleStore
from lib.standins.simulator import MarketSimulator
from lib.standins.simulator.model import DAY, HOUR, MarketModel
from lib.standins.simulator.traits import load_traits
from lib.standins.simulator.truth import true_flows
from models import ListingEvent, ListingRelist

#: A Monday 00:00 in Japan, and ten days later (the market has run long enough to have relists of every age).
START = 1_780_239_600.0 + 10 * DAY
DAYS = 6
KEYWORD = "呪術廻戦"


@dataclass(frozen=True)
class Run:
    ip_id: int
    model: MarketModel
    crawls: list[float]


@pytest.fixture(scope="module")
def week(tmp_path_factory, redis_server):
    """One IP of 20 new listings an hour (no burst), crawled hourly for a week, at most 5+5 pages as its page plans
    say, on SQLite."""
    from lib.core.db import bind_database
    from lib.market.schema import create_tables

    from ..conftest import STATE_DB, _with_db

    traits = load_traits()
    # no empty answers: an empty page is a crawl failure, tested elsewhere; this is to see relists and auctions
    traits = replace(traits, search=replace(traits.search, empty_answer_share=0.0))
    model = MarketModel(11, traits, sizes={KEYWORD: 20.0}, bursts={KEYWORD: ()})
    sim = MarketSimulator(at=START, speed=0, market="realistic", model=model, rate_limit=False)
    path = tmp_path_factory.mktemp("relists") / "week.sqlite3"
    settings = load_settings({"REDIS_URL": _with_db(redis_server, STATE_DB), "DATABASE_URL": f"sqlite:///{path}",
                              "DATA_DIR": str(path.parent), "SCHEDULER_PAGES_ON_SALE": "5",
                              "SCHEDULER_PAGES_SOLD": "5", "SELLER_HASH_SECRET": "a secret of the test run"})
    bind_database(settings.database_url_resolved)
    create_tables()
    client = state_redis(settings)
    client.flushdb()
    clock = FrozenClock(START)
    ip = Catalogue(ScheduleStore(client), settings, clock).add(KEYWORD)
    proc = ResultProcessor(settings, client, clock)
    crawls = [START + i * HOUR for i in range(DAYS * 24 + 1)]
    for n, at in enumerate(crawls):
        clock.set(at)
        # each crawl as deep as the IP's page plan, as the crawler reads it (docs/concepts/crawling.md)
        plan = plan_for(client, ip.id, settings)
        message = past_crawl(sim, KEYWORD, ip.id, f"w{n}", at, settings, plan=plan)
        proc.apply(CrawlResult.parse(**message))
    yield Run(ip.id, model, crawls)
    client.flushdb()


@pytest.fixture(scope="module")
def facts(week):
    """What the result path stored of the week: each listing's created event, every sale, the relists' links; and the
    market's stories of the week, by id."""
    ip_id = week.ip_id
    created = {sid for (sid,) in tuples(ListingEvent.select(ListingEvent.source_id)
                                        .where((ListingEvent.ip_id == ip_id) & (ListingEvent.kind == "created")))}
    sales = {sid: (at, price, since) for sid, at, price, since in tuples(
        ListingEvent.select(ListingEvent.source_id, ListingEvent.event_at, ListingEvent.price, ListingEvent.created_at)
        .where((ListingEvent.ip_id == ip_id) & (ListingEvent.kind == "sold") & (ListingEvent.occurrence == 0)))}
    links = dict(tuples(ListingRelist.select(ListingRelist.source_id, ListingRelist.relist_of)
                        .where(ListingRelist.ip_id == ip_id)))
    stories = {s.id: s for s in week.model.listings(KEYWORD, START - 12 * DAY, week.crawls[-1])}
    return created, sales, links, stories


def test_relists_are_recognised_and_not_counted_as_new_supply(week, facts):
    created, _, links, stories = facts
    # the relists of goods whose first listing the crawls could see (listed after the first crawl)
    relists = [s for s in stories.values() if s.relist_of in stories and s.in_search_from < week.crawls[-1]
               and stories[s.relist_of].created > START]
    assert len(relists) > 150
    right = [sid for sid, previous in links.items() if stories[sid].relist_of == previous]
    # precision: a link that is no relist in the truth (the seller's copy still on sale) hides new supply
    assert len(right) >= 0.98 * len(links), (len(right), len(links))
    # recall: five on-sale pages of this IP reach back about a day, and its sellers relist after one to four:
    # a relist is recognised when a crawl saw its first listing gone, or its seller lists few of the IP's
    # listings (lib/market/relists.py), or, a shop's, when a check of its first listing's page finds it deleted
    # (SCHEDULER_RELIST_CHECKS) or a read back to what its undecided listings may relist does not find it
    as_new = [s for s in relists if s.id in created]
    assert len(as_new) <= 0.03 * len(relists), (len(as_new), len(relists))


def test_daily_inflow_and_sell_through_are_the_truths(week, facts):
    """Inflow counts new goods (the truth's ``listed``) and the relists not recognised (each day's count against
    the truth's, exactly but for the listings a crawl has not seen yet); sell-through the goods created in the day
    that sold before its end, within 3 points of the truth each day."""
    created, _, links, stories = facts
    days = true_flows(week.model, KEYWORD, START, START + (DAYS - 1) * DAY, DAY)
    for truth in days[1:]:  # the first day holds relists of goods listed before the crawls began
        measured = window_measures([week.ip_id], 24, truth.end - 1)[week.ip_id]
        as_new = sum(1 for sid in created if stories[sid].relist_of is not None
                     and truth.start <= stories[sid].created < truth.end)
        linked_new = sum(1 for sid in links if stories[sid].relist_of is None
                         and truth.start <= stories[sid].created < truth.end)
        expected = truth.listed + as_new - linked_new
        # relists of goods first listed before the crawls began: no crawl saw their first listing
        before = sum(1 for sid in created if stories[sid].relist_of is not None
                     and truth.start <= stories[sid].created < truth.end and stories[sid].first_listed < START)
        assert abs(measured.inflow.value - expected) <= 0.01 * expected, (measured.inflow, expected, truth)
        # with every relist counted as new, inflow would be off by their share of the day's listings
        assert truth.relisted > 0.06 * truth.listed
        assert abs(measured.inflow.value - truth.listed - before) <= 0.01 * truth.listed, (measured.inflow, truth)
        assert abs(measured.sell_through.value - truth.sell_through) <= 0.03, (measured.sell_through, truth)


def test_a_goods_sale_after_its_relist_is_timed_from_its_first_listing(week, facts):
    _, sales, links, stories = facts
    followed, missed = 0, []
    for sid, previous in links.items():
        story = stories[sid]
        if story.relist_of != previous or story.sold_at is None or story.sold_at > week.crawls[-1] - HOUR:
            continue
        first = stories[previous]
        while first.relist_of is not None:
            first = stories[first.relist_of]
        if first.created < START:  # goods listed before the IP's first crawl: not tracked
            continue
        if first.id not in sales:  # no sale under the goods: not seen, or a wrong link put it under other goods
            missed.append(sid)
            continue
        at, price, since = sales[first.id]
        # the sale time the site shows (whole seconds), or the crawl that saw it sold when the last one that saw it
        # on sale came after the sale, within the search's indexing delay (definition 3)
        assert since == int(first.created) and story.sold_at - 1 <= at <= story.sold_at + HOUR + 61
        assert price == (None if story.auction is not None else story.sold_price)
        followed += 1
    assert followed > 20 and len(missed) <= 0.05 * followed, (followed, missed)


def test_auctions_count_in_the_flows_and_not_in_the_prices(facts):
    created, sales, _, stories = facts
    auctions = [s for s in stories.values() if s.auction is not None and s.id in created]
    assert len(auctions) > 20  # seen, and counted as inflow
    sold = [s for s in auctions if s.id in sales]
    assert sold and all(sales[s.id][1] is None for s in sold)  # outflow without a price
    fixed = [s for s in stories.values() if s.auction is None and s.relist_of is None and s.id in sales
             and s.sold_at is not None]
    # the sale price shown; a listing a wrong link made the goods of another listing may carry that one's sale
    wrong = [s for s in fixed if sales[s.id][1] != s.sold_price]
    assert len(fixed) > 500 and len(wrong) <= 0.01 * len(fixed), (len(wrong), len(fixed))
