"""One crawl of one IP (docs/concepts/crawling.md): on-sale pages 1..n, then sold pages 1..m, items deduplicated.

Only the listings whose titles are about the IP (``lib.segments.relevance``: its keyword or an operator's alias)
are kept; the others are what the site pads its pages with past the real results, counted as misses. A search
stops paging at a page that holds listings and none of them matches, or at the page its plan reaches back to
(``lib.crawling.page_plan``), at the latest at its page cap.

The result message for ``process_result`` carries, besides the items, each search's totals (``search``: the site's
``numFound`` when the API said it, pages read, the IP's listings read as ``items``), how many listings of each
search matched the IP and how many did not (``relevance``: ``{status: {"matched": …, "missed": …}}``) and, for the
crawler process only (popped before sending), the drift record (``drift``: per page, the source read, items, matched
and missed listings, and anomalies).

After its searches, a crawl whose plan names listings to check (``CrawlPlan.checks``) reads each one's page
(``lib.crawling.item_read``), each read a request like a page; the result carries their states (``checks``: id →
state), for the worker to tell relists from other goods.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterator
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any

import redis

from lib.core.clock import get_clock
from lib.core.recorders import observe_rate_wait, observe_tab_recovery
from lib.core.settings import Settings
from lib.crawling.browsers import BrowserManager
from lib.crawling.driver import Browser, DriverError, RenderingStopped, Tab, find_chromium
from lib.crawling.item_read import item_url, read_item
from lib.crawling.listings import deployment_seller_key, seller_key
from lib.crawling.page_fetch import (
    API_GRACE,
    API_GRACE_AFTER_MISS,
    ErrorKind,
    PageError,
    PageResult,
    TabStalled,
    fetch_page,
    search_url,
)
from lib.crawling.page_plan import CrawlPlan, SearchPlan, caps
from lib.crawling.proxies import ProxyRotator
from lib.crawling.rate_limit import CrawlRateLimit, NoTurn
from lib.crawling.recovery import BRING_TO_FRONT, BROWSER_RESTART, NEW_TAB, STEPS, RecoveryLog
from lib.crawling.selectors import ON_SALE_PARAM, SOLD_PARAM
from lib.segments.relevance import Relevance, TitleMatcher, title_matcher

logger = logging.getLogger(__name__)


#: The longest ``Retry-After`` the crawler sleeps through inside a crawl; a longer one ends the crawl (its
#: remaining pages are not requested) and the next crawl comes after the back-off the scheduler gives it.
RETRY_AFTER_MAX = 120.0


#: A crawl's searches, in order: (the search URL's status parameter, the items' status).
SEARCHES = ((ON_SALE_PARAM, "on_sale"), (SOLD_PARAM, "sold"))


class CrawlFailed(RuntimeError):
    """No page of the crawl could be read: the message is retried with backoff."""

    def __init__(self, errors: dict[str, str]) -> None:
        super().__init__(f"every page failed: {errors}")
        self.errors = errors


class Crawler:
    def __init__(self, settings: Settings, manager: BrowserManager, rotator: ProxyRotator,
                 rate_limit: CrawlRateLimit | None = None,
                 on_recovery: Callable[[str], None] | None = None) -> None:
        self.settings = settings
        self.on_recovery = on_recovery  # told each tab recovery step taken (``lib.crawling.recovery``)
        self.manager = manager
        self.rotator = rotator
        self._idle_tab: _CrawlTab | None = None  # the last crawl's tab, for the next one
        #: Whether the last page that rendered items came without a captured API response: the next pages (of
        #: this crawl and the next ones) give it only ``API_GRACE_AFTER_MISS``, until a page is read from the API.
        self._api_missed = False
        self.rate_limit = rate_limit or CrawlRateLimit.from_settings(settings, observe=observe_rate_wait)
        self._sellers: bytes | None = seller_key(settings)  # SELLER_HASH_SECRET, else the deployment's own key

    def _seller_key(self) -> bytes | None:
        """The key of the sellers' hash: SELLER_HASH_SECRET, else the deployment's key from the state store (read
        once). With the store unreachable the page keeps no seller (its relists count as new goods)."""
        if self._sellers is None:
            from lib.core.redis_client import state_redis

            try:
                self._sellers = deployment_seller_key(state_redis(self.settings))
            except redis.RedisError as e:
                logger.warning("crawl: no key for the sellers' hash (%s): this page keeps no seller", e)
        return self._sellers

    @classmethod
    def from_settings(cls, settings: Settings) -> Crawler:
        chromium = find_chromium(settings.chromium_path)

        async def launch(proxy: str | None) -> Browser:
            # CRAWL_BLOCK_RESOURCES: images are not loaded at all (the Fetch domain drops the rest)
            return await Browser.launch(chromium, no_sandbox=settings.chromium_no_sandbox, proxy=proxy,
                                        images=not settings.crawl_block_resources)

        rotator = ProxyRotator(settings.proxy_urls, switch_after=settings.proxy_switch_after,
                               cooldown=settings.proxy_cooldown, check_url=settings.mercari_base_url)
        manager = BrowserManager(launch, api_pattern=settings.mercari_api_pattern,
                                 block_resources=settings.crawl_block_resources, max_pages=settings.crawl_max_pages,
                                 max_crawls=settings.crawl_browser_max_crawls, proxy=rotator.current,
                                 call_timeout=settings.crawl_page_timeout)
        return cls(settings, manager, rotator, on_recovery=_recovery_tally(settings))

    async def crawl(self, ip_id: int, keyword: str, task_id: str,
                    aliases: tuple[str, ...] | list[str] = (), plan: CrawlPlan | None = None) -> dict[str, Any]:
        """The crawl result message for ``process_result`` (plus ``drift``, for the crawler process); ``aliases``:
        the other names of the IP its listings' titles may use; ``plan``: how deep each search reads
        (``lib.crawling.page_plan``; None: to the page caps)."""
        matcher = title_matcher(keyword, aliases)
        started = time.time()
        crawled_at = get_clock().now()
        items: dict[str, dict[str, Any]] = {}
        errors: dict[str, str] = {}
        search: dict[str, dict[str, Any]] = {}
        page_records: list[dict[str, Any]] = []
        relevance: dict[str, dict[str, int]] = {}
        checks: dict[str, str] = {}
        plan = plan or caps(self.settings)
        tabs, self._idle_tab = self._idle_tab or _CrawlTab(self.manager), None
        cancelled = False
        try:
            stop = await self._pages(plan, matcher, ip_id, task_id, tabs, items, errors, search, page_records,
                                     relevance)
            if plan.checks and not stop and page_records:
                await self._checks(plan.checks, tabs, f"IP {ip_id} task {task_id}", checks, errors)
            await self.manager.crawl_finished()
        except asyncio.CancelledError:
            cancelled = True  # a page cut short: its tab is closed, not kept (docs/concepts/crawling.md)
            raise
        finally:
            if tabs.current and self._idle_tab is None and not cancelled:
                self._idle_tab = tabs  # kept for the next crawl (renewed there if the browser was restarted)
            else:
                await tabs.close()
        pages = len(page_records)
        if pages == 0:
            raise CrawlFailed(errors)
        duration = round(time.time() - started, 3)
        return {"ip_id": ip_id, "task_id": task_id, "crawled_at": crawled_at, "items": list(items.values()),
                "pages_crawled": pages, "errors": errors, "duration": duration, "search": search,
                "relevance": relevance, "checks": checks,
                "drift": {"ip_id": ip_id, "task_id": task_id, "at": crawled_at, "pages": page_records,
                          "errors": errors}}

    async def _pages(self, plan: CrawlPlan, matcher: TitleMatcher, ip_id: int,
                     task_id: str, tabs: _CrawlTab, items: dict[str, dict[str, Any]], errors: dict[str, str],
                     search: dict[str, dict[str, Any]], page_records: list[dict[str, Any]],
                     relevance: dict[str, dict[str, int]]) -> bool:
        """Read the plan's searches; True when the crawl must stop (no turn left, or the site asks for a wait too
        long to sit through)."""
        base = self.settings.mercari_base_url
        keyword = matcher.keyword
        stop = False
        for status_param, label in SEARCHES:
            depth = plan.search(label)
            total: dict[str, int | None] = {"num_found": None, "pages": 0, "items": 0}
            read: set[str] = set()
            missed: set[str] = set()
            ended = False  # the search ended on the pages read: no next page, or past its real results
            for number in range(1, depth.pages + 1):
                if stop:
                    break
                url = search_url(base, keyword, status_param, number)
                try:
                    result = await self._page(tabs, url, number, label, f"IP {ip_id} task {task_id}")
                except PageError as e:
                    await tabs.drop()  # the next page starts on a fresh tab
                    errors[f"{label}:{number}"] = e.kind.value
                    logger.warning("IP %s task %s: %s page %d failed (%s)", ip_id, task_id, label, number, e)
                    if e.kind is ErrorKind.THROTTLED:
                        await self._throttled()
                    stop = await self._after_page(e.kind, e.retry_after)
                    continue
                except NoTurn as e:  # the next page would wait as long: the crawl ends with what it read
                    errors[f"{label}:{number}"] = ErrorKind.RATE_LIMITED.value
                    logger.warning("IP %s task %s: %s page %d not loaded: %s", ip_id, task_id, label, number, e)
                    stop = True
                    continue
                except DriverError as e:
                    await tabs.drop()
                    errors[f"{label}:{number}"] = ErrorKind.UNKNOWN.value
                    logger.warning("IP %s task %s: browser trouble on %s page %d: %s", ip_id, task_id, label,
                                   number, e)
                    continue
                await self._after_page(None)
                if result.source == "api" or result.anomalies.get("api_missing"):
                    self._api_missed = result.source != "api"
                on_page = add_page(result, items, total, read, matcher, missed)
                page_records.append(_page_record(label, number, result, on_page))
                depth = depth.deepened(on_page.items)
                end = after_page(result, on_page, depth)
                if end == ENDED:
                    if result.has_next:
                        logger.info("IP %s task %s: %s page %d holds no listing of the IP; the search stops there",
                                    ip_id, task_id, label, number)
                    ended = True
                    break
                if end == REACHED:
                    logger.debug("IP %s task %s: %s page %d reaches back as far as the plan needs (%s)", ip_id,
                                 task_id, label, number, depth.why)
                    break
            # a failed page was skipped: its listings were not seen, so the search was not seen whole
            total["ended"] = ended and not any(key.split(":", 1)[0] == label for key in errors)
            total["items"] = len(read)
            search[label] = total
            relevance[label] = {"matched": len(read), "missed": len(missed)}
        return stop

    async def _checks(self, source_ids: tuple[str, ...], tabs: _CrawlTab, who: str, checks: dict[str, str],
                      errors: dict[str, str]) -> None:
        """Read each listing's state into ``checks``; one that fails is left out (``errors["check:<id>"]``), and
        the reads end where a page's failure would end the crawl."""
        base, timeout = self.settings.mercari_base_url, self.settings.crawl_page_timeout
        for source_id in source_ids:
            try:
                tab = await tabs.get()
                await self.rate_limit.wait_for_turn(self.rotator.current)
                checks[source_id] = await read_item(tab, item_url(base, source_id), timeout)
            except PageError as e:
                await tabs.drop()
                errors[f"check:{source_id}"] = e.kind.value
                logger.warning("%s: the check of listing %s failed (%s)", who, source_id, e)
                if e.kind is ErrorKind.THROTTLED:
                    await self._throttled()
                if await self._after_page(e.kind, e.retry_after):
                    return
                continue
            except NoTurn as e:
                errors[f"check:{source_id}"] = ErrorKind.RATE_LIMITED.value
                logger.warning("%s: listing %s not checked: %s", who, source_id, e)
                return
            except DriverError as e:
                await tabs.drop()
                errors[f"check:{source_id}"] = ErrorKind.UNKNOWN.value
                logger.warning("%s: browser trouble checking listing %s: %s", who, source_id, e)
                continue
            await self._after_page(None)

    async def _page(self, tabs: _CrawlTab, url: str, number: int, label: str, who: str) -> PageResult:
        """One page, read again after each recovery step while its tab stops rendering (``TabStalled``)."""
        steps = iter(STEPS)
        while True:
            tab = await tabs.get()
            # CRAWL_RATE_LIMIT, fleet-wide: the turn is taken once the browser is up, just before the load
            await self.rate_limit.wait_for_turn(self.rotator.current)
            try:
                # one cheap cross-check of the two sources per search: its first page
                return await fetch_page(tab, url, self.settings.mercari_base_url,
                                        timeout=self.settings.crawl_page_timeout,
                                        first_page=number == 1 and label == "on_sale",
                                        cross_check=number == 1, search_status=label,
                                        api_grace=API_GRACE_AFTER_MISS if self._api_missed else API_GRACE,
                                        seller_key=self._seller_key())
            except PageError as e:
                stalled = isinstance(e, TabStalled)
                # a page timeout in a tab that gives no frame (a navigation that never ends in a frozen tab):
                # the tab's fault, not the site's
                if not stalled and e.kind is ErrorKind.TIMEOUT and not await _renders(tab):
                    stalled = True
                if not stalled:
                    raise
                logger.warning("%s: %s page %d: the tab stopped rendering (%s)", who, label, number, e)
                if not await self._recover(steps, tab, tabs):
                    raise

    async def _recover(self, steps: Iterator[str], tab: Tab, tabs: _CrawlTab) -> bool:
        """Take the next recovery step that applies (``lib.crawling.recovery``); False when none is left."""
        for step in steps:
            self._count_recovery(step)
            if step == BRING_TO_FRONT:
                try:
                    await tab.bring_to_front()
                    # as the stall was told: a visible page whose clock runs gets a second probe (a starved
                    # renderer on a loaded machine misses one), a frozen one is told at once
                    await tab.check_rendering()
                    logger.info("the tab renders again, brought to the front")
                    return True
                except RenderingStopped:
                    pass
                except Exception as e:
                    logger.info("bringing the tab to the front failed: %s", e)
                logger.info("the tab still does not render at the front")
            elif step == NEW_TAB:
                await tabs.drop()  # the next ``tabs.get()`` opens a new tab
                logger.info("reading the page again in a new tab")
                return True
            elif step == BROWSER_RESTART:
                await tabs.drop()
                await self.manager.restart("a tab stopped rendering", self.manager.proxy)
                return True
        return False

    async def _throttled(self) -> None:
        """A 429 through the current address: its budget is cut for the whole fleet. A state store out of reach
        leaves it as it was (the page's own back-off still applies)."""
        try:
            await asyncio.to_thread(self.rate_limit.throttled, self.rotator.current)
        except redis.RedisError as e:
            logger.warning("could not cut the request budget after a 429: %s", e)

    def _count_recovery(self, step: str) -> None:
        if self.on_recovery is None:
            return
        try:
            self.on_recovery(step)
        except Exception as e:  # a tally must never cost a page
            logger.warning("could not count the tab recovery step %s: %s", step, e)

    async def _after_page(self, kind: ErrorKind | None, retry_after: float | None = None) -> bool:
        """Proxy rotation and back-off after a page; True when the crawl should stop (a Retry-After too long to
        wait through)."""
        switch_to = self.rotator.record(kind)
        if isinstance(switch_to, str):
            await self.manager.restart("proxy switch", switch_to)
        elif kind is not None:
            wait = self.rotator.backoff()
            if retry_after is not None and retry_after > RETRY_AFTER_MAX:
                logger.warning("the site asks for %.0fs before the next request: ending this crawl", retry_after)
                return True
            wait = max(wait, retry_after or 0.0)  # the site's Retry-After is honoured, never shortened
            if wait:
                logger.info("backing off %.1fs after %d failures in a row (Retry-After %s)", wait,
                            self.rotator.failures, retry_after)
                await asyncio.sleep(wait)
        return False

    async def close(self) -> None:
        if self._idle_tab is not None:
            await self._idle_tab.close()
            self._idle_tab = None
        await self.manager.close()


