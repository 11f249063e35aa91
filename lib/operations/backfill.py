"""The demo's history: the past hours of each simulated market, crawled as the crawler would have crawled them and
applied through the real result path, in seconds instead of days.

Heat needs 24 tracked hours before its window (docs/concepts/measures.md, "Insufficient"), and time to sell
needs sales among the listings created in the window: a demo of a few simulated hours has neither. Its history
is crawled here, before the live phase: for each IP, a crawl every ``step`` seconds up to the live start, each
reading the simulator's search API answers at the crawl's time (``MarketSimulator.answer_for``: the listings the
browser would have been served then), turned into the crawl result message by the crawler's own code
(``page_from_api``, ``add_page``, ``after_page``, the IP's page plan) and applied by ``ResultProcessor`` (what the
``process_result`` actor runs), in time order, on a clock standing at each crawl's time. The simulator records
those pages like the live ones, so ``tests/test_demo.py`` checks the history's hours against the simulator's
truth too.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import redis

from lib.core.settings import Settings
from lib.operations.demo_clock import DemoClock

if TYPE_CHECKING:
    from lib.crawling.page_plan import CrawlPlan
    from lib.standins.simulator.server import MarketSimulator


def past_crawl(sim: MarketSimulator, keyword: str, ip_id: int, task_id: str, at: float,
               settings: Settings, aliases: Sequence[str] = (), plan: CrawlPlan | None = None) -> dict[str, Any]:
    """The crawl result message (``process_result``'s arguments) of a crawl of ``keyword`` at ``at``: the pages the
    crawler reads (``plan``: the IP's page plan, None: the caps) as the simulator's API answered them at that time,
    the listings kept and the paging stopped as the crawler does (``lib.crawling.crawl.after_page``)."""
    from lib.crawling.crawl import ENDED, SEARCHES, add_page, after_page
    from lib.crawling.driver import ApiResponse
    from lib.crawling.item_read import answered_state
    from lib.crawling.listings import seller_key
    from lib.crawling.page_fetch import page_from_api
    from lib.crawling.page_plan import caps
    from lib.segments.relevance import title_matcher

    matcher = title_matcher(keyword, aliases)
    items: dict[str, dict[str, Any]] = {}
    search: dict[str, dict[str, Any]] = {}
    relevance: dict[str, dict[str, int]] = {}
    pages = 0
    plan = plan or caps(settings)
    for status_param, label in SEARCHES:
        depth = plan.search(label)
        total: dict[str, int | None] = {"num_found": None, "pages": 0, "items": 0}
        read: set[str] = set()
        missed: set[str] = set()
        for number in range(1, depth.pages + 1):
            answer = sim.answer_for(keyword, status_param, number, at)
            result = page_from_api(ApiResponse(200, {}, answer), settings.mercari_base_url, label,
                                   seller_key(settings))
            assert result is not None  # the simulator's answer in normal mode is always readable
            on_page = add_page(result, items, total, read, matcher, missed)
            pages += 1
            depth = depth.deepened(on_page.items)
            end = after_page(result, on_page, depth)
            if end is not None:
                total["ended"] = end == ENDED
                break
        total.setdefault("ended", False)
        total["items"] = len(read)
        search[label] = total
        relevance[label] = {"matched": len(read), "missed": len(missed)}
    # the listings the plan checks, as their pages' item API answered (the realistic market's)
    checks = {} if sim.realistic is None else {
        source_id: answered_state(*sim.realistic.item(source_id, at)) for source_id in plan.checks}
    return {"ip_id": ip_id, "task_id": task_id, "crawled_at": at, "items": list(items.values()),
            "pages_crawled": pages, "errors": {}, "search": search, "relevance": relevance, "checks": checks}


def crawl_times(end: float, hours: float, step: float, index: int, count: int) -> list[float]:
    """The history's crawl times of the ``index``-th of ``count`` IPs, oldest first: every ``step`` seconds over
    the ``hours`` before ``end``, the last one ``step`` before it (so each IP is due as the live phase starts),
    the IPs spread over a step as the scheduler spreads them."""
    offset = step * index / max(count, 1)
    first = end - hours * 3600.0
    times = []
    at = end - step - offset
    while at >= first:
        times.append(at)
        at -= step
    return times[::-1]


def backfill(sim: MarketSimulator, settings: Settings, client: redis.Redis, ips: Sequence[tuple[int, str]],
             end: float, hours: float, step: float, clock: DemoClock,
             progress: Callable[[int, int], None] | None = None) -> int:
    """Crawl and apply ``hours`` of history before ``end`` for each (IP id, keyword), all in time order, with
    ``clock`` (the process's clock) standing at each crawl's time while it is applied: what the result path reads
    of the time (applied_at, alerts, the dashboard's windows meanwhile) is the crawl's. Returns how many crawls
    were applied; ``progress(done, total)`` is told now and then."""
    from lib.market.processing import CrawlResult, ResultProcessor

    plan = [(ip_id, keyword, at) for index, (ip_id, keyword) in enumerate(ips)
            for at in crawl_times(end, hours, step, index, len(ips))]
    plan.sort(key=lambda p: p[2])  # in time order across IPs too: the history reads like the live phase
    from lib.crawling.page_plan import plan_for

    processor = ResultProcessor(settings, client, clock)
    last_told = time.monotonic()
    for done, (ip_id, keyword, at) in enumerate(plan, start=1):
        clock.set(at)
        message = past_crawl(sim, keyword, ip_id, f"history-{ip_id}-{int(at)}", at, settings,
                             plan=plan_for(client, ip_id, settings))
        processor.apply(CrawlResult.parse(**message))
        if progress is not None and (time.monotonic() - last_told >= 5 or done == len(plan)):
            progress(done, len(plan))
            last_told = time.monotonic()
    return len(plan)
