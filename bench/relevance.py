"""``python -m bench relevance``: what the title relevance filter (``lib.segments.relevance``) changes on the
realistic market, per IP size: over 24 hourly crawls of 5 on-sale and 5 sold pages, read from the simulator's API
answers as the crawler reads them (``lib.operations.backfill.past_crawl``), the padded listings the crawls kept
(summed over the crawls) with the filter and without it, the listings the filter left out, and the pages read
with and without it. docs/concepts/crawling.md, "What is counted"."""

from __future__ import annotations

from dataclasses import replace
from unittest import mock

from lib.core.settings import load_settings
from lib.operations.backfill import past_crawl
from lib.segments.relevance import TitleMatcher
from lib.standins.simulator import MarketSimulator
from lib.standins.simulator.model import DAY, HOUR, MarketModel
from lib.standins.simulator.traits import load_traits

T = 1_780_239_600.0 + 10 * DAY
SIZES = {"ハイキュー!!": 0.3, "ダンジョン飯": 1.5, "薬屋のひとりごと": 5.0, "チェンソーマン": 40.0}
CRAWLS, PAGES = 24, 5


def crawls(sim: MarketSimulator, keyword: str, filtered: bool) -> tuple[int, int, int]:
    """(padded listings kept, listings left out, pages read) over ``CRAWLS`` hourly crawls."""
    settings = load_settings({"SCHEDULER_PAGES_ON_SALE": str(PAGES), "SCHEDULER_PAGES_SOLD": str(PAGES),
                              "MERCARI_BASE_URL": "http://simulator.invalid"})
    kept = missed = pages = 0
    for h in range(CRAWLS):
        at = T - h * HOUR
        if filtered:
            message = past_crawl(sim, keyword, 1, f"t{h}", at, settings)
        else:  # every title taken as the IP's: the crawl as it was before the filter
            with mock.patch.object(TitleMatcher, "matches", lambda self, title: True):
                message = past_crawl(sim, keyword, 1, f"t{h}", at, settings)
        padded = {item["id"] for status in ({"on_sale"}, {"sold_out", "trading"}) for page in range(1, PAGES + 1)
                  for item in sim.truth(keyword, status, page, at) if item["truth"]["padded"]}
        kept += sum(1 for item in message["items"] if item["source_id"] in padded)
        missed += sum(r["missed"] for r in message["relevance"].values())
        pages += message["pages_crawled"]
    return kept, missed, pages


def main() -> int:
    traits = load_traits()
    traits = replace(traits, search=replace(traits.search, empty_answer_share=0.0))
    sim = MarketSimulator(at=T, speed=0, market="realistic", model=MarketModel(7, traits, sizes=SIZES),
                          rate_limit=False)
    print(f"{CRAWLS} hourly crawls of {PAGES}+{PAGES} pages per IP, realistic market (seed 7)")
    print("| IP (new listings an hour) | padded listings kept | without the filter | listings left out | "
          "pages read | without the filter |")
    print("|---|---:|---:|---:|---:|---:|")
    for keyword, size in SIZES.items():
        kept, missed, pages = crawls(sim, keyword, True)
        kept_before, _, pages_before = crawls(sim, keyword, False)
        print(f"| {keyword} ({size}) | {kept} | {kept_before:,} | {missed:,} | {pages} | {pages_before} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
