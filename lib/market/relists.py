"""Relists: a listing that its seller listed before, deleted and listed again (a new id, the same goods) is not new
supply (docs/concepts/measures.md, definition 2).

A new listing is recognised as the relist of an earlier one of the IP when

* the crawler kept a seller for both (API hits: ``CrawlItem.seller``, a keyed hash) and it is the same;
* the titles match: after the segments' normalization (``lib.segments.normalize.fold``) the new title is the earlier
  one, or the earlier one with one word added at its start or end (relisters mark the new listing: 再出品, 値下げ,
  【即購入OK】…). Words are what ``normalize`` keeps apart;
* the earlier listing was created at most ``RELIST_WITHIN`` before it, was never seen sold (its goods did not
  sell: a second copy of sold goods is new supply), was not seen on sale after the new one was created (two
  copies on sale at once are two goods) and was not relisted already (a listing is deleted once). Of several, the
  latest created;
* the earlier listing is known to be gone: a crawl after its last sighting read the on-sale search back past its
  creation (the search lists newest-created first: ``CrawlSearchTotal.reach``, or the whole search) and did not
  see it. Where no crawl could tell (a busy IP's listing drops off the pages read long before it is deleted), only
  when it is the seller's one earlier listing of that title and the seller listed at most ``FEW_LISTINGS`` of the
  IP's listings within ``RELIST_WITHIN``: a shop lists copies of the same goods under one title, and taking a copy
  still on sale for a relist would count new goods as none. Scored on the simulated market's truth
  (``python -m bench accuracy``: relist links right, relists counted as new).

The earlier listing is found by three index lookups per result, on ``item_snapshots`` (IP, seller, fingerprint of the
normalized title) and on ``listing_relists`` (the listings replaced), whatever the IP's history. The link is
stored in ``listing_relists`` (the relist → the listing it replaced, and the goods' first listing); the goods'
events are derived from the sightings of all its listings and kept under the first listing's id
(``lib.market.facts.rederive``), so its sale, sold under any listing, is the sale of the goods first listed then.

The link is made when the relist is first applied, from the listings stored then: a relist whose earlier listing
reaches the database only later (a late result of an older crawl) stays a new listing.

A listing left undecided keeps its row in ``relist_undecided``, decided or not, until retention prunes it: each is
drawn into the IP's sample of checks with a chance ``sample_share`` gives, the drawn ones are checked first
(``to_check``), and their share of relists estimates the undecided ones' (``lib.market.relist_share``).
"""

from __future__ import annotations

import bisect
import hashlib
from collections import defaultdict
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

import peewee

from lib.core.db import ParameterList, insert_rows
from lib.crawling.item_states import DELETED, UNKNOWN
from lib.market.item_state import ON_SALE, CrawlItem
from lib.market.statistics import tuples
from lib.segments.title_keys import earlier_titles
from models import CrawlSearchTotal, ItemSnapshot, ListingRelist, RelistUndecided

CHUNK = 500
#: A seller with more of the IP's listings than this within RELIST_WITHIN is taken for a shop: its same-titled
#: listings nobody saw deleted are copies, not relists (``python -m bench accuracy`` scores the choice).
FEW_LISTINGS = 10
#: An IP whose undecided listings waiting for a check are more than this many crawls' checks gets none
#: (``to_check``; ``python -m bench accuracy`` scores the choice).
BACKLOG_CRAWLS = 24


@dataclass(frozen=True)
class Candidate:
    """An earlier listing of the IP that a new one may relist."""

    source_id: str
    title_match: str
    created: float
    last_seen: float


def _when(item: CrawlItem, crawled_at: float) -> float:
    """When a listing was created: the site's time, else the crawl that first saw it."""
    return item.created if item.created is not None else crawled_at


@dataclass(frozen=True)
class Relists:
    """What ``find_relists`` found of new listings: ``links``, relist → the listing it replaced; ``undecided``, a
    listing that may relist an earlier one no crawl has yet read back past → that earlier listing (the latest
    such one)."""

    links: dict[str, str]
    undecided: dict[str, Candidate]


