"""Relists and auctions through the real result path (docs/concepts/measures.md, definitions 2 and 3): a seller's
relist of unsold goods is not inflow and its sale is the goods' sale, from their first listing; an auction is
counted in the flows and kept out of the fixed-price statistics."""

import pytest

from lib.core.clock import FrozenClock
from lib.core.redis_client import state_redis
from lib.market.processing import CrawlResult, ResultProcessor
from lib.market.relists import FEW_LISTINGS
from lib.market.statistics import tuples
from lib.scheduling.catalogue import Catalogue
from lib.scheduling.schedule import ScheduleStore
from models import IpStatsHourly, ListingEvent, ListingRelist

H, DAY = 3600.0, 86400.0
T0 = 1_800_000_000.0 - (1_800_000_000.0 % H)
TITLE = "鬼滅の刃 アクスタ 炭治郎"
SELLER, OTHER = "0123456789abcdef", "fedcba9876543210"


def item(sid, created, title=TITLE, status="on_sale", price=1000, seller=SELLER, updated=None, auction=False):
    return {"source_id": sid, "title": title, "price": price, "status": status, "created": created,
            "updated": updated, "seller": seller, "auction": auction}


@pytest.fixture
def proc(db, settings):
    return ResultProcessor(settings, state_redis(settings), FrozenClock(T0))


@pytest.fixture
def ip(db, settings):
    return Catalogue(ScheduleStore(state_redis(settings)), settings, FrozenClock(T0)).add("鬼滅の刃")


class Crawls:
    def __init__(self, proc, ip):
        self.proc, self.ip, self.n = proc, ip, 0

    def __call__(self, at, *items, whole=True):
        """A crawl whose searches ended on their first page (``whole``: everything on sale was seen), or read
        every page planned and went on past them."""
        self.n += 1
        pages = 1 if whole else 5
        search = {status: {"num_found": None, "pages": pages, "items": sum(i["status"] == status for i in items)}
                  for status in ("on_sale", "sold")}
        return self.proc.apply(CrawlResult.parse(self.ip.id, f"t{self.n}", at, list(items), 2 * pages, None,
                                                 search))


def flows(ip):
    inflow = outflow = 0
    for i, o in tuples(IpStatsHourly.select(IpStatsHourly.inflow, IpStatsHourly.outflow)
                       .where(IpStatsHourly.ip_id == ip.id)):
        inflow, outflow = inflow + i, outflow + o
    return inflow, outflow


def events(ip):
    return sorted(tuples(ListingEvent.select(ListingEvent.source_id, ListingEvent.kind, ListingEvent.occurrence,
                                             ListingEvent.event_at, ListingEvent.price, ListingEvent.listed_price,
                                             ListingEvent.created_at).where(ListingEvent.ip_id == ip.id)))


def links(ip):
    return dict(tuples(ListingRelist.select(ListingRelist.source_id, ListingRelist.goods_id)
                       .where(ListingRelist.ip_id == ip.id)))


@pytest.mark.parametrize("relist_title", [
    TITLE,                          # the same title
    TITLE + " 再出品",  # a word added at the end
    "【値下げ】" + TITLE,  # … or at the start
    "鬼滅の刃　ｱｸｽﾀ　炭治郎",  # the same title as the segments normalize it (full-width space, half-width kana)
])
def test_a_relist_is_not_new_supply_and_its_sale_is_the_goods_sale(proc, ip, relist_title):
    crawl = Crawls(proc, ip)
    crawl(T0 + 60, item("base", T0 - H, "ちいかわ ぬいぐるみ", seller=OTHER))
    first = T0 + H - 600
    assert crawl(T0 + H, item("e", first, price=1200)).inflow == 1
    relisted = T0 + DAY - 600  # the first listing was deleted: no crawl sees it after this
    out = crawl(T0 + DAY, item("r", relisted, relist_title, price=1000))
    assert (out.inflow, out.relisted) == (0, 1)
    assert links(ip) == {"r": "e"}
    sold = T0 + DAY + H
    out = crawl(T0 + DAY + 2 * H, item("r", relisted, relist_title, "sold", 1000, updated=sold))
    assert out.outflow == 1
    # the goods' events, under its first listing: created once, sold from its first listing (time to sell), the
    # cut from its first price shown
    assert events(ip) == [("e", "created", 0, first, None, None, None), ("e", "sold", 0, sold, 1000, 1200, first)]
    assert flows(ip) == (1, 1)


