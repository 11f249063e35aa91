"""The IP page draws the forecast (docs/concepts/forecasts.md) in real Chromium: the last closed days' sales, then
the next 7 days' forecast inside its 80 % and 95 % bands; an IP without one says why."""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta

import pytest

from lib.core.clock import FrozenClock, naive_utc
from lib.forecast.refresh import refresh
from lib.market.daily import roll_up_pending
from lib.market.statistics import day_of

from ..web.browser import launch, new_page
from ..web.conftest import start_dashboard
from .test_refresh import write_days

#: Pixels of the forecast chart in the bands' colour (rgb 216, 27, 96, give or take the canvas's rounding of
#: translucent pixels) at a band's translucency: the bands' area.
BAND_PIXELS = """() => { const c = document.querySelector('#forecast-daily canvas');
  const data = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
  let n = 0;
  for (let i = 0; i < data.length; i += 4)
    if (Math.abs(data[i] - 216) < 12 && Math.abs(data[i + 1] - 27) < 12 && Math.abs(data[i + 2] - 96) < 12
        && data[i + 3] > 15 && data[i + 3] < 90) n++;
  return n; }"""


@pytest.mark.slow  # Chromium
@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)  # the page, not the database, is under test
def test_the_ip_page_draws_the_forecast_inside_its_bands(db, settings, broker, chromium):
    now = time.time()
    first = day_of(naive_utc(now)) - timedelta(days=28)
    write_days(1, {first + timedelta(days=i): (24, 40 + 5 * (i % 7 == 5), 20 + 9 * (i % 7 == 6) + i % 3)
                   for i in range(28)})
    write_days(2, {first + timedelta(days=24 + i): (24, 4, 1) for i in range(4)})
    roll_up_pending(now)
    refresh(now)
    server, _ = start_dashboard(settings, broker, None, FrozenClock(now))

    async def go():
        browser = await launch(chromium)
        try:
            page = await new_page(browser)
            await page.open(f"{server.url}/ip/1")
            await page.wait("() => document.getElementById('forecast-daily').dataset.drawn === '1'")
            bands = await page.js(BAND_PIXELS)
            note = await page.js("() => document.getElementById('forecast-note').textContent")
            label = await page.js("() => document.getElementById('forecast-daily').getAttribute('aria-label')")
            await page.open(f"{server.url}/ip/2")
            await page.wait("() => document.getElementById('forecast-daily').dataset.drawn === '0'")
            why = await page.js("() => document.getElementById('forecast-daily').textContent")
            return bands, note, label, why, page.errors
        finally:
            await browser.close()

    try:
        bands, note, label, why, errors = asyncio.run(go())
    finally:
        server.stop()
    assert errors == []
    assert bands > 2000, bands  # the two bands over seven days, not their edges alone
    assert note.startswith("AutoETS fitted on 28 days up to ") and "80 %" in note and "95 %" in note
    assert label.startswith("Sold per day, and the next 7 days forecast (UTC)")
    assert why == "No forecast yet: needs 14 tracked days in a row (at least 12 h each); has 4."


@pytest.mark.slow  # Chromium
@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_the_ip_page_gives_each_segments_sales_expected_next_week(db, settings, broker, chromium):
    from lib.forecast.read import segment_forecasts

    from .test_segments import wall_clock_market

    now, _ = wall_clock_market(7)
    expected = {s["key"]: s["next_days"]["outflow"] for s in segment_forecasts(7, "goods", now, {})["segments"]}
    server, _ = start_dashboard(settings, broker, None, FrozenClock(now))

    async def go():
        browser = await launch(chromium)
        try:
            page = await new_page(browser)
            await page.open(f"{server.url}/ip/7")
            await page.wait("() => document.body.dataset.ready === '1'")
            cells = await page.js("() => Object.fromEntries([...document.querySelectorAll('#segments tr[data-key]')]"
                                  ".map(r => [r.dataset.key, r.querySelector('td.next-week').textContent]))")
            return cells, page.errors
        finally:
            await browser.close()

    try:
        cells, errors = asyncio.run(go())
    finally:
        server.stop()
    assert errors == []
    assert set(cells) == {"plush", "can_badge"}
    assert cells == {key: f"{outflow:,.2f}" for key, outflow in expected.items()}


@pytest.mark.slow  # Chromium
@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_the_what_sells_page_adds_up_the_ips_forecasts_of_each_goods_type(db, settings, broker, chromium):
    """Two IPs' stored forecasts added up per goods type; then one IP's forecast is no longer current (paused): its
    days leave the sums and the page says so."""
    from lib.forecast.read import CURRENT_DAYS
    from models import SegmentForecast

    from ..web.conftest import call
    from ..web.test_api import check_against_openapi
    from .test_segments import wall_clock_market

    now, _ = wall_clock_market(7)
    wall_clock_market(8)
    # the definition: each IP's stored 7 days of the goods type's sales, added up over the IPs
    want: dict[str, float] = {}
    only_8: dict[str, float] = {}  # IP 8's alone
    for row in SegmentForecast.select().where((SegmentForecast.kind == "goods")
                                              & (SegmentForecast.measure == "outflow")):
        want[row.key] = want.get(row.key, 0.0) + row.mean
        if row.ip_id == 8:
            only_8[row.key] = only_8.get(row.key, 0.0) + row.mean
    assert set(want) == {"plush", "can_badge"} == set(only_8)
    server, _ = start_dashboard(settings, broker, None, FrozenClock(now))

    async def go():
        browser = await launch(chromium)
        try:
            page = await new_page(browser)
            await page.open(f"{server.url}/segments?by=goods&hours=168")
            await page.wait("() => document.body.dataset.ready === '1'")
            cells = await page.js("() => Object.fromEntries([...document.querySelectorAll("
                                  "'#segments-board tr[data-key]')].map(r => [r.dataset.key, "
                                  "[r.querySelector('td.next-week').dataset.value, "
                                  "r.querySelector('td.next-week .n').textContent]]))")
            note = await page.js("() => document.getElementById('board-note').textContent")
            return cells, note, page.errors
        finally:
            await browser.close()

    try:
        reply = call(f"{server.url}/api/v1/segments/forecast?by=goods")
        check_against_openapi(call(f"{server.url}/api/v1/openapi.json").json(), "/api/v1/segments/forecast", "get",
                              reply)
        answer = reply.json()
        cells, note, errors = asyncio.run(go())
        # IP 7 is no longer refit (paused): its forecast's origin falls behind the last closed days
        SegmentForecast.update(origin=day_of(naive_utc(now)) - timedelta(days=CURRENT_DAYS + 1)).where(
            SegmentForecast.ip_id == 7).execute()
        stale_cells, stale_note, stale_errors = asyncio.run(go())
    finally:
        server.stop()
    assert [(s["key"], s["outflow"], s["ips"]) for s in answer["segments"]] == \
        [(k, round(v, 1), 2) for k, v in sorted(want.items(), key=lambda kv: -kv[1])]
    assert answer["segments"][0]["label"] == "ぬいぐるみ" and answer["stale_ips"] == 0
    assert errors == [] and stale_errors == []
    assert {k: (float(v), n) for k, (v, n) in cells.items()} == {k: (round(v, 1), "2 IPs") for k, v in want.items()}
    assert "leave out" not in note
    assert {k: (float(v), n) for k, (v, n) in stale_cells.items()} == {k: (round(v, 1), "1 IP")
                                                                       for k, v in only_8.items()}
    assert "Next week's sales leave out 1 IP whose forecasts are not current" in stale_note
