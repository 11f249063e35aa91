"""The realistic market's true flows per IP and window, computed from every listing's story: what the measures
of docs/concepts/measures.md would be if every listing were seen."""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from lib.standins.simulator.model import DAY, HOUR, MarketModel
from lib.standins.simulator.stories import ON_SALE, ListingStory


@dataclass(frozen=True)
class TrueFlow:
    """One IP's true market over [start, end).

    Parameters:
        listed: listings of new goods created in the window (inflow; relists not counted).
        relisted: relists created in the window (the same goods and seller under a new id).
        sold: sales in the window (outflow), fixed-price and auctions; ``auction_sold``: of them auctions.
        sold_price_median: the median price of the window's fixed-price sales (None without any);
            ``auction_price_median``: of its auctions' winning bids.
        cohort: goods first listed in the window; ``cohort_sold``: of them, sold before the window's end (under
            their first listing or a relist).
        sell_through: cohort_sold / cohort (None for an empty cohort).
        time_to_sell_median_hours: the median of sale - first listing over the cohort's goods that sold, at any
            time (None if none did).
    """

    keyword: str
    start: float
    end: float
    listed: int
    relisted: int
    sold: int
    auction_sold: int
    sold_price_median: float | None
    auction_price_median: float | None
    cohort: int
    cohort_sold: int
    sell_through: float | None
    time_to_sell_median_hours: float | None


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def goods_sale(model: MarketModel, story: ListingStory) -> float | None:
    """When the goods of ``story`` (a first listing) sold: under it or under its relist (None: never)."""
    if story.sold_at is not None:
        return story.sold_at
    relist = model.relist(story)
    return relist.sold_at if relist is not None else None


def true_flows(model: MarketModel, keyword: str, start: float, end: float, step: float = DAY) -> list[TrueFlow]:
    """The true flows of consecutive windows of ``step`` seconds from ``start`` to ``end``, in one pass over the
    listings that can sell in them (created up to a listing's life before ``start``)."""
    bounds = [start + i * step for i in range(round((end - start) / step) + 1)]
    windows = len(bounds) - 1
    listed, relisted, sold, auction_sold = [0] * windows, [0] * windows, [0] * windows, [0] * windows
    prices: list[list[float]] = [[] for _ in range(windows)]
    auction_prices: list[list[float]] = [[] for _ in range(windows)]
    cohort, cohort_sold = [0] * windows, [0] * windows
    waits: list[list[float]] = [[] for _ in range(windows)]

    def window(t: float) -> int | None:
        if t < start or t >= bounds[-1]:
            return None
        return min(windows - 1, int((t - start) // step))

    life = model.traits.selling.life_hours * HOUR
    for story in model.listings(keyword, start - life, bounds[-1]):
        created = window(story.created)
        if created is not None:
            if story.relist_of is None:
                listed[created] += 1
                cohort[created] += 1
                sale = goods_sale(model, story)
                if sale is not None:
                    waits[created].append((sale - story.first_listed) / HOUR)
                    if sale < bounds[created + 1]:
                        cohort_sold[created] += 1
            else:
                relisted[created] += 1
        if story.sold_at is not None:
            at = window(story.sold_at)
            price = story.sold_price
            if at is not None and price is not None:
                sold[at] += 1
                if story.auction is not None:
                    auction_sold[at] += 1
                    auction_prices[at].append(price)
                else:
                    prices[at].append(price)
    return [TrueFlow(keyword, bounds[i], bounds[i + 1], listed[i], relisted[i], sold[i], auction_sold[i],
                     _median(prices[i]), _median(auction_prices[i]), cohort[i], cohort_sold[i],
                     cohort_sold[i] / cohort[i] if cohort[i] else None, _median(waits[i]))
            for i in range(windows)]


def true_flow(model: MarketModel, keyword: str, start: float, end: float) -> TrueFlow:
    """The true flow of one window."""
    return true_flows(model, keyword, start, end, end - start)[0]


def on_sale_count(model: MarketModel, keyword: str, t: float) -> int:
    """How many of the IP's listings the on-sale search holds at ``t`` (its true total)."""
    life = model.traits.selling.life_hours * HOUR
    return sum(1 for story in model.listings(keyword, t - life, t + 1)
               if story.in_search_from <= t and story.search_status_at(t) == ON_SALE)