def test_a_relist_of_a_relist_is_the_same_goods(proc, ip):
    crawl = Crawls(proc, ip)
    crawl(T0 + 60, item("base", T0 - H, "ちいかわ ぬいぐるみ", seller=OTHER))
    crawl(T0 + H, item("e", T0 + H - 600))
    crawl(T0 + DAY, item("r1", T0 + DAY - 600))
    out = crawl(T0 + 2 * DAY, item("r2", T0 + 2 * DAY - 600, TITLE + " 早い者勝ち"))
    assert (out.inflow, out.relisted) == (0, 1) and links(ip) == {"r1": "e", "r2": "e"}
    crawl(T0 + 2 * DAY + H, item("r2", T0 + 2 * DAY - 600, TITLE + " 早い者勝ち", "sold", updated=T0 + 2 * DAY + 60))
    assert [e[:3] for e in events(ip)] == [("e", "created", 0), ("e", "sold", 0)] and flows(ip) == (1, 1)


def shop(at, count=FEW_LISTINGS):
    """``count`` other listings of the seller, of other titles (a shop's catalogue)."""
    return [item(f"shop{k}", at - k, f"鬼滅の刃 缶バッジ {k}") for k in range(count)]


@pytest.mark.parametrize("case", ["another seller", "another title", "past the bound", "first one sold",
                                  "both on sale", "no seller", "two words added", "a shop's copy out of reach"])
def test_what_is_not_a_relist(proc, ip, settings, case):
    crawl = Crawls(proc, ip)
    crawl(T0 + 60, item("base", T0 - H, "ちいかわ ぬいぐるみ", seller=OTHER))
    first = T0 + H - 600
    others = shop(first - 60) if case == "a shop's copy out of reach" else []
    crawl(T0 + H, item("e", first, seller=None if case == "no seller" else SELLER), *others)
    at = T0 + (settings.relist_within + DAY if case == "past the bound" else DAY)
    later = {"title": TITLE, "seller": SELLER}
    if case == "another seller":
        later["seller"] = OTHER
    elif case == "another title":
        later["title"] = "鬼滅の刃 アクスタ 禰豆子"  # a word changed: other goods
    elif case == "no seller":
        later["seller"] = None  # read from the page (the DOM shows no seller)
    elif case == "two words added":
        later["title"] = TITLE + " 再出品 値下げ"
    elif case == "first one sold":
        crawl(T0 + 2 * H, item("e", first, status="sold", updated=T0 + 2 * H - 60))
    seen = [item("e", first)] if case == "both on sale" else []  # the first listing still on sale: two goods
    # out of reach: the pages read (all those planned) end after the first listing's creation, so no crawl can
    # tell it was deleted; of a seller with more than FEW_LISTINGS listings it may be a copy still on sale
    out = crawl(at, item("r", at - 600, **later), *seen, whole=case != "a shop's copy out of reach")
    assert (out.inflow, out.relisted) == (1, 0)
    assert links(ip) == {}


@pytest.mark.parametrize("listings", [1, FEW_LISTINGS])
def test_a_relist_out_of_reach_of_a_seller_with_few_listings_is_recognised(proc, ip, listings):
    """No crawl read back far enough to see the first listing gone; the seller listed at most FEW_LISTINGS of the
    IP's listings in RELIST_WITHIN (the first one among them) and no other of that title: a relist."""
    crawl = Crawls(proc, ip)
    crawl(T0 + 60, item("base", T0 - H, "ちいかわ ぬいぐるみ", seller=OTHER))
    first = T0 + H - 600
    crawl(T0 + H, item("e", first), *shop(first - 60, listings - 1))
    out = crawl(T0 + DAY, item("r", T0 + DAY - 600), whole=False)
    assert (out.inflow, out.relisted) == (0, 1) and links(ip) == {"r": "e"}


def test_a_relist_seen_gone_is_recognised_whoever_the_seller(proc, ip):
    """A shop's listing that a crawl reading back past its creation no longer saw was deleted: its relist is
    recognised whatever the seller's other listings."""
    crawl = Crawls(proc, ip)
    crawl(T0 + 60, item("base", T0 - H, "ちいかわ ぬいぐるみ", seller=OTHER))
    first = T0 + H - 600
    crawl(T0 + H, item("e", first), *shop(first - 60))
    crawl(T0 + 2 * H, *shop(first - 60))  # the whole search, without "e": deleted
    out = crawl(T0 + DAY, item("r", T0 + DAY - 600), whole=False)
    assert (out.inflow, out.relisted) == (0, 1) and links(ip) == {"r": "e"}


