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

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Protocol

from lib.core.settings import Settings
from lib.crawling.page_plan import (
    LATE_INDEXING,
    CrawlPlan,
    SearchPlan,
    caps,
    deep_sold_pages,
    spare_sold_pages,
    watch_key,
)
from lib.crawling.selectors import PAGE_SIZE
from lib.market.item_state import ON_SALE, SOLD, CrawlItem
from lib.market.reach import HOUR, MAX_AGE_HOURS
from lib.segments.title_keys import title_match


def next_plan(crawled_at: float, items: Sequence[CrawlItem], ended: Mapping[str, bool], settings: Settings,
              last: CrawlPlan | None = None, spare_pages: int = 0, undecided: Sequence[float] = (),
              checks: Sequence[str] = ()) -> CrawlPlan:
    """The plan of the crawl after one made at ``crawled_at`` that read ``items`` (the IP's listings), each search
    having ``ended`` on its pages or not; ``last``: the plan this crawl read (its watch, its flow); ``spare_pages``:
    the sold pages the request budget's spare requests pay for, for an IP whose sales outrun the cap
    (``Price.sold_pages``; 0: the cap); ``undecided``: the creation times of the earlier listings the IP's
    undecided new listings may relist (``lib.market.relists``), which the on-sale search is read back to now and
    then (``relists_read``); ``checks``: listings whose pages the crawl reads (``CrawlPlan.checks``)."""
    limits = caps(settings)
    newest = max((i.created for i in items if i.status == ON_SALE and i.created is not None), default=None)
    watch = listings_on_sale(crawled_at - settings.relist_within, limits.on_sale.pages * PAGE_SIZE, items,
                             last.on_sale.watch if last is not None else {})
    flow = new_flow(crawled_at, items, bool(ended.get("on_sale")), last)
    if ended.get("on_sale"):
        # read whole, it needs no watch; if it outgrows the cap, that crawl's pages make the next plan's
        on_sale = SearchPlan(limits.on_sale.pages, None, "the whole search, which the last crawl read to its end")
    elif newest is None:
        on_sale = limits.on_sale  # the last crawl read no creation time (its pages came from the DOM)
    else:
        on_sale = SearchPlan(limits.on_sale.pages, min(newest, crawled_at) - LATE_INDEXING,
                             "back to the newest listing the last crawl saw", watch)
    read_at = last.relists_read_at if last is not None else None
    deeper = None if ended.get("on_sale") or newest is None else relists_read(crawled_at, undecided, flow, read_at,
                                                                              settings)
    if deeper is not None:
        on_sale, read_at = dataclasses.replace(deeper, watch=watch), crawled_at
    sold, shallow = sold_plan(crawled_at, items, ended, settings, last, spare_pages)
    return CrawlPlan(on_sale, sold, made_at=crawled_at, flow=flow, sold_shallow=shallow, relists_read_at=read_at,
                     checks=tuple(checks))


def relists_read(crawled_at: float, undecided: Sequence[float], flow: float | None, read_at: float | None,
                 settings: Settings) -> SearchPlan | None:
    """A read of the on-sale search back to the earlier listings that the IP's undecided new listings may relist
    (``undecided``: when each was created), where one is due (SCHEDULER_RELIST_EVERY since the last, planned after
    the crawl at ``read_at``) and SCHEDULER_RELIST_PAGES reach at least one of them at the IP's ``flow`` (None:
    not known yet, no such read): back to the oldest of those they reach. The on-sale search holds fewer listings
    than were created (the sold ones left it), so the pages reach at least that far. None: no such read."""
    pages = settings.scheduler_relist_pages
    if pages <= settings.scheduler_pages_on_sale or not undecided or flow is None:
        return None
    if read_at is not None and crawled_at - read_at < settings.scheduler_relist_every:
        return None
    span = pages * PAGE_SIZE / flow * HOUR if flow > 0 else float("inf")
    reached = [back for back in undecided if back >= crawled_at - span]
    if not reached:
        return None
    return SearchPlan(pages, min(reached) - LATE_INDEXING,
                      f"back to the listings {len(reached)} undecided new ones may relist")


def sold_outran(items: Sequence[CrawlItem], ended: Mapping[str, bool], last: CrawlPlan | None) -> bool:
    """Whether a crawl's sold search, read as ``last`` planned, neither ended on its pages nor reached back to the
    plan's depth: its sales outrun the pages read."""
    if last is None or last.sold.until is None or ended.get(SOLD):
        return False
    oldest = min((i.created for i in items if i.status == SOLD and i.created is not None), default=None)
    return oldest is not None and oldest > last.sold.until


