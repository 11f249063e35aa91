"""The crawler against the local simulator: seconds per crawl (5 + 5 and 1 + 1 pages) on the API path and on
the DOM-only path, pages per second and peak memory of the browser; the floor is a bare fetch of the same
pages, timed in the same rounds (the machine's load changes from minute to minute: each round's crawls are
compared with that round's floor, and the median ratio is reported, with the worst round beside it: a round
that hangs on a page, as one once did for ten minutes, shows there and not in the median). Also: seconds to
class a soft block, against the page timeout it no longer waits for."""

from __future__ import annotations

import asyncio
import os
import statistics
import tempfile
import time
from dataclasses import dataclass, field

from lib.core.settings import Settings, load_settings
from lib.crawling.crawl import Crawler
from lib.crawling.driver import Browser, Tab, find_chromium
from lib.crawling.page_fetch import ErrorKind, PageError, fetch_page, search_url
from lib.standins.simulator import MarketSimulator

from .common import load_average, report

KEYWORD = "呪術廻戦"
SOFT_BLOCK_TIMEOUT = 30.0


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
        except (FileNotFoundError, ProcessLookupError, StopIteration):
            continue
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    with open(f"/proc/{entry}/stat") as f:
                        if int(f.read().rsplit(")", 1)[1].split()[1]) == current:
                            todo.append(int(entry))
                except (FileNotFoundError, ProcessLookupError, IndexError):  # a process gone meanwhile
                    continue
    return total / 1024


class Floor:
    """A bare fetch of a crawl's pages: one tab, navigate, wait for an item link (noticed at the DOM's next
    change, as the crawler notices it), read the text. No resource blocking, no API capture."""

    def __init__(self, sim: MarketSimulator, chromium: str, pages: int) -> None:
        self.sim, self.chromium, self.pages = sim, chromium, pages
        self.browser: Browser | None = None
        self.tab: Tab | None = None

    async def start(self) -> None:
        self.browser = await Browser.launch(self.chromium, no_sandbox=os.geteuid() == 0)
        self.tab = await self.browser.new_tab(r"$^", block_resources=False)

    async def fetch(self) -> float:
        assert self.tab is not None
        start = time.perf_counter()
        for status in ("on_sale", "sold_out|trading"):
            for n in range(1, self.pages + 1):
                await self.tab.goto(search_url(self.sim.url, KEYWORD, status, n), 30, read_text=False)
                await self.tab.wait_for("() => document.querySelector('li[data-testid=\"item-cell\"] a')", 30,
                                        polling="mutation")
                await self.tab.evaluate("() => document.body.innerText.length")
        return time.perf_counter() - start

    async def close(self) -> None:
        if self.browser is not None:
            await self.browser.close()


@dataclass
class Series:
    """One way of reading the pages, timed round by round."""

    label: str
    seconds: list[float] = field(default_factory=list)
    peak_mb: float = 0.0


async def interleaved(sim: MarketSimulator, chromium: str, settings: dict[str, Settings], pages: int,
                      rounds: int) -> tuple[Series, dict[str, Series]]:
    """The floor and each path, one after the other in every round (each warmed up first), so that each
    round's ratio compares times taken under the same load."""
    bare = Floor(sim, chromium, pages)
    crawlers = {label: Crawler.from_settings(s) for label, s in settings.items()}
    base, paths = Series("bare fetch"), {label: Series(label) for label in settings}
    try:
        await bare.start()
        await bare.fetch()
        for crawler in crawlers.values():
            await crawler.crawl(1, KEYWORD, "warm-up")
        for k in range(rounds):
            base.seconds.append(await bare.fetch())
            for label, crawler in crawlers.items():
                start = time.perf_counter()
                await crawler.crawl(1, KEYWORD, f"b{k}")
                paths[label].seconds.append(time.perf_counter() - start)
                paths[label].peak_mb = max(paths[label].peak_mb, tree_rss_mb(crawler.manager.browser_pid))
        return base, paths
    finally:
        await bare.close()
        for crawler in crawlers.values():
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
#: The goal: no round of a quiet machine's ten runs above this many times its floor.
WORST_RATIO_GOAL = 20.0
#: Rounds per size: a 1+1 crawl takes about a second, and one disturbed round moves its ratio far, so it gets
#: more rounds (the median settles).
ROUNDS = {5: 5, 1: 15}


