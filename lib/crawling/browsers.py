"""One browser per crawler process, reused across crawls, restarted by draining (docs/concepts/crawling.md).

A draining restart stops handing out the old browser, starts the new one
and switches to it at once, lets the old one's open pages finish (up to
``drain_timeout``), then closes it. It happens on a proxy switch, after
``max_crawls`` crawls, and when the browser died; a page in flight never
loses its browser to a restart.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from lib.core.redaction import redact_url
from lib.crawling.driver import CALL_TIMEOUT, Browser, DriverError, Tab
from lib.crawling.waits import within

logger = logging.getLogger(__name__)

Launcher = Callable[[str | None], Awaitable[Browser]]


class _Slot:
    def __init__(self, browser: Browser) -> None:
        self.browser = browser
        self.dead = False  # set when using it failed in a way only a dead browser fails
        self.open_pages = 0
        self.idle = asyncio.Event()
        self.idle.set()


class BrowserManager:
    def __init__(self, launch: Launcher, *, api_pattern: str, block_resources: bool, max_pages: int,
                 max_crawls: int, drain_timeout: float = 60.0, proxy: str | None = None,
                 call_timeout: float = CALL_TIMEOUT) -> None:
        self._launch = launch
        self.api_pattern = api_pattern
        self.block_resources = block_resources
        self.max_crawls = max_crawls
        self.drain_timeout = drain_timeout
        self.proxy = proxy
        self.call_timeout = call_timeout  # the bound of each CDP call of its tabs (the page timeout)
        self._pages = asyncio.Semaphore(max_pages)
        self._current: _Slot | None = None
        self._switch = asyncio.Lock()
        self._crawls = 0
        self.restarts = 0
        self._draining: set[asyncio.Task[None]] = set()

    async def _slot(self) -> _Slot:
        async with self._switch:
            if self._current is None or self._current.dead or not self._current.browser.alive():
                if self._current is not None:
                    logger.warning("browser (pid %s) died: starting a new one", self._current.browser.pid)
                    self._retire(self._current, wait=False)
                self._current = _Slot(await self._launch(self.proxy))
                logger.info("browser started (pid %s, proxy %s)", self._current.browser.pid,
                            redact_url(self.proxy) if self.proxy else "none")
            return self._current

    @asynccontextmanager
    async def tab(self) -> AsyncIterator[Tab]:
        """A fresh page on the current browser, within the open-pages limit."""
        async with self._pages:
            slot = await self._slot()
            slot.open_pages += 1
            slot.idle.clear()
            tab = None
            try:
                try:
                    tab = await slot.browser.new_tab(self.api_pattern, self.block_resources, self.call_timeout)
                except DriverError:
                    slot.dead = True  # the next page gets a new browser
                    raise
                yield tab
            finally:
                try:
                    if tab is not None:
                        await tab.close()
                finally:  # a close cut short by a cancellation still counts the page as closed
                    slot.open_pages -= 1
                    if slot.open_pages == 0:
                        slot.idle.set()

    async def crawl_finished(self) -> None:
        """Count a crawl; after ``max_crawls`` the browser is renewed (by draining)."""
        self._crawls += 1
        if self._crawls >= self.max_crawls:
            self._crawls = 0
            await self.restart("routine renewal", self.proxy)

    async def restart(self, reason: str, proxy: str | None) -> None:
        """Draining restart: new browser now, old one closed when its pages are done."""
        async with self._switch:
            old = self._current
            self.proxy = proxy
            self._current = _Slot(await self._launch(proxy))
            self.restarts += 1
            logger.info("browser restarted (%s): new pid %s, proxy %s", reason, self._current.browser.pid,
                        redact_url(proxy) if proxy else "none")
        if old is not None:
            self._retire(old, wait=True)

    def _retire(self, slot: _Slot, wait: bool) -> None:
        async def drain() -> None:
            if wait:
                try:
                    await within(slot.idle.wait(), self.drain_timeout)
                except asyncio.TimeoutError:
                    logger.warning("old browser still had %d open page(s) after %.0fs: closing it",
                                   slot.open_pages, self.drain_timeout)
            await slot.browser.close()

        task = asyncio.ensure_future(drain())
        self._draining.add(task)
        task.add_done_callback(self._draining.discard)

    async def close(self) -> None:
        for task in list(self._draining):
            await task
        if self._current is not None:
            await self._current.browser.close()
            self._current = None

    @property
    def browser(self) -> Browser | None:
        """The browser new tabs open in (None before the first)."""
        return self._current.browser if self._current else None

    @property
    def browser_pid(self) -> int | None:
        return self._current.browser.pid if self._current else None


__all__ = ["BrowserManager", "DriverError"]
