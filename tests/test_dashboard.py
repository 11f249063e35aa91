"""The dashboard in headless Chromium: the page loads, its rows match the database, a chart renders."""

import asyncio

from lib.core.clock import FrozenClock
from lib.core.redis_client import state_redis
from lib.crawling.driver import Browser
from lib.market.read_side import ReadSide
from lib.operations.dashboard import Dashboard, summary_status

from .test_alerts_and_read_side import T0, seed_results


def test_dashboard_pages(db, settings, broker, chromium):
    clock = FrozenClock(T0 + 120)
    ips, _ = seed_results(settings, clock)
    r = state_redis(settings)
    side = ReadSide(settings, r, clock)
    dash = Dashboard(settings, side, lambda: summary_status(settings, r, broker), port=0).start()
    expected = side.leaderboard("outflow", 24)

    async def go():
        browser = await Browser.launch(chromium, no_sandbox=True)
        try:
            tab = await browser.new_tab(r"$^", block_resources=False)
            await tab.goto(f"{dash.url}/?by=outflow&hours=24", 15)
            await tab.wait_for("() => document.querySelectorAll('#board tbody tr').length > 0", 15)
            rows = await tab.evaluate("""() => Array.from(document.querySelectorAll('#board tbody tr')).map(tr =>
                Array.from(tr.children).slice(0, 5).map(td => td.textContent.trim()))""")
            # the status cards come from their own request (/api/status): wait for them, not only for the board
            await tab.wait_for("() => document.getElementById('status').innerText.includes('IPs scheduled')", 15)
            cards = await tab.evaluate("() => document.getElementById('status').innerText")
            await tab.goto(f"{dash.url}/ip/{ips[1].id}?hours=24", 15)
            await tab.wait_for("() => document.querySelectorAll('#flow rect.out').length > 0", 15)
            bars = await tab.evaluate("""() => Array.from(document.querySelectorAll('#flow rect.out'))
                .map(r => Number(r.getAttribute('height')))""")
            price = await tab.evaluate("() => document.querySelectorAll('#price line.range').length")
            name = await tab.evaluate("() => document.getElementById('name').textContent")
            return rows, cards, bars, price, name
        finally:
            await browser.close()

    try:
        rows, cards, bars, price, name = asyncio.run(go())
    finally:
        dash.stop()
    assert rows == [[str(e["rank"]), e["name"], str(e["inflow"]), str(e["outflow"]),
                     f"{e['liquidity']:.2f}" if e["liquidity"] is not None else "–"] for e in expected]
    assert "IPs scheduled" in cards
    assert name == "呪術廻戦" and any(h > 0 for h in bars)  # the outflow chart drew its bars
    assert price >= 1  # and the sold-price range
