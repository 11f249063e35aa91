"""The realistic market's search, as the site answers it: newest first, each listing as it was its indexing delay
ago, pages padded past the real results, an undercounted and capped ``numFound``, auctions with ``auction_info``.
The search API's answers (``answer``), the truth of each page (``truth``) and the item API's answers about the
listings the search served (``item``), for lib/standins/simulator/server.py.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from lib.standins.simulator.model import HOUR, MarketModel, digest
from lib.standins.simulator.padding import padding
from lib.standins.simulator.stories import ON_SALE, SOLD_OUT, TRADING, ListingStory

PAGE_SIZE = 120
API_STATUS = {ON_SALE: "ITEM_STATUS_ON_SALE", TRADING: "ITEM_STATUS_TRADING", SOLD_OUT: "ITEM_STATUS_SOLD_OUT"}
#: The item API's statuses (``GET /items/get``: "sold_out" in take-kun/mercapi tests/cassettes/test_item.yml).
ITEM_STATUS = {ON_SALE: "on_sale", TRADING: "trading", SOLD_OUT: "sold_out"}
#: The item API's answer (HTTP 404) for an id it holds no listing under (take-kun/mercapi
#: tests/cassettes/test_item_not_found.yml): a listing deleted by its seller, withdrawn or relisted is no record.
ITEM_NOT_FOUND: dict[str, object] = {
    "result": "error", "errors": [{"code": "RecordNotFoundException", "message": "見つかりませんでした"}], "meta": {}}


@dataclass(frozen=True)
class Served:
    """A listing on a page: its story, the status the search shows, and whether it is padding."""

    story: ListingStory
    status: str
    padded: bool


@dataclass(frozen=True)
class Page:
    """One page of a search: its listings, the search's ``numFound`` as the site reports it, and whether a next
    page follows."""

    items: tuple[Served, ...]
    num_found: int
    has_next: bool


class RealisticSearch:
    """Searches of a ``MarketModel``'s market.

    Parameters:
        model: the market.
    """

    def __init__(self, model: MarketModel) -> None:
        self.model = model
        self._padding: dict[tuple[str, bool, int, int], list[ListingStory]] = {}
        #: every listing a page served: its IP and creation (the item API answers about these)
        self._served: dict[str, tuple[str, float]] = {}

    def _horizon(self, statuses: frozenset[str]) -> float:
        """How far back (seconds) a search's listings can have been created."""
        selling = self.model.traits.selling
        if SOLD_OUT in statuses or TRADING in statuses:
            return selling.sold_search_hours * HOUR
        return (selling.life_hours + 24 * self.model.traits.relists.after_days[1]) * HOUR

    def results(self, keyword: str, statuses: frozenset[str], t: float, needed: int | None = None,
                since: float | None = None) -> list[Served]:
        """The real results of a search at ``t``, newest first: the first ``needed`` (all: None), among the
        listings created after ``since`` (default: the search's horizon)."""
        start = t - self._horizon(statuses) if since is None else since
        out: list[Served] = []
        for story in self.model.listings(keyword, start, t + 1):
            if story.in_search_from > t:
                continue
            status = story.search_status_at(t)
            if status in statuses:
                out.append(Served(story, status, False))
                if needed is not None and len(out) >= needed:
                    break
        return out

    def num_found(self, keyword: str, statuses: frozenset[str], t: float) -> int:
        """The search's total as the site reports it: an undercount (the listings of the last
        ``num_found_window_hours`` times the IP's and search's factor), capped."""
        search = self.model.traits.search
        real = self.results(keyword, statuses, t, since=t - search.num_found_window_hours * HOUR)
        low, high = search.num_found_factor
        u = digest(self.model.seed, keyword, sorted(statuses), "num_found") / 2**64
        factor = low * float((high / low) ** u)  # log-uniform
        return min(search.num_found_cap, math.ceil(len(real) * factor))

    def page(self, keyword: str, statuses: frozenset[str], number: int, t: float) -> Page:
        """Page ``number`` (from 1) of a search at ``t``: the real results, then the padding."""
        start, end = (number - 1) * PAGE_SIZE, number * PAGE_SIZE
        real = self.results(keyword, statuses, t, needed=end + 1)
        pad = self.model.traits.search.padding_positions
        items = real[start:end]
        if len(real) < end:  # the real results end on this page or before: padding follows them
            skip = max(0, start - len(real))
            padded = self._padded(keyword, ON_SALE not in statuses, t, min(pad, skip + end - start))
            items += [Served(story, story.search_status_at(t) or SOLD_OUT, True)
                      for story in padded[skip:skip + end - start - len(items)]]
        has_next = len(real) > end or end < len(real) + pad
        self.record(items)
        return Page(tuple(items), self.num_found(keyword, statuses, t), has_next)

    def record(self, items: Iterable[Served]) -> None:
        """Remember listings a page served (``page`` does): the item API answers about them."""
        for served in items:
            if not served.padded:
                self._served[served.story.id] = (served.story.keyword, served.story.created)

    def item(self, listing_id: str, t: float) -> tuple[int, dict[str, object]]:
        """The item API's answer (``GET /items/get?id=…``: HTTP status, body) about a listing at ``t``: its own
        record, so its state at ``t`` (no indexing delay), or ``ITEM_NOT_FOUND`` once it left the market unsold. Ids
        no page served are not found (a crawler learns ids from the search)."""
        known = self._served.get(listing_id)
        story = None if known is None else next(
            (s for s in self.model.listings(known[0], known[1], known[1] + 1) if s.id == listing_id), None)
        status = None if story is None else story.status_at(t)
        if story is None or status is None:
            return 404, ITEM_NOT_FOUND
        return 200, {"result": "OK", "data": {
            "id": story.id, "seller": {"id": int(story.seller_id)}, "status": ITEM_STATUS[status],
            "name": story.title, "price": story.price_at(t), "created": int(story.created),
            "updated": int(story.updated_at(t + story.index_delay))}, "meta": {}}

    def _padded(self, keyword: str, sold: bool, t: float, count: int) -> list[ListingStory]:
        """``padding``, kept for the hour it stays the same in (a crawl reads several pages of it)."""
        key = (keyword, sold, int(t // HOUR), count)
        if key not in self._padding:
            if len(self._padding) > 256:
                self._padding.clear()
            self._padding[key] = padding(self.model, keyword, sold, t, count)
        return self._padding[key]

    def api_item(self, served: Served, t: float) -> dict[str, object]:
        """A listing as the search API lists it: every number a string, like the real one, the seller's id, and an
        auction's ``auction_info`` (its numbers are numbers, as in the real answers)."""
        story = served.story
        seen = t - story.index_delay
        item: dict[str, object] = {
            "id": story.id, "sellerId": story.seller_id, "buyerId": "", "status": API_STATUS[served.status],
            "name": story.title, "price": str(story.price_at(seen)), "created": str(int(story.created)),
            "updated": str(int(story.updated_at(t))),
            "thumbnails": [f"https://static.mercdn.net/thumb/item/webp/{story.id}_1.jpg"],
            "itemType": "ITEM_TYPE_MERCARI", "itemConditionId": str(1 + int(story.created) % 6),
            "shippingPayerId": "2", "itemSizes": [], "itemBrand": None, "itemPromotions": [], "shopName": "",
            "itemSize": None, "shippingMethodId": "14", "categoryId": "1", "isNoPrice": False,
        }
        auction = story.auction
        if auction is not None:
            bids = auction.bids_at(seen)
            ended = seen >= auction.end
            item["auction_info"] = {
                "id": auction.id, "start_time": int(auction.start), "expected_end_time": int(auction.end),
                "bid_deadline_duration_seconds": max(0, int(auction.end - seen)),
                "bid_total_duration_seconds": int(auction.end - auction.start), "total_bids": len(bids),
                "highest_bid": bids[-1].price if bids else 0,
                "state": self.model.traits.auctions.ended_state if ended else self.model.traits.auctions.ongoing_state,
            }
        return item

    def answer(self, keyword: str, statuses: frozenset[str], number: int, t: float) -> dict[str, object]:
        """The search API's answer for page ``number`` at ``t``."""
        return self.answer_of(self.page(keyword, statuses, number, t), number, t)

    def answer_of(self, page: Page, number: int, t: float) -> dict[str, object]:
        """The search API's answer holding ``page`` (page ``number`` at ``t``)."""
        return {"meta": {"nextPageToken": f"v1:{number}" if page.has_next else "",
                         "previousPageToken": f"v1:{number - 2}" if number > 2 else "",
                         "numFound": str(page.num_found)},
                "items": [self.api_item(served, t) for served in page.items], "components": [],
                "searchCondition": {}, "searchConditionId": ""}

    def truth(self, keyword: str, statuses: frozenset[str], number: int, t: float) -> list[dict[str, object]]:
        """A page's listings as the API lists them, each with its story (``truth``)."""
        out = []
        for served in self.page(keyword, statuses, number, t).items:
            story = served.story
            out.append(self.api_item(served, t) | {"truth": {
                "padded": served.padded, "keyword": story.keyword, "goods": story.goods, "seller": story.seller_id,
                "created": story.created, "in_search_from": story.in_search_from, "sold_at": story.sold_at,
                "sold_price": story.sold_price, "ended_at": story.ended_at, "auction": story.auction is not None,
                "relist_of": story.relist_of, "relisted_as": story.relisted_as, "first_listed": story.first_listed,
                "prices": [[p.at, p.price] for p in story.prices]}})
        return out
