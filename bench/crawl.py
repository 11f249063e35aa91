"""The crawler against the local simulator: seconds per crawl (5 + 5 pages) and pages per second, with and
without resource blocking, and peak memory of the browser; the floor is a bare navigate-and-read of the
same pages in the same run."""

from __future__ import annotations

import asyncio
import os
import tempfile
import time

from lib.core.settings import load_settings
from lib.crawling.crawl import Crawler
from lib.crawling.driver import Browser, find_chromium
from lib.crawling.page_fetch import search_url
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


async def floor(sim: MarketSimulator, chromium: str) -> float:
    browser = await Browser.launch(chromium, no_sandbox=os.geteuid() == 0)
    try:
        tab = await browser.new_tab(r"$^", block_resources=False)
        start = time.perf_counter()
        for status in ("on_sale", "sold_out|trading"):
            for n in range(1, 6):
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


def run(rounds: int = 3) -> None:
    print("crawl_ip: one crawl = 5 on-sale + 5 sold pages against the simulator (floor: bare navigate-and-read)")
    sim = MarketSimulator(speed=0).start()
    chromium = find_chromium(None)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            base = {"DATA_DIR": tmp, "MERCARI_BASE_URL": sim.url, "CHROMIUM_PATH": chromium,
                    "CHROMIUM_NO_SANDBOX": "true" if os.geteuid() == 0 else "false"}
            raw = min(asyncio.run(floor(sim, chromium)) for _ in range(rounds))
            for blocking in ("true", "false"):
                settings = load_settings({**base, "CRAWL_BLOCK_RESOURCES": blocking})
                seconds, peak = asyncio.run(crawls(settings, rounds))
                report(f"seconds per crawl, resource blocking {blocking}", seconds, raw)
                print(f"  pages/s {10 / seconds:.1f} (floor {10 / raw:.1f}); browser peak memory {peak:.0f} MB")
    finally:
        sim.stop()


def main() -> None:
    run()


if __name__ == "__main__":
    main()
