"""One crawl of one IP (seed 000 §3.3): on-sale pages 1..N, then sold pages 1..M, items deduplicated."""

from __future__ import annotations

import asyncio
import logging
import time

from lib.core.clock import get_clock
from lib.core.settings import Settings
from lib.crawling.browsers import BrowserManager
from lib.crawling.driver import Browser, DriverError, find_chromium
from lib.crawling.page_fetch import ErrorKind, PageError, fetch_page, search_url
from lib.crawling.proxies import ProxyRotator
from lib.crawling.rate_limit import CrawlRateLimit
from lib.crawling.selectors import ON_SALE_PARAM, SOLD_PARAM
from lib.operations.metrics import observe_rate_wait

logger = logging.getLogger(__name__)


class CrawlFailed(RuntimeError):
    """No page of the crawl could be read: the message is retried with backoff."""

    def __init__(self, errors: dict[str, str]) -> None:
        super().__init__(f"every page failed: {errors}")
        self.errors = errors


class Crawler:
    def __init__(self, settings: Settings, manager: BrowserManager, rotator: ProxyRotator,
                 rate_limit: CrawlRateLimit | None = None) -> None:
        self.settings = settings
        self.manager = manager
        self.rotator = rotator
        self.rate_limit = rate_limit or CrawlRateLimit.from_settings(settings, observe=observe_rate_wait)

    @classmethod
    def from_settings(cls, settings: Settings) -> Crawler:
        chromium = find_chromium(settings.chromium_path)

        async def launch(proxy: str | None) -> Browser:
            return await Browser.launch(chromium, no_sandbox=settings.chromium_no_sandbox, proxy=proxy)

        rotator = ProxyRotator(settings.proxy_urls, switch_after=settings.proxy_switch_after,
                               cooldown=settings.proxy_cooldown, check_url=settings.mercari_base_url)
        manager = BrowserManager(launch, api_pattern=settings.mercari_api_pattern,
                                 block_resources=settings.crawl_block_resources, max_pages=settings.crawl_max_pages,
                                 max_crawls=settings.crawl_browser_max_crawls, proxy=rotator.current)
        return cls(settings, manager, rotator)

    async def crawl(self, ip_id: int, keyword: str, task_id: str) -> dict:
        """The crawl result message for ``process_result``."""
        started = time.time()
        crawled_at = get_clock().now()
        base = self.settings.mercari_base_url
        items: dict[str, dict] = {}
        errors: dict[str, str] = {}
        pages = 0
        plan = ((ON_SALE_PARAM, "on_sale", self.settings.scheduler_pages_on_sale),
                (SOLD_PARAM, "sold", self.settings.scheduler_pages_sold))
        for status_param, label, page_count in plan:
            for number in range(1, page_count + 1):
                url = search_url(base, keyword, status_param, number)
                try:
                    async with self.manager.tab() as tab:
                        # CRAWL_RATE_LIMIT, fleet-wide: the turn is taken once the browser is up, just before the load
                        await self.rate_limit.wait_for_turn(self.rotator.current)
                        result = await fetch_page(tab, url, base, timeout=self.settings.crawl_page_timeout,
                                                  first_page=number == 1 and label == "on_sale")
                except PageError as e:
                    errors[f"{label}:{number}"] = e.kind.value
                    logger.warning("IP %s task %s: %s page %d failed (%s)", ip_id, task_id, label, number, e)
                    await self._after_page(e.kind)
                    continue
                except DriverError as e:
                    errors[f"{label}:{number}"] = ErrorKind.UNKNOWN.value
                    logger.warning("IP %s task %s: browser trouble on %s page %d: %s", ip_id, task_id, label,
                                   number, e)
                    continue
                await self._after_page(None)
                pages += 1
                for item in result.items:
                    # the same listing on an on-sale and a sold page: it sold while we were reading
                    if item["source_id"] not in items or item["status"] == "sold":
                        items[item["source_id"]] = item
                if not result.has_next:
                    break
        await self.manager.crawl_finished()
        if pages == 0:
            raise CrawlFailed(errors)
        return {"ip_id": ip_id, "task_id": task_id, "crawled_at": crawled_at, "items": list(items.values()),
                "pages_crawled": pages, "errors": errors, "duration": round(time.time() - started, 3)}

    async def _after_page(self, kind: ErrorKind | None) -> None:
        switch_to = self.rotator.record(kind)
        if isinstance(switch_to, str):
            await self.manager.restart("proxy switch", switch_to)
        elif kind is not None:
            wait = self.rotator.backoff()
            if wait:
                logger.info("backing off %.0fs after %d failures in a row", wait, self.rotator.failures)
                await asyncio.sleep(wait)

    async def close(self) -> None:
        await self.manager.close()


_crawler: Crawler | None = None


def process_crawler(settings: Settings) -> Crawler:
    """The crawler of this process (one browser per crawler process, reused across crawls)."""
    global _crawler
    if _crawler is None:
        _crawler = Crawler.from_settings(settings)
    return _crawler