def undecided(ip):
    from models import RelistUndecided

    return dict(tuples(RelistUndecided.select(RelistUndecided.source_id, RelistUndecided.back)
                       .where((RelistUndecided.ip_id == ip.id) & RelistUndecided.relist.is_null())))


def undecided_after(crawl, *new):
    """A shop's listing "e" seen on sale, then a day later ``new`` listings no crawl could tell from its relists
    (the crawl read 5 pages, not back past "e"). When "e" was created."""
    crawl(T0 + 60, item("base", T0 - H, "ちいかわ ぬいぐるみ", seller=OTHER))
    first = T0 + H - 600
    crawl(T0 + H, item("e", first), *shop(first - 60))
    crawl(T0 + DAY, *new, whole=False)
    return first


@pytest.mark.parametrize("later", ["gone", "still on sale", "not read back far enough"])
def test_a_shops_listing_no_crawl_could_tell_is_decided_by_a_later_crawl_that_reads_back_past_it(proc, ip, later):
    """A shop's new listing of a title whose earlier listing no crawl had read back past stays new but undecided;
    a later crawl whose on-sale pages reach back past the earlier listing's creation decides it: not seen there, it
    was deleted, and the new listing is its relist (no longer inflow, in the hour it was counted in); seen there,
    they are two copies on sale; not reached, it waits."""
    crawl = Crawls(proc, ip)
    crawl(T0 + 60, item("base", T0 - H, "ちいかわ ぬいぐるみ", seller=OTHER))
    first = T0 + H - 600
    crawl(T0 + H, item("e", first), *shop(first - 60))
    out = crawl(T0 + DAY, item("r", T0 + DAY - 600), whole=False)
    assert (out.inflow, out.relisted) == (1, 0) and links(ip) == {} and undecided(ip) == {"r": first}
    inflow = flows(ip)[0]
    # the pages of the later crawl end at a listing created before the first one (or after it: not reached)
    oldest = item("old", T0 - 2 * H if later != "not read back far enough" else first + 60, "鬼滅の刃 ポスター",
                  seller=OTHER)
    seen = [item("e", first)] if later == "still on sale" else []
    out = crawl(T0 + DAY + H, item("r", T0 + DAY - 600), *seen, oldest, whole=False)
    if later == "gone":
        assert out.relisted == 1 and links(ip) == {"r": "e"} and undecided(ip) == {}
        assert flows(ip)[0] == inflow - 1
        assert [e[:3] for e in events(ip) if e[0] in ("e", "r")] == [("e", "created", 0)]
    elif later == "still on sale":
        assert out.relisted == 0 and links(ip) == {} and undecided(ip) == {} and flows(ip)[0] == inflow
    else:
        assert out.relisted == 0 and links(ip) == {} and undecided(ip) == {"r": first}


def test_a_listing_decided_late_takes_its_own_relists_into_its_goods(proc, ip):
    """An undecided listing relisted again before it is decided: once decided, the later relist's goods are the
    first listing's too, and its sale is the goods' sale."""
    crawl = Crawls(proc, ip)
    first = undecided_after(crawl, item("r1", T0 + DAY - 600))
    assert undecided(ip) == {"r1": first}
    # pages back past r1's creation, not e's: r1 is gone, and r2 its relist; r1 is still undecided
    crawl(T0 + 2 * DAY, item("r2", T0 + 2 * DAY - 600, TITLE + " 再出品"),
          item("mid", T0 + 2 * H, "鬼滅の刃 ポスター", seller=OTHER), whole=False)
    assert links(ip) == {"r2": "r1"} and undecided(ip) == {"r1": first}
    crawl(T0 + 2 * DAY + H, item("r2", T0 + 2 * DAY - 600, TITLE + " 再出品"),
          item("old", T0 - 2 * H, "鬼滅の刃 ポスター", seller=OTHER), whole=False)
    assert links(ip) == {"r1": "e", "r2": "e"} and undecided(ip) == {}
    crawl(T0 + 2 * DAY + 2 * H, item("r2", T0 + 2 * DAY - 600, TITLE + " 再出品", "sold", updated=T0 + 2 * DAY + H))
    assert [e[:3] for e in events(ip) if e[0] in ("e", "r1", "r2")] == [("e", "created", 0), ("e", "sold", 0)]
    # new goods: e, the shop's others and "mid" (created after the baseline; "old" before it)
    assert flows(ip) == (2 + len(shop(first - 60)), 1)