def run(rounds: dict[int, int] = ROUNDS) -> None:
    print(f"crawl: one crawl of N on-sale + N sold pages against the simulator, {rounds[5]} rounds of 5+5 and "
          f"{rounds[1]} of 1+1; in each round the "
          "floor (a bare fetch of the same pages in one tab: navigate, wait for an item link, read the text) and "
          "each path run one after the other; ratio: a crawl over the same round's floor")
    print(f"  load average at start {load_average()}")
    sim = MarketSimulator(speed=0).start()
    chromium = find_chromium(None)
    rows = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            base = {"DATA_DIR": tmp, "MERCARI_BASE_URL": sim.url, "CHROMIUM_PATH": chromium,
                    "CHROMIUM_NO_SANDBOX": "true" if os.geteuid() == 0 else "false",
                    "CRAWL_RATE_LIMIT": "0"}  # the simulator on this machine: the crawler's own speed is measured
            for pages in (5, 1):
                sized = {**base, "SCHEDULER_PAGES_ON_SALE": str(pages), "SCHEDULER_PAGES_SOLD": str(pages)}
                settings = {"API path": load_settings(sized),
                            "DOM-only path": load_settings({**sized, "MERCARI_API_PATTERN": RENAMED_API})}
                bare, paths = asyncio.run(interleaved(sim, chromium, settings, pages, rounds[pages]))
                for series in paths.values():
                    ratios = [t / f for t, f in zip(series.seconds, bare.seconds, strict=True)]
                    worst = max(range(len(ratios)), key=ratios.__getitem__)
                    rows.append((f"{pages}+{pages}", series.label, statistics.median(bare.seconds),
                                 statistics.median(series.seconds), statistics.median(ratios), min(ratios),
                                 ratios[worst], series.seconds[worst],
                                 2 * pages / statistics.median(series.seconds), series.peak_mb))
            soft = [asyncio.run(soft_block(sim, chromium, SOFT_BLOCK_TIMEOUT)) for _ in range(rounds[5])]
    finally:
        sim.stop()
    print(f"  load average at end {load_average()}")
    print(f"  {'pages':5}  {'path':13}  {'floor s':>8}  {'crawl s':>8}  {'ratio':>6}  {'worst':>7}  "
          f"{'worst s':>8}  {'worst/median':>12}  {'min':>6}  {'pages/s':>7}  {'browser MB':>10}")
    for pages_, label, floor_s, crawl_s, ratio, low, high, high_s, per_s, peak in rows:
        print(f"  {pages_:5}  {label:13}  {floor_s:8.2f}  {crawl_s:8.2f}  {ratio:5.2f}×  {high:6.2f}×  "
              f"{high_s:8.2f}  {high / ratio:11.2f}×  {low:5.2f}×  {per_s:7.1f}  {peak:10.0f}")
    print("  (seconds: medians over the rounds; ratio: the median of the rounds' ratios to their floor; worst: the "
          "round with the highest ratio, its ratio and seconds)")
    over = [(p, label, high) for p, label, _, _, _, _, high, *_ in rows if high > WORST_RATIO_GOAL]
    print(f"  rounds above {WORST_RATIO_GOAL:.0f}× their floor: "
          + (", ".join(f"{p} {label} ({high:.1f}×)" for p, label, high in over) if over else "none"))
    report(f"seconds to class a soft block (median of {rounds[5]}; page timeout {SOFT_BLOCK_TIMEOUT:.0f} s)",
           statistics.median(soft), SOFT_BLOCK_TIMEOUT)


def main() -> None:
    run()


if __name__ == "__main__":
    main()
