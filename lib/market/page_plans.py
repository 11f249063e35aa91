"""Each IP's page plan for its next crawl, made from its last one (docs/concepts/crawling.md, "Pages that follow
change"; the crawler's side is ``lib.crawling.page_plan``).

* **On sale.** A search that ended on its pages (the IP's whole on-sale search fits under the cap) is read whole
  again: a relist is told from new goods only when a crawl read back past the earlier listing's creation and did
  not see it (``lib.market.relists``), and a small IP's whole search costs what reading it back to the last crawl
  would. A search that did not end is read back to the newest listing the last crawl saw, less
  ``LATE_INDEXING``: the listings past it were read then, or were created before it and are indexed late. Its
  plan watches the listings on sale the IP's crawls saw within RELIST_WITHIN, by seller and title: a new listing
  that may relist one of them takes the read back past them, so a relist is still told from new goods (a shop's
  copies of one title still on sale are seen there, and only the one gone is taken for the relisted one). Only the
  newest listings the page cap holds (``SCHEDULER_PAGES_ON_SALE`` × 120) are watched: the cap's pages reach no
  further back, and a deeper read that stops at the cap short of the earlier listing would cost pages and tell
  nothing. A search read whole needs no watch.
* **Sold.** A sale between two crawls is of a listing created at most a listing's life (``MAX_AGE_HOURS``) before
  it, so the sold search is read back to that age before the last crawl, less ``LATE_INDEXING``: every sale since
  is on the pages read, and no page older. The IPs whose pages reach that far are the reference of every outflow
  estimate (``lib.market.reach``): the plan keeps them so.

Both stay within the page caps (SCHEDULER_PAGES_ON_SALE, SCHEDULER_PAGES_SOLD); where the change outruns a cap,
the estimates take over as before.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from lib.core.settings import Settings
from lib.crawling.page_plan import LATE_INDEXING, CrawlPlan, SearchPlan, watch_key
from lib.crawling.selectors import PAGE_SIZE
from lib.market.item_state import ON_SALE, CrawlItem
from lib.market.reach import HOUR, MAX_AGE_HOURS
from lib.segments.title_keys import title_match


def next_plan(crawled_at: float, items: Sequence[CrawlItem], ended: Mapping[str, bool], settings: Settings,
              watched: Mapping[str, Sequence[float]] | None = None) -> CrawlPlan:
    """The plan of the crawl after one made at ``crawled_at`` that read ``items`` (the IP's listings), each search
    having ``ended`` on its pages or not; ``watched``: the listings the last plan watched."""
    caps = CrawlPlan.caps(settings.scheduler_pages_on_sale, settings.scheduler_pages_sold)
    newest = max((i.created for i in items if i.status == ON_SALE and i.created is not None), default=None)
    watch = listings_on_sale(crawled_at - settings.relist_within, caps.on_sale.pages * PAGE_SIZE, items,
                             watched or {})
    if ended.get("on_sale"):
        # read whole, it needs no watch; if it outgrows the cap, that crawl's pages make the next plan's
        on_sale = SearchPlan(caps.on_sale.pages, None, "the whole search, which the last crawl read to its end")
    elif newest is None:
        on_sale = caps.on_sale  # the last crawl read no creation time (its pages came from the DOM)
    else:
        on_sale = SearchPlan(caps.on_sale.pages, min(newest, crawled_at) - LATE_INDEXING,
                             "back to the newest listing the last crawl saw", watch)
    sold = SearchPlan(caps.sold.pages, crawled_at - MAX_AGE_HOURS * HOUR - LATE_INDEXING,
                      f"back to listings created {MAX_AGE_HOURS} h before the last crawl (a listing's life)")
    return CrawlPlan(on_sale, sold, made_at=crawled_at)


def listings_on_sale(since: float, most: int, items: Sequence[CrawlItem],
                     watched: Mapping[str, Sequence[float]]) -> dict[str, tuple[float, ...]]:
    """The newest ``most`` listings on sale created after ``since``, by ``watch_key`` (seller and title): those the
    last plan watched and those of ``items``."""
    times: set[tuple[float, str]] = {(t, key) for key, created in watched.items() for t in created if t >= since}
    for item in items:
        if item.status == ON_SALE and item.seller is not None and item.created is not None and item.created >= since \
                and (title := title_match(item.title)) is not None:
            times.add((item.created, watch_key(item.seller, title)))
    kept: dict[str, list[float]] = {}
    for t, key in sorted(times)[-most:] if most else ():
        kept.setdefault(key, []).append(t)
    return {key: tuple(t) for key, t in kept.items()}