def test_an_auction_counts_in_the_flows_and_stays_out_of_the_fixed_price_statistics(proc, ip):
    crawl = Crawls(proc, ip)
    crawl(T0 + 60, item("base", T0 - H, "ちいかわ ぬいぐるみ", seller=OTHER))
    assert crawl(T0 + H, item("a", T0 + H - 600, price=500, auction=True),
                 item("f", T0 + H - 600, "鬼滅の刃 缶バッジ", price=2000)).inflow == 2
    crawl(T0 + 2 * H - 60, item("a", T0 + H - 600, price=800, auction=True),  # a bid
          item("f", T0 + H - 600, "鬼滅の刃 缶バッジ", price=2000))
    out = crawl(T0 + 3 * H - 60, item("a", T0 + H - 600, status="sold", price=900, auction=True, updated=T0 + 2 * H),
                item("f", T0 + H - 600, "鬼滅の刃 缶バッジ", status="sold", price=2000, updated=T0 + 2 * H + 60))
    assert out.outflow == 2
    row = IpStatsHourly.get((IpStatsHourly.ip_id == ip.id) & (IpStatsHourly.outflow > 0))
    assert (row.outflow, row.sample_count, float(row.median_price)) == (2, 1, 2000.0)
    sales = {e[0]: e[4] for e in events(ip) if e[1] == "sold"}
    assert sales == {"a": None, "f": 2000}


def test_an_existing_database_gains_what_relists_and_auctions_need(proc, ip):
    """``animetop db init`` on a database of an earlier version: the snapshots' new columns (nullable or with a
    default) and the links' table are added, and listings stored before them simply have no seller."""
    from playhouse.migrate import SchemaMigrator, migrate

    from lib.core.db import database
    from lib.market.schema import create_tables

    crawl = Crawls(proc, ip)
    crawl(T0 + 60, item("base", T0 - H, "ちいかわ ぬいぐるみ", seller=OTHER))
    crawl(T0 + H, item("e", T0 + H - 600))
    migrator = SchemaMigrator.from_database(database.obj)
    for index in database.get_indexes("item_snapshots"):
        if "seller" in index.columns:
            migrate(migrator.drop_index("item_snapshots", index.name))
    for column in ("seller", "title_match", "auction"):
        migrate(migrator.drop_column("item_snapshots", column))
    database.drop_tables([ListingRelist])
    create_tables()
    assert {"seller", "title_match", "auction"} <= {c.name for c in database.get_columns("item_snapshots")}
    assert any(index.columns == ["ip_id", "seller", "title_match"] for index in database.get_indexes("item_snapshots"))
    # the listing stored before has no seller: its relist is new goods; one stored after is recognised
    out = crawl(T0 + DAY, item("r", T0 + DAY - 600))
    assert (out.inflow, out.relisted) == (1, 0)
    crawl(T0 + DAY + H, item("f", T0 + DAY + H - 600, "鬼滅の刃 缶バッジ"))
    out = crawl(T0 + 2 * DAY, item("g", T0 + 2 * DAY - 600, "鬼滅の刃 缶バッジ 再出品"))
    assert (out.inflow, out.relisted) == (0, 1) and links(ip) == {"g": "f"}


def test_a_relisted_goods_is_pruned_whole_once_all_its_listings_are_dormant(proc, ip, settings):
    """Its events come from all its listings: pruning the first listing alone while a relist is still seen would
    lose the goods' creation and leave the relist's sale to be derived without it."""
    import dataclasses

    from lib.market.retention import prune

    small = dataclasses.replace(settings, retention_window=2 * H, retention_detail=2 * DAY)
    crawl = Crawls(proc, ip)
    crawl(T0 + 60, item("base", T0 - H, "ちいかわ ぬいぐるみ", seller=OTHER))
    crawl(T0 + H, item("e", T0 + H - 600))
    crawl(T0 + DAY, item("r", T0 + DAY - 600, TITLE + " 再出品"))
    sold = T0 + 11 * DAY
    crawl(T0 + 12 * DAY, item("r", T0 + DAY - 600, TITLE + " 再出品", "sold", updated=sold))
    report = prune(small, T0 + 12 * DAY + H)
    assert report.detail_horizon > T0 + H  # the first listing alone would be dormant
    assert [e[:3] for e in events(ip)] == [("e", "created", 0), ("e", "sold", 0)] and links(ip) == {"r": "e"}
    prune(small, T0 + 30 * DAY)  # now all of it is dormant: pruned together, its link too
    assert events(ip) == [] and links(ip) == {}


