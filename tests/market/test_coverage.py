"""Coverage (definition 5) of a run like the demo's, on the market simulator: a sold search's total counts
every sold listing matching, as on the real site (a sold listing stays listed; it leaves the total only when a
cancelled trade relists it), so the sales the pages see never exceed what the total grew by. The simulator's
sold total used to count only the listings of its last three days: sold listings older than that left it as
fast as new sales came in, and coverage read over 1,000 % on the demo."""

import random

import pytest

from lib.market.windows import window_measures
from lib.standins.simulator import MarketSimulator, market

from .scripted import T0, Script, expected_window
from .test_hourly_rows import deliver
from .test_windows import MINIMUMS

H = 3600.0
SOLD = {market.TRADING, market.SOLD_OUT}
#: What the demo reads of each IP: 5 + 5 pages of 120, every 30 to 60 (simulated) minutes.
PAGES, PAGE_SIZE, MIN_INTERVAL, MAX_INTERVAL = 5, 120, 0.5 * H, 1.0 * H


def demo_like_run(keyword: str, hours: float, seed: int) -> Script:
    """The crawls of one IP: each reads the newest 600 on-sale and 600 sold listings and the two totals the
    API sends (``numFound``), as the crawler reports them."""
    rng = random.Random(seed)
    crawls, search = [], []
    at = T0 + rng.uniform(0, H)
    while at < T0 + hours * H:
        young = market.visible(keyword, at)
        # the pages' hits, less the listings the site hides from them (a few a page)
        on_sale = [(x, s) for x, s in [(x, s) for x, s in young if s == market.ON_SALE][:PAGES * PAGE_SIZE]
                   if not x.hidden]
        sold = [(x, s) for x, s in [(x, s) for x, s in young if s in SOLD][:PAGES * PAGE_SIZE] if not x.hidden]
        items = [{"source_id": x.id, "title": x.name, "price": MarketSimulator.reported_price(x, at),
                  "status": "on_sale" if s == market.ON_SALE else "sold", "image_url": "", "item_url": "",
                  "created": int(x.created), "updated": int(x.updated_at(at))} for x, s in on_sale + sold]
        crawls.append((at, items))
        search.append({"on_sale": {"num_found": market.total(keyword, {market.ON_SALE}, at), "pages": PAGES,
                                   "items": len(on_sale)},
                       "sold": {"num_found": market.total(keyword, SOLD, at), "pages": PAGES, "items": len(sold)}})
        at += rng.uniform(MIN_INTERVAL, MAX_INTERVAL)
    return Script(crawls, search)


def sales_less_relists(keyword: str, a: float, b: float) -> int:
    """What a total counting every sold listing grows by in (a, b], from the listings themselves: the sales in
    it less the relists (only listings created in the three days before ``a`` or later change then)."""
    rate = market.listings_per_hour(keyword)
    first = max(0, int((a - market.HORIZON - market.EPOCH) / H * rate) - 1)
    last = int((b - market.EPOCH) / H * rate) + 1
    grown = 0
    for n in range(first, last + 1):
        x = market.listing(keyword, n)
        grown += x.sold_at is not None and a < x.sold_at <= b
        grown -= x.relisted_at is not None and a < x.relisted_at <= b
    return grown


@pytest.mark.slow  # 20 s on the shared machine: 6,000 sightings through the pipeline
def test_coverage_of_a_demo_like_run_stays_within_100_percent(db, settings):
    keyword, hours = "SPY×FAMILY", 4  # a demo IP (57 new listings an hour)
    script = demo_like_run(keyword, hours, seed=1)
    totals = [(at, s["sold"]["num_found"]) for (at, _), s in zip(script.crawls, script.search, strict=True)]
    # the sold search's total grows by the sales less the relists, as the real site's does
    for (a, total_a), (b, total_b) in zip(totals, totals[1:], strict=False):
        assert total_b - total_a == sales_less_relists(keyword, a, b)
    now = script.crawls[-1][0] + 600
    expected = expected_window(script, hours, now, MINIMUMS)["coverage"]
    assert expected is not None and 0.3 < expected <= 1.0, expected
    ip_id = deliver(settings, script, "in_order", 0)
    got = window_measures([ip_id], hours, now)[ip_id].to_json()["coverage"]
    assert got["value"] is not None and round(got["value"], 3) == round(expected, 3)
