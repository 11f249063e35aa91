"""Hourly crawls of the realistic market seen as the pages show them, without a browser or a database: each crawl's
reach into both searches (the oldest ``created`` on its last page, when the search goes on past its pages), the
listings it saw and the sales it saw (docs/concepts/measures.md, "Estimates"). What the estimators of
``lib.market.reach`` read: for their coverage tests and ``python -m bench estimates``, against the market's truth."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from lib.market.reach import CrawlReach, filled_inflow
from lib.standins.simulator.model import HOUR, MarketModel
from lib.standins.simulator.realistic import PAGE_SIZE, RealisticSearch
from lib.standins.simulator.stories import ON_SALE, SOLD_OUT, TRADING

ON_SALE_SEARCH, SOLD_SEARCH = frozenset({ON_SALE}), frozenset({SOLD_OUT, TRADING})
LIFE = 192 * HOUR


@dataclass
class Seen:
    """What an IP's crawls saw: its listings' creation times, its sales' times, the crawls' reaches, and the ages
    at sale of the sales seen by crawls whose sold pages reached back over a listing's life."""

    created: dict[str, float] = field(default_factory=dict)
    sales: dict[str, float] = field(default_factory=dict)
    crawls: list[CrawlReach] = field(default_factory=list)
    reference_ages: list[float] = field(default_factory=list)

    def inflow_by_hour(self) -> dict[int, float]:
        """The listings seen created, by hour, filled where the on-sale pages fell short, as the window measures
        give them to the outflow estimate (``lib.market.reach.filled_inflow``)."""
        counted = Counter(int(t // HOUR) for t in self.created.values())
        return filled_inflow({hour: float(n) for hour, n in counted.items()}, self.crawls)


def crawl_hourly(model: MarketModel, keyword: str, start: float, end: float, pages: int = 5,
                 search: RealisticSearch | None = None, sold: bool = True) -> Seen:
    """The IP's crawls every hour of [start, end] (the first one its baseline: only later listings count)."""
    search = search or RealisticSearch(model)
    seen = Seen()
    wanted = pages * PAGE_SIZE
    previous = None
    t = start
    while t <= end:
        on_sale = search.results(keyword, ON_SALE_SEARCH, t, needed=wanted)
        on_sale_reach = on_sale[-1].story.created if len(on_sale) >= wanted else None
        for served in on_sale:
            if served.story.created >= start:
                seen.created.setdefault(served.story.id, served.story.created)
        sold_reach = None
        if sold:
            sold_items = search.results(keyword, SOLD_SEARCH, t, needed=wanted)
            sold_reach = sold_items[-1].story.created if len(sold_items) >= wanted else None
            covered = sold_reach is None or sold_reach <= t - LIFE
            for served in sold_items:
                story = served.story
                if story.created >= start:
                    seen.created.setdefault(story.id, story.created)
                if story.sold_at is not None and story.id not in seen.sales and previous is not None \
                        and story.sold_at > start:
                    seen.sales[story.id] = story.sold_at
                    if covered:
                        seen.reference_ages.append(story.sold_at - story.created)
        seen.crawls.append(CrawlReach(t, previous, on_sale_reach, sold_reach,
                                      on_sale[0].story.created if on_sale else None))
        previous = t
        t += HOUR
    return seen
