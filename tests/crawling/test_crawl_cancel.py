"""A cancelled crawl stops: in real headless Chromium against the simulator, a crawl cancelled in the middle of a
page ends cancelled at once, leaves no tab and no browser process behind, and the next crawl reads its pages."""

from __future__ import annotations

import asyncio
import os

import pytest

from lib.core.settings import load_settings
from lib.crawling.crawl import Crawler
from lib.crawling.driver import Browser, DriverError

from ..helpers import children, descendants, simulator_crawl_env, wait_until

KEYWORD = "鬼滅の刃"
#: The bound on the cancelled crawl's end: it ends at once, the bound only keeps a broken crawl from hanging.
CANCEL_BOUND = 1.0
#: How long the simulator holds each search API answer while the crawl is cancelled: far past the bound.
HELD_MS = 20_000


@pytest.fixture
def crawl_settings(env, sim, chromium):
    return load_settings(simulator_crawl_env(env, sim, chromium, SCHEDULER_PAGES_ON_SALE="1",
                                             SCHEDULER_PAGES_SOLD="1", CRAWL_PAGE_TIMEOUT="30s"))


def browsers(before: set[int]) -> list[int]:
    """The browser processes this test process started (Chromium's zygotes and renderers are theirs): its children
    but those it had ``before`` (an earlier test of the same worker may leave a child, a zombie until reaped)."""
    return [pid for pid in children(os.getpid()) if pid not in before]


def started_since(before: set[int]) -> set[int]:
    """The processes below this one that were not there ``before``."""
    return set(descendants(os.getpid())) - before


@pytest.mark.parametrize("held", ["on_sale", "sold"])
def test_a_crawl_cancelled_mid_page_stops_and_leaves_nothing_behind(crawl_settings, sim, held):
    """Cancelled while a page waits for its API answer: the first page (which also scrolls while it loads, a
    child task of the page) or the next one."""

    before = set(descendants(os.getpid()))

    async def go() -> None:
        crawler = Crawler.from_settings(crawl_settings)
        try:
            first = await crawler.crawl(1, KEYWORD, "t-before")  # the browser up, its tab kept for the next crawl
            assert first["pages_crawled"] == 2
            browser = crawler.manager.browser
            assert browser is not None
            pages_between_crawls = browser.page_count()
            assert browsers(before) == [browser.pid]
            loads, api_calls = sim.counters["pages"], sim.counters["api"]
            if held == "on_sale":
                sim.set_mode("slow", delay_ms=HELD_MS)
            crawl = asyncio.ensure_future(crawler.crawl(1, KEYWORD, "t-cancelled"))
            if held == "sold":  # the on-sale page loaded as usual: the next load (the sold page) is held
                await wait_until(lambda: sim.counters["pages"] > loads, what="the on-sale page's load")
                sim.set_mode("slow", delay_ms=HELD_MS)
                await wait_until(lambda: sim.counters["pages"] > loads + 1, what="the sold page's load")
                api_calls = sim.counters["api"]
            await wait_until(lambda: sim.counters["api"] > api_calls, what="the page's API answer held")
            assert not crawl.done()
            crawl.cancel()
            await asyncio.wait({crawl}, timeout=CANCEL_BOUND)
            assert crawl.done() and crawl.cancelled()
            sim.set_mode("normal")
            # the cut-short page's tab is closed, not kept; no other browser was started
            await wait_until(lambda: browser.page_count() == pages_between_crawls - 1, timeout=5,
                             what="the cancelled crawl's tab to close")
            assert crawler.manager.browser is browser and browsers(before) == [browser.pid]
            after = await crawler.crawl(1, KEYWORD, "t-after")
            assert after["pages_crawled"] == 2 and after["errors"] == {}
            assert len(after["items"]) == len(sim.truth(KEYWORD, {"on_sale"}, 1)) + len(
                sim.truth(KEYWORD, {"sold_out", "trading"}, 1))
        finally:
            sim.set_mode("normal")
            await crawler.close()
        await wait_until(lambda: not started_since(before), timeout=10, what="every Chromium process to exit")

    asyncio.run(go())


@pytest.mark.parametrize("given_up", ["past_its_time", "cancelled", "cancelled_tab"])
def test_a_page_given_up_while_it_opens_is_closed_once_open(chromium, given_up):
    """An opening of a page that outlived its time, or whose caller was cancelled, goes on in Chromium: the page
    it opens is closed (pages are opened in order: once a later page is open, the given-up one was too)."""

    async def go() -> None:
        browser = await Browser.launch(chromium, no_sandbox=True)
        try:
            before = browser.page_count()
            if given_up == "past_its_time":
                with pytest.raises(DriverError):
                    await browser.bare_page(timeout=0)
            else:  # a bare page, or a crawler's tab (cancelled while its page opens)
                opening = asyncio.ensure_future(browser.bare_page() if given_up == "cancelled" else
                                                browser.new_tab(r"$^", block_resources=True))
                await asyncio.sleep(0)  # the opening is under way
                opening.cancel()
                await asyncio.wait({opening}, timeout=CANCEL_BOUND)
                assert opening.cancelled()
            await browser.bare_page()
            await wait_until(lambda: browser.page_count() == before + 1, timeout=10,
                             what="only the page still wanted to be open")
        finally:
            await browser.close()

    asyncio.run(go())

