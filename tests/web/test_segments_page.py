"""The cross-IP board of goods types ("what sells across franchises", ``/segments``) in real headless Chromium,
over the demo's database (``test_pages``' site): every number shown is the API's (``GET /api/v1/segments``) in
its unit, with its n, its 95 % interval and, when insufficient, the API's why; the small multiples draw each
interval on one scale per measure; the window, the kind and the exports work."""

from __future__ import annotations

import csv
import io
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

import pytest

from lib.market.read_side import SEGMENT_COLUMNS

from .browser import launch, new_page
from .conftest import call
from .test_pages import database_url, demo_database, font, run, site  # noqa: F401  (the demo site's fixtures)

pytestmark = pytest.mark.slow

#: The table's measures: the key its cells carry, where the API keeps it, its unit (common.js ``value``).
MEASURES = {"outflow": (("outflow",), ""), "inflow": (("inflow",), ""), "median_price": (("median_price",), "¥"),
            "sell_through": (("sell_through",), "%"), "time_to_sell": (("time_to_sell_hours", "median"), "hours"),
            "price_cut_share": (("price_cut_share",), "%")}


def half_up(v: float, places: str) -> Decimal:
    """``v`` rounded as JavaScript's ``toFixed`` and ``Math.round`` do for a positive number: its exact binary
    value, a tie going up."""
    return Decimal(v).quantize(Decimal(places), ROUND_HALF_UP)


def shown(v: float | None, unit: str) -> str:
    """What the page shows for a value in ``unit`` (the formats of common.js ``value``)."""
    if v is None:
        return "insufficient"
    if unit == "¥":
        return f"¥{half_up(v, '1'):,}"
    if unit == "%":
        return f"{half_up(v * 100, '0.1')}%"
    if unit == "hours":
        return f"{half_up(v, '0.1')} h" if v < 48 else f"{half_up(v / 24, '0.1')} d"
    assert float(v).is_integer(), v  # counts
    return f"{int(v):,}"


def of(measures: dict[str, Any], key: str) -> dict[str, Any]:
    path, _ = MEASURES[key]
    m = measures
    for part in path:
        m = m[part]
    return m


async def board_of(page) -> dict[str, Any]:
    return await page.js("""() => ({
      url: location.search,
      rows: Array.from(document.querySelectorAll('#segments-board tbody tr')).map(tr => [tr.dataset.key,
        Object.fromEntries(Array.from(tr.querySelectorAll('td.num')).map(td => [td.dataset.key, {
          data: td.dataset.value, value: td.querySelector('.value').textContent,
          interval: (td.querySelector('.interval') || {}).textContent || null,
          n: td.querySelector('.n').textContent, why: (td.querySelector('.why') || {}).textContent || null}]))]),
      multiples: Array.from(document.querySelectorAll('#multiples .multiple')).map(f => [f.dataset.key,
        Object.fromEntries(Array.from(f.querySelectorAll('.row')).map(r => {
          const w = r.querySelector('svg.whisker'), dot = w && w.querySelector('circle');
          return [r.dataset.key, {low: w ? w.dataset.low : null, dot: dot ? Number(dot.getAttribute('cx')) : null,
                                  band: !!(w && w.querySelector('rect.band'))}];
        }))]),
      empty: document.getElementById('board-empty').hidden ? null : document.getElementById('board-empty').textContent,
      csv: document.getElementById('csv').getAttribute('href'),
      json: document.getElementById('json').getAttribute('href'),
      current: (document.querySelector('header nav a[aria-current]') || {}).textContent || null})""")