def sold_plan(crawled_at: float, items: Sequence[CrawlItem], ended: Mapping[str, bool], settings: Settings,
              last: CrawlPlan | None, spare_pages: int = 0) -> tuple[SearchPlan, int]:
    """The sold search's plan after a crawl, and how many newest-page reads in a row it is (0: not one). Back a
    listing's life before the crawl, to the cap, or to ``spare_pages`` (at most ``spare_sold_pages``) where the
    budget's spare requests pay for them; where a read to its depth (the cap, or a deep read) did not reach back
    that far, SCHEDULER_SOLD_DEEP_EVERY − 1 reads of the newest page, then one deep read."""
    limits = caps(settings)
    until = crawled_at - MAX_AGE_HOURS * HOUR - LATE_INDEXING
    life = f"back to listings created {MAX_AGE_HOURS} h before the last crawl (a listing's life)"
    every, deep = settings.scheduler_sold_deep_every, deep_sold_pages(settings)
    if every > 1 and last is not None and last.made_at is not None:
        if last.sold_shallow:
            shallow = last.sold_shallow + 1
        else:  # this crawl read as deep as it was planned to: did it reach back a listing's life?
            shallow = 1 if sold_outran(items, ended, last) else 0
        if shallow and shallow < every:
            return SearchPlan(1, until, f"the newest page: the search outruns {limits.sold.pages} pages, so it is "
                                        f"read {deep} deep every {every} crawls"), shallow
        if shallow:
            return SearchPlan(deep, until, f"{life}: {deep} pages, as it outruns {limits.sold.pages}"), 0
    deeper = min(spare_pages, spare_sold_pages(settings))
    if deeper > limits.sold.pages:  # a search that reaches back a listing's life sooner stops there
        return SearchPlan(deeper, until, f"{life}, up to {deeper} pages the request budget has to spare"), 0
    return SearchPlan(limits.sold.pages, until, life), 0


class SearchPages(Protocol):
    """One search of a crawl as its result reports it (``processing.SearchTotal``)."""

    @property
    def status(self) -> str: ...

    @property
    def pages_read(self) -> int: ...


def crawl_pages(search: Sequence[SearchPages], ended: Mapping[str, bool], sold_cap: int, outran: bool) -> float:
    """The requests a crawl like this one spends whatever its interval (``lib.scheduling.budget_plan``): every page
    of a search read whole or back to its plan's depth; a sold search that ``outran`` its pages, ``sold_cap`` (the
    cap a crawl on average, over the deep reads' cycle too); the first page of an on-sale search read back to the
    last crawl (its other pages follow the listings created since: the planner counts them from the flow). A result
    that reported no searches: a page of each."""
    if not search:
        return 2.0
    return float(sum((1 if not ended.get(ON_SALE) else max(1, s.pages_read)) if s.status == ON_SALE
                     else (sold_cap if outran else max(1, s.pages_read)) for s in search))


#: How much of a rise in the flow the next plan takes at once (all of it: a burst steps the crawls up at once), and
#: of a fall (a part: one quiet crawl does not slow a busy IP down).
RISE, FALL = 1.0, 0.3


def new_flow(crawled_at: float, items: Sequence[CrawlItem], whole: bool, last: CrawlPlan | None) -> float | None:
    """The IP's new listings an hour: those created since the last plan's crawl (and on the pages: back to the
    on-sale reach, unless the search was read ``whole``) over that span, taken into the last plan's flow at once
    when it rose, by ``FALL`` when it fell. None before a second crawl."""
    if last is None or last.made_at is None or last.made_at >= crawled_at:
        return last.flow if last is not None else None
    since = _read_since(items, whole, last.made_at)
    if since >= crawled_at:
        return last.flow
    new = sum(1 for i in items if i.created is not None and since < i.created <= crawled_at)
    rate = new * 3600.0 / (crawled_at - since)
    if last.flow is None:
        return round(rate, 3)
    share = RISE if rate > last.flow else FALL
    return round(last.flow + share * (rate - last.flow), 3)


def _read_since(items: Sequence[CrawlItem], whole: bool, previous: float) -> float:
    """How far back a crawl's on-sale pages saw the listings created since the ``previous`` crawl: all of them
    (``previous``) when the search was read whole or its pages reached past it, else its oldest listing's time."""
    on_sale = [i.created for i in items if i.status == ON_SALE and i.created is not None]
    return previous if whole or not on_sale else max(previous, min(on_sale))


def reached_share(crawled_at: float, items: Sequence[CrawlItem], whole: bool, last: CrawlPlan | None) -> float:
    """The share of the time since the IP's previous crawl whose new listings this crawl's on-sale pages reached
    (1: back to the previous crawl, or nothing to compare with)."""
    if last is None or last.made_at is None or last.made_at >= crawled_at:
        return 1.0
    return (crawled_at - _read_since(items, whole, last.made_at)) / (crawled_at - last.made_at)


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
