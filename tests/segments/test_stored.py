"""The stored segments of listings (``listing_segments``) as results are applied, on SQLite and MariaDB: a
listing is segmented by the title its snapshot gets, in the result's transaction; a retitled listing is segmented
again, and so is one stored before segments existed; a redelivered result changes nothing."""

from __future__ import annotations

import dataclasses

from lib.core import keys
from lib.core.clock import FrozenClock
from lib.core.redis_client import state_redis
from lib.market.processing import CrawlResult, ResultProcessor
from lib.scheduling.catalogue import Catalogue
from lib.scheduling.schedule import ScheduleStore
from lib.segments.stored import GOODS
from models import ItemSnapshot, ListingSegment

T0 = 1_800_000_000.0


def segments(ip_id: int) -> dict[str, set[tuple[str, str]]]:
    found: dict[str, set[tuple[str, str]]] = {}
    for row in ListingSegment.select().where(ListingSegment.ip_id == ip_id):
        found.setdefault(row.source_id, set()).add((row.kind, row.key))
    return found


def item(sid: str, title: str, status: str = "on_sale") -> dict:
    return {"source_id": sid, "status": status, "price": 1000, "title": title, "created": T0 - 600}


def test_listings_are_segmented_by_the_title_their_snapshot_gets(db, settings, tmp_path):
    clock = FrozenClock(T0)
    ip = Catalogue(ScheduleStore(state_redis(settings)), settings, clock).add("呪術廻戦")
    proc = ResultProcessor(settings, state_redis(settings), clock)

    def apply(task: str, at: float, items: list[dict]) -> None:
        proc.apply(CrawlResult.parse(ip.id, task, at, items))

    apply("1", T0, [item("a", "五条悟 アクスタ"), item("b", "缶バッジ アクスタ セット"), item("c", "")])
    assert segments(ip.id) == {"a": {(GOODS, "acrylic_stand")}, "b": {(GOODS, "acrylic_stand"), (GOODS, "can_badge")},
                               "c": {(GOODS, "other")}}
    # a retitled listing is segmented again; a late result with its old title moves neither snapshot nor segments
    apply("2", T0 + 3600, [item("a", "五条悟 ぬいぐるみ"), item("b", "缶バッジ アクスタ セット", "sold")])
    apply("late", T0 + 1800, [item("a", "五条悟 アクスタ")])
    apply("2", T0 + 3600, [item("a", "五条悟 アクスタ")])  # redelivered (and changed on the way): ignored
    assert segments(ip.id)["a"] == {(GOODS, "plush")}
    snapshot = ItemSnapshot.get((ItemSnapshot.ip_id == ip.id) & (ItemSnapshot.source_id == "a"))
    assert snapshot.title == "五条悟 ぬいぐるみ"
    # a listing stored before segments existed (no rows, and an item state that does not know its title) is
    # segmented the next time a result sees it
    ListingSegment.delete().where(ListingSegment.source_id == "b").execute()
    state_redis(settings).hdel(keys.item_state(ip.id, "b"), "t")
    apply("3", T0 + 7200, [item("b", "缶バッジ アクスタ セット", "sold"), item("c", "")])
    assert segments(ip.id)["b"] == {(GOODS, "acrylic_stand"), (GOODS, "can_badge")}

    # the configured taxonomy (SEGMENTS_TAXONOMY) classifies the titles a result brings
    taxonomy = tmp_path / "goods.toml"
    taxonomy.write_text('[[types]]\nid = "badge"\nterms = ["缶バッジ"]\n\n[[types]]\nid = "other"\n', encoding="utf-8")
    other = ResultProcessor(dataclasses.replace(settings, segments_taxonomy=str(taxonomy)), state_redis(settings),
                            clock)
    other.apply(CrawlResult.parse(ip.id, "4", T0 + 9000, [item("d", "缶バッジ"), item("b", "缶バッジ アクスタ セット",
                                                                                   "sold")]))
    assert segments(ip.id)["d"] == {(GOODS, "badge")}
    assert segments(ip.id)["b"] == {(GOODS, "acrylic_stand"), (GOODS, "can_badge")}  # unchanged title: kept

    # an item state older than the IP's previous crawl does not vouch for the listing's stored title and segments
    # (pruning may have taken them meanwhile, as here): its title is read, and it is segmented again
    apply("5", T0 + 10800, [item("b", "缶バッジ アクスタ セット", "sold")])
    ItemSnapshot.delete().where(ItemSnapshot.source_id == "c").execute()
    ListingSegment.delete().where(ListingSegment.source_id == "c").execute()
    apply("6", T0 + 14400, [item("c", "")])
    assert segments(ip.id)["c"] == {(GOODS, "other")}