@pytest.mark.parametrize("state", ["deleted", "on_sale", "sold_out", "unknown"])
def test_a_shops_listing_is_decided_by_a_check_of_its_earlier_listing(proc, ip, settings, state):
    """The worker plans a check of the earlier listing an undecided listing may relist (``CrawlPlan.checks``); the
    crawl's check decides it: deleted, the new listing is its relist (no longer inflow, in the hour it was counted
    in); on sale or sold, they are other goods; a check that told nothing leaves it to the reads back, unchecked
    again."""
    from lib.crawling.page_plan import plan_for

    crawl = Crawls(proc, ip)
    first = undecided_after(crawl, item("r", T0 + DAY - 600))
    assert undecided(ip) == {"r": first}
    plan = plan_for(state_redis(settings), ip.id, settings)
    assert plan.checks == ("e",)
    inflow = flows(ip)[0]
    search = {status: {"num_found": None, "pages": 5, "items": 1 if status == "on_sale" else 0}
              for status in ("on_sale", "sold")}
    out = proc.apply(CrawlResult.parse(ip.id, "checked", T0 + DAY + H, [item("r", T0 + DAY - 600)], 10, None,
                                       search, checks={"e": state}))
    if state == "deleted":
        assert out.relisted == 1 and links(ip) == {"r": "e"} and undecided(ip) == {}
        assert flows(ip)[0] == inflow - 1
        assert [e[:3] for e in events(ip) if e[0] in ("e", "r")] == [("e", "created", 0)]
    elif state == "unknown":
        assert out.relisted == 0 and links(ip) == {} and undecided(ip) == {"r": first}
        assert plan_for(state_redis(settings), ip.id, settings).checks == ()
    else:
        assert out.relisted == 0 and links(ip) == {} and undecided(ip) == {} and flows(ip)[0] == inflow


def test_of_two_new_listings_checked_gone_the_first_relists_it(proc, ip):
    """A deleted listing is relisted once: of two undecided listings that may relist it, the earlier created is the
    relist and the other stays new goods."""
    crawl = Crawls(proc, ip)
    first = undecided_after(crawl, item("r1", T0 + DAY - 900), item("r2", T0 + DAY - 600))
    assert undecided(ip) == {"r1": first, "r2": first}
    out = proc.apply(CrawlResult.parse(ip.id, "checked", T0 + DAY + H, [], 0, None, None, checks={"e": "deleted"}))
    assert out.relisted == 1 and links(ip) == {"r1": "e"} and undecided(ip) == {}


@pytest.mark.parametrize("checks", [["e"], {"e": "gone"}, {"e/1": "deleted"}, {"e": None}])
def test_a_result_with_malformed_checks_is_refused(checks):
    from lib.core.errors import BadMessage

    with pytest.raises(BadMessage, match="checks"):
        CrawlResult.parse(1, "t", T0, [], checks=checks)


def test_checks_are_planned_only_where_they_keep_up_with_the_undecided_listings(ip):
    """At most ``most`` checks, the longest undecided first; none once more than BACKLOG_CRAWLS crawls' checks
    wait, and none of a listing whose check told nothing."""
    from lib.market.relists import BACKLOG_CRAWLS, to_check
    from models import RelistUndecided

    most = 3
    rows = [{"ip_id": ip.id, "source_id": f"n{k}", "created": T0 + k, "back": T0 - DAY, "earlier": f"e{k}"}
            for k in range(BACKLOG_CRAWLS * most)]
    RelistUndecided.insert_many([*rows, {"ip_id": ip.id, "source_id": "told", "created": T0 - H, "back": T0 - DAY,
                                         "earlier": None}]).execute()
    assert to_check(ip.id, most) == ["e0", "e1", "e2"]
    RelistUndecided.insert(ip_id=ip.id, source_id="one_more", created=T0 + DAY, back=T0, earlier="e").execute()
    assert to_check(ip.id, most) == []