def find_relists(ip_id: int, crawled_at: float, new: Sequence[CrawlItem], within: float,
                 on_sale: Collection[str] = (), apart: Collection[str] | None = None) -> Relists:
    """Of these listings new to the IP, the relists, and those not yet known to be or not to be. ``on_sale``: the
    listings the result saw on sale (seen now, after the new ones were created: not deleted); ``apart``: listings
    not taken for an earlier one (None: ``new``, listings of one result are not each other's)."""
    none = Relists({}, {})
    wanted = {item.source_id: (item, earlier_titles(item.title)) for item in new if item.seller is not None}
    wanted = {sid: (item, keys) for sid, (item, keys) in wanted.items() if keys}
    if not wanted:
        return none
    apart = wanted.keys() if apart is None else apart
    sellers = sorted({item.seller for item, _ in wanted.values() if item.seller is not None})
    keys = sorted({key for _, found in wanted.values() for key in found})
    earliest = min(_when(item, crawled_at) for item, _ in wanted.values()) - within
    found: dict[str, list[Candidate]] = defaultdict(list)
    for start in range(0, len(sellers), CHUNK):
        for sid, seller, key, created, first_seen, last_seen in tuples(
                ItemSnapshot.select(ItemSnapshot.source_id, ItemSnapshot.seller, ItemSnapshot.title_match,
                                    ItemSnapshot.created, ItemSnapshot.first_seen, ItemSnapshot.last_seen)
                .where((ItemSnapshot.ip_id == ip_id)
                       & ItemSnapshot.seller.in_(ParameterList(sellers[start:start + CHUNK]))
                       & ItemSnapshot.title_match.in_(ParameterList(keys))
                       & (ItemSnapshot.status == ON_SALE) & (ItemSnapshot.last_seen >= earliest))):
            found[seller].append(Candidate(sid, key, first_seen if created is None else created, last_seen))
    if not found:
        return none
    # a listing relisted already was deleted then: another listing of its title is other goods
    replaced = _relisted(ip_id, sorted({c.source_id for found_of in found.values() for c in found_of}))
    gone = _gone(ip_id, earliest, crawled_at)
    few = _few_listings(ip_id, sorted(found), earliest, crawled_at)
    out = Relists({}, {})
    for sid, (item, titles) in sorted(wanted.items(), key=lambda w: (_when(w[1][0], crawled_at), w[0])):
        at = _when(item, crawled_at)
        earlier = [c for c in found.get(item.seller or "", []) if c.source_id not in apart
                   and c.source_id not in on_sale and c.source_id not in replaced and c.title_match in titles
                   and at - within <= c.created < at and c.last_seen < at]
        if not earlier:
            continue
        latest = max(earlier, key=lambda c: (c.created, c.source_id))
        if gone(latest) or (len(earlier) == 1 and item.seller in few):
            out.links[sid] = latest.source_id
            replaced.add(latest.source_id)
        else:
            out.undecided[sid] = latest
    return out


def decide_undecided(ip_id: int, crawled_at: float, reach: float | None, within: float,
                     on_sale: Collection[str] = ()) -> dict[str, str]:
    """Decide the IP's undecided listings (``RelistUndecided``) that a crawl at ``crawled_at`` reading the on-sale
    search back to ``reach`` (None: whole) may tell: those waiting for a read back to ``reach`` or less far. Those
    it tells are decided (``RelistUndecided.relist``); the relists among them are returned (relist → the listing it
    replaced) and stored, with the goods they join (``store_relists``). Those created more than ``within`` ago wait
    no more: no listing that old is anyone's earlier one any more, and they stay new listings, undecided."""
    waiting = RelistUndecided.select(RelistUndecided.source_id).where(
        (RelistUndecided.ip_id == ip_id) & RelistUndecided.relist.is_null()
        & (RelistUndecided.created >= crawled_at - within))
    if reach is not None:
        waiting = waiting.where(RelistUndecided.back >= reach)
    ids = sorted(sid for (sid,) in tuples(waiting))
    if not ids:
        return {}
    items: list[CrawlItem] = []
    for start in range(0, len(ids), CHUNK):
        items += [CrawlItem(sid, title, None, ON_SALE, created=first_seen if created is None else created,
                            seller=seller)
                  for sid, title, seller, created, first_seen in tuples(
                      ItemSnapshot.select(ItemSnapshot.source_id, ItemSnapshot.title, ItemSnapshot.seller,
                                          ItemSnapshot.created, ItemSnapshot.first_seen)
                      .where((ItemSnapshot.ip_id == ip_id)
                             & ItemSnapshot.source_id.in_(ParameterList(ids[start:start + CHUNK]))))]
    found = find_relists(ip_id, crawled_at, items, within, on_sale, apart=())
    _decided(ip_id, [sid for sid in ids if sid not in found.undecided], found.links)
    keep_undecided(ip_id, found.undecided, items, crawled_at)
    _link_late(ip_id, found.links, {item.source_id: _when(item, crawled_at) for item in items})
    return found.links