def check_against_api(seen: dict[str, Any], api: dict[str, Any]) -> None:
    """The table and the small multiples show exactly the API's segments, values, intervals, n and whys."""
    assert [key for key, _ in seen["rows"]] == [s["key"] for s in api["segments"]]
    for (key, cells), segment in zip(seen["rows"], api["segments"], strict=True):
        for name, (_, unit) in MEASURES.items():
            m, cell = of(segment["measures"], name), cells[name]
            assert cell["value"] == shown(m["value"], unit), (key, name)
            assert (None if cell["data"] == "" else float(cell["data"])) == m["value"], (key, name)
            assert cell["n"] == f"n = {m['n']}", (key, name)
            low, high = m.get("interval") or (None, None)
            ends = f"{shown(low, unit)} – {'open above' if high is None else shown(high, unit)}"
            assert cell["interval"] == (None if m.get("interval") is None else f"95 %: {ends}"), (key, name)
            assert cell["why"] == (m.get("why") if m["value"] is None else None), (key, name)
    drawn = dict(seen["multiples"])
    assert list(drawn) == [s["key"] for s in api["segments"]][:36]
    for name in ("median_price", "sell_through", "time_to_sell"):
        rows = [(of(s["measures"], name), drawn[s["key"]][name]) for s in api["segments"] if s["key"] in drawn]
        for m, row in rows:  # a whisker exactly where the API gives an interval, starting at its low end
            assert (row["low"] is not None) == (m["interval"] is not None and m["value"] is not None), name
            if row["low"] is not None:
                assert float(row["low"]) == m["interval"][0]
                assert row["band"] == (name == "median_price")
        # one scale per measure across the panels: the dots stand in the order of the values
        dots = sorted((m["value"], row["dot"]) for m, row in rows if row["dot"] is not None)
        assert [d for _, d in dots] == sorted(d for _, d in dots), name


def test_segments_board_page(site, chromium, tmp_path):  # noqa: F811  (site: test_pages' fixture)
    url, _, _ = site
    longest = call(f"{url}/api/v1/meta").json()["max_segment_hours"]
    week = min(168, longest)
    api = call(f"{url}/api/v1/segments?hours={week}&by=goods").json()
    measures = [of(s["measures"], name) for s in api["segments"] for name in MEASURES]
    # the demo's titles: enough goods types, some estimates with an interval
    assert len(api["segments"]) >= 5, "the demo filled too little to test with"
    assert sum(m.get("interval") is not None for m in measures) >= 3

    def insufficient(hours: int) -> bool:
        board = call(f"{url}/api/v1/segments?hours={hours}&by=goods").json()
        return any(of(s["measures"], name)["value"] is None and of(s["measures"], name).get("why")
                   for s in board["segments"] for name in MEASURES)

    # and a window short enough for some measures to be insufficient, shown with their why (the demo's two days
    # of history fill a day's window for every type)
    scarce = next((h for h in (24, 6, 3, 1) if insufficient(h)), None)
    assert scarce is not None, "no window of the demo's data has an insufficient measure"

    async def go():
        browser = await launch(chromium)
        try:
            page = await new_page(browser)
            await page.open(f"{url}/")
            assert await page.js("() => document.querySelector('header nav a[href=\"/segments\"]').textContent") \
                == "What sells"
            await page.open(f"{url}/segments?hours={week}")
            goods = await board_of(page)
            await page.page.screenshot({"path": str(tmp_path / "segments.png"), "fullPage": True})
            await page.page.select("#hours", "24")
            await page.wait("() => new URLSearchParams(location.search).get('hours') === '24'")
            # the note is written with the table, once the window's answer is in
            await page.wait("() => document.getElementById('board-note').textContent.startsWith("
                            "'Listings of the last 1 day of every IP, by goods type')")
            daily = await board_of(page), call(f"{url}/api/v1/segments?hours=24&by=goods").json()
            await page.page.select("#by", "character")
            await page.wait("() => new URLSearchParams(location.search).get('by') === 'character'")
            await page.wait("() => document.getElementById('board-note').textContent.includes('by character')")
            characters = await board_of(page)
            await page.open(f"{url}/segments?hours={scarce}")
            await page.wait("() => document.getElementById('board-note').textContent.startsWith('Listings of')")
            short = await board_of(page), call(f"{url}/api/v1/segments?hours={scarce}&by=goods").json()
            return goods, daily, characters, short, page.errors
        finally:
            await browser.close()

    goods, (daily, day), characters, (short, scarce_api), errors = run(go())
    assert errors == []
    assert goods["current"] == "What sells"
    check_against_api(goods, api)
    check_against_api(daily, day)
    check_against_api(short, scarce_api)
    # the demo's IPs have no character lists: an empty board, said so
    by_character = call(f"{url}/api/v1/segments?hours=24&by=character").json()
    check_against_api(characters, by_character)
    assert (characters["empty"] is None) == bool(by_character["segments"])
    # the exports are the API's, for what is shown
    assert call(url + goods["json"]).json() == api
    export = call(url + goods["csv"])
    assert export.status == 200 and export.headers["content-type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(export.body.decode())))
    assert list(rows[0]) == SEGMENT_COLUMNS
    assert [(r["key"], int(r["outflow"])) for r in rows] == [(s["key"], s["measures"]["outflow"]["value"])
                                                             for s in api["segments"]]
