"""A listing's whole story in the realistic market (lib/standins/simulator/model.py), as values."""

from __future__ import annotations

from dataclasses import dataclass

from lib.standins.simulator.story_titles import Title

ON_SALE, TRADING, SOLD_OUT = "on_sale", "trading", "sold_out"


@dataclass(frozen=True, slots=True)
class PricePoint:
    """The price from ``at`` on (an asking price, or an auction's bid)."""

    at: float
    price: int


@dataclass(frozen=True, slots=True)
class Auction:
    """An auction's terms and bids: the price shown is the start price until the first bid, then the highest bid.

    Parameters:
        id: the auction's own id (``auction_info.id``).
        start, end: when bidding opens and ends (``start_time``, ``expected_end_time``).
        start_price: the price before any bid.
        bids: each bid's time and amount, rising.
    """

    id: str
    start: float
    end: float
    start_price: int
    bids: tuple[PricePoint, ...]

    def bids_at(self, t: float) -> tuple[PricePoint, ...]:
        return tuple(bid for bid in self.bids if bid.at <= t)


@dataclass(frozen=True, slots=True)
class Burst:
    """A scheduled event of an IP: its flow times ``factor`` from ``start`` to ``end``."""

    kind: str
    start: float
    end: float
    factor: float


@dataclass(frozen=True, slots=True)
class ListingStory:
    """One listing, from its listing to its end, as the market's truth.

    Parameters:
        id: the listing's id (``m`` and 11 digits).
        keyword: the IP whose market it belongs to.
        seller_id: its seller (kept across a relist).
        goods: its goods type (an id of lib/segments/goods_types.toml).
        title_of: its title, made when read (``title``: its text, which names the IP's keyword).
        created: when it was listed.
        index_delay: seconds until it, and each change of it, reaches the search.
        prices: its asking-price path (first the listing's price, then a cut if any); for an auction, the start
            price then each bid.
        sold_at, sold_out_at: when it sold (then "trading") and when its trade completed ("sold out").
        ended_at: when it left the on-sale search unsold: withdrawn, deleted to be relisted, or an auction
            without bids ended.
        auction: the auction's terms, for an auction.
        relist_of, relisted_as: the listing it relists, and the listing that relists it (the same goods and seller
            under a new id).
        first_listed: when these goods were first listed (``created``, or the relisted listing's).
    """

    id: str
    keyword: str
    seller_id: str
    goods: str
    title_of: Title
    created: float
    index_delay: float
    prices: tuple[PricePoint, ...]
    sold_at: float | None
    sold_out_at: float | None
    ended_at: float | None
    auction: Auction | None
    relist_of: str | None
    relisted_as: str | None
    first_listed: float

    @property
    def title(self) -> str:
        return self.title_of.text

    @property
    def in_search_from(self) -> float:
        """When the listing reaches the search (its indexing delay after its listing)."""
        return self.created + self.index_delay

    @property
    def sold_price(self) -> int | None:
        return self.price_at(self.sold_at) if self.sold_at is not None else None

    def price_at(self, t: float) -> int:
        """The price shown at ``t`` (an auction's current bid)."""
        price = self.prices[0].price
        for point in self.prices[1:]:
            if point.at <= t:
                price = point.price
        return price

    def status_at(self, t: float) -> str | None:
        """Its true status at ``t``; None before its listing and once it left the market unsold."""
        if t < self.created:
            return None
        if self.sold_at is not None and t >= self.sold_at:
            return SOLD_OUT if self.sold_out_at is not None and t >= self.sold_out_at else TRADING
        if self.ended_at is not None and t >= self.ended_at:
            return None
        return ON_SALE

    def search_status_at(self, t: float) -> str | None:
        """Its status as the search shows it at ``t``: as it was its indexing delay earlier."""
        return self.status_at(t - self.index_delay)

    def updated_at(self, t: float) -> float:
        """Its last change the search shows at ``t``."""
        seen = t - self.index_delay
        moments = [p.at for p in self.prices if p.at <= seen]
        moments += [m for m in (self.sold_at, self.sold_out_at) if m is not None and m <= seen]
        return max([self.created, *moments])