def undecided_backs(ip_id: int, since: float, checked: Collection[str] = ()) -> list[float]:
    """When the earlier listings were created that the IP's listings undecided since ``since`` may relist, but for
    those a crawl checks (``checked``: their ids)."""
    return [back for back, earlier in tuples(
        RelistUndecided.select(RelistUndecided.back, RelistUndecided.earlier)
        .where((RelistUndecided.ip_id == ip_id) & RelistUndecided.relist.is_null()
               & (RelistUndecided.created >= since))) if earlier not in checked]


def keep_undecided(ip_id: int, undecided: dict[str, Candidate], items: Sequence[CrawlItem],
                   crawled_at: float, share: float = 0.0) -> None:
    """Store (or bring up to date) the listings ``find_relists`` left undecided; a new one is drawn into the IP's
    sample of checks with chance ``share`` (``sample_share``)."""
    when = {item.source_id: _when(item, crawled_at) for item in items}
    insert_rows(RelistUndecided, [{"ip_id": ip_id, "source_id": sid, "created": when[sid], "back": earlier.created,
                                   "earlier": earlier.source_id, "share": share if drawn(sid, share) else None}
                                  for sid, earlier in undecided.items()],
                conflict="update", target=[RelistUndecided.ip_id, RelistUndecided.source_id],
                preserve=[RelistUndecided.back, RelistUndecided.earlier])


def sample_share(undecided: int, most: int) -> float:
    """The chance each of a result's ``undecided`` new listings has of being drawn into the IP's sample of checks:
    a crawl's ``most`` checks keep up with that many drawn a result, so an IP whose shops list fewer undecided
    listings a crawl than that has them all drawn, and checked."""
    return min(1.0, most / undecided) if most > 0 and undecided > 0 else 0.0


