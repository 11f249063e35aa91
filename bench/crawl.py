"""The crawler against the local simulator: seconds per crawl (5 + 5 and 1 + 1 pages) on the API path and on
the DOM-only path, pages per second and peak memory of the browser; the floor is a bare fetch of the same
pages in the same run. Also: seconds to class a soft block, against the page timeout it no longer waits for."""

from __future__ import annotations

import asyncio
import os
import tempfile
import time

from lib.core.settings import load_settings
from lib.crawling.crawl import Crawler
from lib.crawling.driver import Browser, find_chromium
from lib.crawling.page_fetch import ErrorKind, PageError, fetch_page, search_url
from lib.standins.simulator import MarketSimulator

from .common import report

KEYWORD = "呪術廻戦"


def tree_rss_mb(pid: int | None) -> float:
    """Resident memory of a process and its descendants, in MB."""
    if pid is None:
        return 0.0
    total, todo = 0, [pid]
    while todo:
        current = todo.pop()
        try:
            with open(f"/proc/{current}/status") as f:
                total += next(int(line.split()[1]) for line in f if line.startswith("VmRSS"))
        except (FileNotFoundError, StopIteration):
            continue
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    with open(f"/proc/{entry}/stat") as f:
                        if int(f.read().rsplit(")", 1)[1].split()[1]) == current:
                            todo.append(int(entry))
                except (FileNotFoundError, IndexError):
                    continue
    return total / 1024


async def floor(sim: MarketSimulator, chromium: str, pages: int) -> float:
    """A bare fetch of the crawl's pages: one tab, navigate, wait for an item link, read the text."""
    browser = await Browser.launch(chromium, no_sandbox=os.geteuid() == 0)
    try:
        tab = await browser.new_tab(r"$^", block_resources=False)
        start = time.perf_counter()
        for status in ("on_sale", "sold_out|trading"):
            for n in range(1, pages + 1):
                await tab.goto(search_url(sim.url, KEYWORD, status, n), 30)
                await tab.wait_for("() => document.querySelector('li[data-testid=\"item-cell\"] a')", 30)
                await tab.evaluate("() => document.body.innerText.length")
        return time.perf_counter() - start
    finally:
        await browser.close()


async def crawls(settings, rounds: int) -> tuple[float, float]:
    crawler = Crawler.from_settings(settings)
    peak = 0.0
    try:
        await crawler.crawl(1, KEYWORD, "warm-up")
        times = []
        for k in range(rounds):
            start = time.perf_counter()
            await crawler.crawl(1, KEYWORD, f"b{k}")
            times.append(time.perf_counter() - start)
            peak = max(peak, tree_rss_mb(crawler.manager.browser_pid))
        return min(times), peak
    finally:
        await crawler.close()


async def soft_block(sim: MarketSimulator, chromium: str, timeout: float) -> float:
    """Seconds from navigation to a soft block classed (the page timeout is ``timeout``)."""
    browser = await Browser.launch(chromium, no_sandbox=os.geteuid() == 0)
    try:
        tab = await browser.new_tab(r"/v2/entities:search", block_resources=True)
        sim.set_mode("soft_block", count=1)
        start = time.perf_counter()
        try:
            await fetch_page(tab, search_url(sim.url, KEYWORD, "on_sale", 1), sim.url, timeout=timeout,
                             first_page=False)
        except PageError as e:
            assert e.kind is ErrorKind.BLOCKED, e
        else:
            raise AssertionError("the soft block was not noticed")
        return time.perf_counter() - start
    finally:
        sim.set_mode("normal")
        await browser.close()


#: The DOM-only path: a search API name that no longer matches (as when the site renames it).
RENAMED_API = r"/v9/renamed:search"


def run(rounds: int = 3) -> None:
    print("crawl: one crawl of N on-sale + N sold pages against the simulator (floor: a bare fetch of the same "
          "pages in one tab: navigate, wait for an item link, read the text)")
    sim = MarketSimulator(speed=0).start()
    chromium = find_chromium(None)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            base = {"DATA_DIR": tmp, "MERCARI_BASE_URL": sim.url, "CHROMIUM_PATH": chromium,
                    "CHROMIUM_NO_SANDBOX": "true" if os.geteuid() == 0 else "false"}
            for pages in (5, 1):
                raw = min(asyncio.run(floor(sim, chromium, pages)) for _ in range(rounds))
                for path, extra in (("API path", {}), ("DOM-only path", {"MERCARI_API_PATTERN": RENAMED_API})):
                    settings = load_settings({**base, **extra, "SCHEDULER_PAGES_ON_SALE": str(pages),
                                              "SCHEDULER_PAGES_SOLD": str(pages)})
                    seconds, peak = asyncio.run(crawls(settings, rounds))
                    report(f"seconds per crawl, {pages}+{pages} pages, {path}", seconds, raw)
                    print(f"  pages/s {2 * pages / seconds:.1f} (floor {2 * pages / raw:.1f}); "
                          f"browser peak memory {peak:.0f} MB")
            timeout = 30.0
            seconds = min(asyncio.run(soft_block(sim, chromium, timeout)) for _ in range(rounds))
            report("seconds to class a soft block (page timeout 30 s)", seconds, timeout)
    finally:
        sim.stop()


def main() -> None:
    run()


if __name__ == "__main__":
    main()