@dataclass(frozen=True)
class PageRead(Relevance):
    """What a page held: its listings about the IP and the others, the oldest ``created`` of the IP's (None: none,
    or a page read from the DOM, which shows no creation time), and the IP's listings themselves."""

    oldest: float | None = None
    items: tuple[dict[str, Any], ...] = ()


def add_page(result: PageResult, items: dict[str, dict[str, Any]], total: dict[str, int | None],
             read: set[str], matcher: TitleMatcher | None = None, missed: set[str] | None = None) -> PageRead:
    """A page read into its crawl: the crawl's ``items`` by id, its search's ``total`` (the site's count, pages
    read) and the ids the search ``read``; with a ``matcher``, only the listings whose titles match it, the others'
    ids going to ``missed``. Returns what the page held."""
    if result.num_found is not None:
        total["num_found"] = result.num_found
    total["pages"] = (total["pages"] or 0) + 1
    misses = 0
    mine: list[dict[str, Any]] = []
    oldest: float | None = None
    for item in result.items:
        if matcher is not None and not matcher.matches(str(item.get("title") or "")):
            misses += 1
            if missed is not None:
                missed.add(item["source_id"])
            continue
        mine.append(item)
        read.add(item["source_id"])
        created = item.get("created")
        if isinstance(created, (int, float)) and (oldest is None or created < oldest):
            oldest = float(created)
        # the same listing on an on-sale and a sold page: it sold while we were reading
        if item["source_id"] not in items or item["status"] == "sold":
            items[item["source_id"]] = item
    return PageRead(len(mine), misses, oldest, tuple(mine))