def drawn(source_id: str, share: float) -> bool:
    """Whether a listing is drawn into a sample taken with chance ``share``: a uniform number from a hash of its
    id, the same on every worker and at every retry, and unrelated to whether it relists."""
    digest = hashlib.blake2b(source_id.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") < share * 2.0 ** 64


def to_check(ip_id: int, most: int, since: float | None = None) -> list[str]:
    """The earlier listings whose pages would decide the IP's undecided listings created since ``since``
    (``lib.crawling.item_read``), at most ``most``: those of the listings drawn into the sample first, then the
    others', the longest undecided first. The others only while at most ``BACKLOG_CRAWLS`` crawls' checks of them
    wait: past that the checks do not keep up with the IP's shops, and would decide a small share of their
    listings (most of them copies, not relists) for a crawl's worth of requests each time; the sample's share of
    relists then estimates theirs (``lib.market.relist_share``)."""
    waiting = RelistUndecided.select(RelistUndecided.earlier).where(
        (RelistUndecided.ip_id == ip_id) & RelistUndecided.relist.is_null() & RelistUndecided.earlier.is_null(False))
    if since is not None:
        waiting = waiting.where(RelistUndecided.created >= since)
    order = (RelistUndecided.created, RelistUndecided.source_id)
    out = [earlier for (earlier,) in tuples(waiting.where(RelistUndecided.share.is_null(False))
                                            .order_by(*order).limit(most))]
    others = waiting.where(RelistUndecided.share.is_null())
    if len(out) < most and others.limit(BACKLOG_CRAWLS * most + 1).count() <= BACKLOG_CRAWLS * most:
        out += [earlier for (earlier,) in tuples(others.order_by(*order).limit(most - len(out)))]
    return list(dict.fromkeys(out))


def decide_checked(ip_id: int, checks: Mapping[str, str]) -> dict[str, str]:
    """Decide the IP's undecided listings whose earlier listing a crawl read (``checks``: its id → its state,
    ``lib.crawling.item_states``): deleted, the new listing relists it (unless another relist took it already); on
    sale or sold, the new listing is other goods; a read that told nothing leaves the listing to the reads back.
    The relists are returned (relist → the listing it replaced) and stored, with the goods they join."""
    if not checks:
        return {}
    rows = []
    earlier_ids = sorted(checks)
    for start in range(0, len(earlier_ids), CHUNK):
        rows += list(tuples(RelistUndecided.select(RelistUndecided.source_id, RelistUndecided.earlier,
                                                   RelistUndecided.created)
                            .where((RelistUndecided.ip_id == ip_id) & RelistUndecided.relist.is_null()
                                   & RelistUndecided.earlier.in_(ParameterList(earlier_ids[start:start + CHUNK])))))
    if not rows:
        return {}
    replaced = _relisted(ip_id, sorted({earlier for _, earlier, _ in rows}))
    links: dict[str, str] = {}
    when: dict[str, float] = {}
    decided: list[str] = []
    unknown: list[str] = []
    for sid, earlier, created in sorted(rows, key=lambda r: (r[2], r[0])):
        state = checks[earlier]
        if state == UNKNOWN:
            unknown.append(sid)
            continue
        decided.append(sid)
        if state == DELETED and earlier not in replaced:
            links[sid], when[sid] = earlier, created
            replaced.add(earlier)  # a listing is deleted once: of two new listings, the first relists it
    _decided(ip_id, decided, links)
    # a drawn listing whose check told nothing leaves the sample: a read back may decide it, but not at random
    for start in range(0, len(unknown), CHUNK):
        RelistUndecided.update(earlier=None, share=None).where(
            (RelistUndecided.ip_id == ip_id)
            & RelistUndecided.source_id.in_(ParameterList(unknown[start:start + CHUNK]))).execute()
    _link_late(ip_id, links, when)
    return links


def _decided(ip_id: int, decided: Sequence[str], links: Mapping[str, str]) -> None:
    """Mark these undecided listings decided: relists where ``links`` has them, other goods otherwise."""
    for relist in (True, False):
        ids = [sid for sid in decided if (sid in links) == relist]
        for start in range(0, len(ids), CHUNK):
            RelistUndecided.update(relist=relist).where(
                (RelistUndecided.ip_id == ip_id)
                & RelistUndecided.source_id.in_(ParameterList(ids[start:start + CHUNK]))).execute()


def _link_late(ip_id: int, links: dict[str, str], when: Mapping[str, float]) -> None:
    """Store relists decided after they were applied: each joins the goods of the listing it replaced, and the
    relists made since of that listing itself (it was the goods' first listing then) join them too."""
    store_links(ip_id, links, when)
    goods = goods_of(ip_id, sorted(links))
    for sid in sorted(links):
        ListingRelist.update(goods_id=goods[sid]).where((ListingRelist.ip_id == ip_id)
                                                        & (ListingRelist.goods_id == sid)).execute()


def _gone(ip_id: int, since: float, until: float) -> Callable[[Candidate], bool]:
    """Whether a listing is known to be off the on-sale search: one of the IP's crawls in (its last sighting,
    ``until``] showed on-sale listings and read back to its creation or further (``reach`` None: the whole
    search). A crawl that showed none tells nothing: the site now and then answers empty for no reason."""
    crawls = list(tuples(CrawlSearchTotal.select(CrawlSearchTotal.crawled_at, CrawlSearchTotal.reach)
                         .where((CrawlSearchTotal.ip_id == ip_id) & (CrawlSearchTotal.status == ON_SALE)
                                & (CrawlSearchTotal.crawled_at > since) & (CrawlSearchTotal.crawled_at <= until)
                                & CrawlSearchTotal.newest.is_null(False))
                         .order_by(CrawlSearchTotal.crawled_at)))
    times = [at for at, _ in crawls]
    # from each crawl on, the furthest back any later crawl read (-inf: one read the whole search)
    furthest = [float("inf")] * (len(crawls) + 1)
    for k in range(len(crawls) - 1, -1, -1):
        reach = crawls[k][1]
        furthest[k] = min(furthest[k + 1], float("-inf") if reach is None else reach)

    def gone(c: Candidate) -> bool:
        return furthest[bisect.bisect_right(times, c.last_seen)] <= c.created

    return gone


def _few_listings(ip_id: int, sellers: Sequence[str], since: float, until: float) -> set[str]:
    """Those of ``sellers`` with at most ``FEW_LISTINGS`` of the IP's listings stored, created in [since, until]."""
    created = peewee.fn.COALESCE(ItemSnapshot.created, ItemSnapshot.first_seen)
    out: set[str] = set()
    for start in range(0, len(sellers), CHUNK):
        out.update(seller for seller, count in tuples(
            ItemSnapshot.select(ItemSnapshot.seller, peewee.fn.COUNT(ItemSnapshot.source_id))
            .where((ItemSnapshot.ip_id == ip_id) & ItemSnapshot.seller.in_(ParameterList(sellers[start:start + CHUNK]))
                   & (created >= since) & (created <= until))
            .group_by(ItemSnapshot.seller)) if count <= FEW_LISTINGS)
    return out


def _relisted(ip_id: int, source_ids: Sequence[str]) -> set[str]:
    """Those of these listings that a stored relist replaced."""
    out: set[str] = set()
    for start in range(0, len(source_ids), CHUNK):
        out.update(sid for (sid,) in tuples(
            ListingRelist.select(ListingRelist.relist_of)
            .where((ListingRelist.ip_id == ip_id)
                   & ListingRelist.relist_of.in_(ParameterList(source_ids[start:start + CHUNK])))))
    return out


def store_relists(ip_id: int, links: dict[str, str], items: Sequence[CrawlItem], crawled_at: float) -> None:
    """Keep the links ``find_relists`` found (relist → the listing it replaced), in the result's transaction, each
    with its goods' first listing (a relist of a relist is the same goods)."""
    store_links(ip_id, links, {item.source_id: _when(item, crawled_at) for item in items})


def store_links(ip_id: int, links: dict[str, str], when: Mapping[str, float]) -> None:
    """``store_relists`` with each relist's creation given (``when``)."""
    goods = goods_of(ip_id, sorted(set(links.values())))
    insert_rows(ListingRelist, [{"ip_id": ip_id, "source_id": sid, "goods_id": goods.get(previous, previous),
                                 "relist_of": previous, "relisted_at": when[sid]}
                                for sid, previous in links.items()], conflict="ignore")


def goods_of(ip_id: int, source_ids: Sequence[str]) -> dict[str, str]:
    """Of these listings, the relists: relist → the goods' first listing."""
    out: dict[str, str] = {}
    for start in range(0, len(source_ids), CHUNK):
        out.update(tuples(ListingRelist.select(ListingRelist.source_id, ListingRelist.goods_id)
                          .where((ListingRelist.ip_id == ip_id)
                                 & ListingRelist.source_id.in_(ParameterList(source_ids[start:start + CHUNK])))))
    return out


def goods_groups(ip_id: int, source_ids: Sequence[str]) -> dict[str, list[str]]:
    """The goods these listings belong to, each with all its listings (the first one first): two index reads of
    the links. A listing with no relist is goods of its own."""
    relisted = goods_of(ip_id, source_ids)
    firsts = sorted({relisted.get(sid, sid) for sid in source_ids})
    groups: dict[str, list[str]] = {goods: [goods] for goods in firsts}
    for start in range(0, len(firsts), CHUNK):
        for sid, goods in sorted(tuples(
                ListingRelist.select(ListingRelist.source_id, ListingRelist.goods_id)
                .where((ListingRelist.ip_id == ip_id)
                       & ListingRelist.goods_id.in_(ParameterList(firsts[start:start + CHUNK]))))):
            groups[goods].append(sid)
    return groups