def past_real_results(result: PageResult, on_page: Relevance) -> bool:
    """Whether a search stops after this page: it held listings and none of them is the IP's, so the search's real
    results are behind and the next pages hold only the site's padding. An empty page says nothing (the site
    answers one now and then for no reason)."""
    return bool(result.items) and not on_page.matched


#: Why a search stopped after a page (``after_page``): its results ended on it, or it reached the plan's depth.
ENDED, REACHED = "ended", "reached"


def after_page(result: PageResult, on_page: PageRead, depth: SearchPlan) -> str | None:
    """Whether the search stops after this page (``ENDED``, ``REACHED``) or reads the next (None): the crawler's
    rule, which the demo's history and the benchmarks read their pages by too. ``depth``: the search's plan as the
    pages read so far deepened it (``SearchPlan.deepened``). The page cap is the caller's."""
    if not result.has_next or past_real_results(result, on_page):
        return ENDED
    return REACHED if depth.reached(on_page.oldest) else None


class _CrawlTab:
    """One tab for a crawl's pages, kept for the next crawl (opening a tab per page cost a fifth of a crawl),
    renewed after a failed page and when the browser was restarted (a proxy switch: the next page goes through
    the new proxy; a routine renewal: the old browser's drain is not held up)."""

    def __init__(self, manager: BrowserManager) -> None:
        self.manager = manager
        self._stack: AsyncExitStack | None = None
        self._tab: Tab | None = None
        self._generation = -1

    async def get(self) -> Tab:
        if self._tab is None or self._generation != self.manager.restarts:
            await self.drop()
            stack = AsyncExitStack()
            self._tab = await stack.enter_async_context(self.manager.tab())
            self._stack, self._generation = stack, self.manager.restarts
        return self._tab

    @property
    def current(self) -> bool:
        """Whether it holds a tab of the current browser."""
        return self._tab is not None and self._generation == self.manager.restarts

    async def drop(self) -> None:
        stack, self._stack, self._tab = self._stack, None, None
        if stack is not None:
            await stack.aclose()

    close = drop


async def _renders(tab: Tab) -> bool:
    try:
        return await tab.renders()
    except Exception:  # the tab is gone: not a tab that stopped rendering
        return True


def _recovery_tally(settings: Settings) -> Callable[[str], None]:
    """Counts each recovery step: the crawler's Prometheus counter and the fleet's tally in Redis."""
    from lib.core.redis_client import state_redis

    def tally(step: str) -> None:
        observe_tab_recovery(step)
        RecoveryLog(state_redis(settings)).record(step)

    return tally


def _page_record(status: str, number: int, result: PageResult, relevance: Relevance) -> dict[str, Any]:
    """A page's drift record: which source was read, its items (those about the IP and the others), whether it had
    a next page, its anomalies."""
    return {"status": status, "page": number, "source": result.source, "items": len(result.items),
            "matched": relevance.matched, "missed": relevance.missed,
            "has_next": result.has_next, "anomalies": dict(result.anomalies)}


_crawler: Crawler | None = None


def process_crawler(settings: Settings) -> Crawler:
    """The crawler of this process (one browser per crawler process, reused across crawls)."""
    global _crawler
    if _crawler is None:
        _crawler = Crawler.from_settings(settings)
    return _crawler
