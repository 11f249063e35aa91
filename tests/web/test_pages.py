"""The dashboard for a person, in real headless Chromium, over a database filled by a demo run: every page renders
without a console error and with non-empty charts; sorting, the window and the filter change what is shown;
requeue and purge work with the operator token and are refused without it; hostile text stays text; phone width
and keyboard work. Screenshots are written to the test's directory."""

from __future__ import annotations

import asyncio
import dataclasses
import math
import os
import sqlite3
from pathlib import Path

import dramatiq
import peewee
import pytest

from lib.core.clock import FrozenClock
from lib.core.redis_client import state_redis
from lib.crawling.budget import RequestBudget
from lib.crawling.drift import CRAWLS, DriftLog
from lib.crawling.install import ensure_cjk_font
from models import AppliedResult, IpMetadata, ItemSnapshot

from ..helpers import wait_for
from .browser import launch, new_page, rows_of
from .conftest import TOKEN, call, start_dashboard

pytestmark = pytest.mark.slow

HOSTILE = ['<script>window.__pwned = 1</script>鬼滅', '"><img src=x onerror="window.__pwned = 1">',
           "\u202eأنمي عربي\u202c 🎌🔥 呪術廻戦", "x" * 300]


@pytest.fixture(scope="module")
def demo_database(request) -> Path:
    """A database filled by the README's demo (the suite's shared run, ``demo_run``), or by an earlier one named
    by ``TEST_DEMO_DATABASE`` (to iterate on these tests without the demo)."""
    if os.environ.get("TEST_DEMO_DATABASE"):
        return Path(os.environ["TEST_DEMO_DATABASE"])
    return request.getfixturevalue("demo_run").database


@pytest.fixture
def database_url(demo_database, tmp_path) -> str:
    """A copy of the demo's database per test (the tests change it)."""
    copy = tmp_path / "animetop.sqlite3"
    with sqlite3.connect(demo_database) as source, sqlite3.connect(copy) as target:
        source.backup(target)  # with what is still in its write-ahead log
    return f"sqlite:///{copy}"


@pytest.fixture
def font():
    if not ensure_cjk_font():
        pytest.skip("no Japanese font and cannot install one (not root)")


@pytest.fixture(params=[TOKEN, None], ids=["operator", "read-only"])
def site(request, db, settings, broker, font):
    # the demo's clock ran ahead of real time: the dashboard's "now" is its last crawl
    last = AppliedResult.select(peewee.fn.MAX(AppliedResult.crawled_at)).scalar()
    # a request budget of 10 page loads a minute, for the operations page to show (the demo crawled without one)
    budgeted = dataclasses.replace(settings, crawl_rate_limit=10)
    server, letters = start_dashboard(budgeted, broker, request.param, FrozenClock(last + 60))
    yield server.url, letters, request.param
    server.stop()


def run(coroutine):
    return asyncio.run(coroutine)


def test_leaderboard_page(site, chromium, tmp_path):
    url, _, _ = site
    api = call(f"{url}/api/v1/leaderboard?by=outflow&hours=24&limit=200").json()
    assert len(api["rows"]) >= 4, "the demo filled too little to test with"

    async def go():
        browser = await launch(chromium)
        try:
            page = await new_page(browser)
            await page.open(f"{url}/?by=outflow&hours=24")
            shown = await rows_of(page)
            assert [r[0] for r in shown] == [str(r["ip_id"]) for r in api["rows"]]
            await page.wait("() => document.querySelectorAll('#board .spark canvas').length > 0")
            assert await page.drawn("#board .spark") > 0
            await page.page.screenshot({"path": str(tmp_path / "leaderboard.png"), "fullPage": True})

            # sorting by another measure (its column header), by mouse
            await page.page.click("th button.sort[data-key='inflow']")
            await page.wait("() => new URLSearchParams(location.search).get('by') === 'inflow'")
            await page.wait("() => document.querySelector('th[aria-sort] button').dataset.key === 'inflow'")
            by_inflow = call(f"{url}/api/v1/leaderboard?by=inflow&hours=24&limit=200").json()["rows"]
            await page.wait("(ids) => Array.from(document.querySelectorAll('#board tbody tr'))"
                            ".map(tr => tr.dataset.ipId).join() === ids", ",".join(str(r["ip_id"]) for r in by_inflow))
            # an estimated flow reads ≈ with its interval on hover; a counted one does not
            marks = await page.js("() => Array.from(document.querySelectorAll('#board tbody tr')).map(tr => {"
                                  " const td = tr.querySelector(\"td[data-key='inflow']\");"
                                  " const e = td.querySelector('.estimate');"
                                  " return [tr.dataset.ipId, td.textContent.startsWith('≈'), e ? e.title : null]; })")
            for (ip_id, marked, title), row in zip(marks, by_inflow, strict=True):
                assert ip_id == str(row["ip_id"]) and marked == (row["inflow_interval"] is not None), (row, marked)
                if marked:
                    low, high = (f"{math.floor(v + 0.5):,}" for v in row["inflow_interval"])  # Math.round
                    assert title == f"estimate, 95 % interval {low}–{high}"

            # the window
            await page.page.select("#hours", "720")
            await page.wait("() => new URLSearchParams(location.search).get('hours') === '720'")
            month = call(f"{url}/api/v1/leaderboard?by=inflow&hours=720&limit=200").json()
            await page.wait("(text) => document.getElementById('board-count').textContent.includes(text)",
                            f"of {month['total']} IPs, last 30 days")

            # the filter
            name = api["rows"][1]["name"]
            await page.page.type("#q", name)
            await page.wait("(ip) => { const rows = document.querySelectorAll('#board tbody tr');"
                            " return rows.length === 1 && rows[0].dataset.ipId === ip; }", str(api["rows"][1]["ip_id"]))
            return page.errors
        finally:
            await browser.close()

    assert run(go()) == []


def test_ip_page_draws_every_chart(site, chromium, tmp_path):
    url, _, _ = site
    top = call(f"{url}/api/v1/leaderboard?by=outflow&hours=24").json()["rows"][0]

    async def go():
        browser = await launch(chromium)
        try:
            page = await new_page(browser)
            await page.open(f"{url}/ip/{top['ip_id']}?hours=168")
            drawn = {chart: await page.drawn(f"#{chart}")
                     for chart in ("flow-hourly", "flow-daily", "price-daily", "price", "tts", "supply")}
            name = await page.js("() => document.getElementById('name').textContent")
            crawled = await page.js("() => document.getElementById('crawled').textContent")
            sales = await page.js("() => Array.from(document.querySelectorAll('#sales tbody a'))"
                                  ".map(a => a.getAttribute('href'))")
            axis = await page.js("() => ['price', 'flow-hourly'].map(id => document.getElementById(id)"
                                 ".getAttribute('aria-label')).join(' ')")
            segments = await page.js("() => Array.from(document.querySelectorAll('#segments tbody tr')).map(r => ["
                                     "r.dataset.key, r.querySelectorAll('svg.whisker circle').length])")
            shown = await page.js("() => Array.from(document.querySelectorAll('#cards .card')).map(c => ["
                                  "c.childNodes[1].textContent, (c.querySelector('.interval') || {}).textContent || "
                                  "null, c.querySelectorAll('.interval svg circle').length, "
                                  "(c.querySelector('.why') || {}).textContent || null])")
            await page.page.screenshot({"path": str(tmp_path / "ip.png"), "fullPage": True})
            return drawn, name, crawled, sales, axis, shown, segments, page.errors
        finally:
            await browser.close()

    drawn, name, crawled, sales, axis, shown, segments, errors = run(go())
    assert errors == []
    assert name == top["name"]
    # its last crawl, in the display time zone: the window's hours since are not seen yet
    last = call(f"{url}/api/v1/ips/{top['ip_id']}?hours=168").json()["last_crawled_at"]
    assert crawled.startswith(f"Last crawled {last[:10]} {last[11:16]}: "), (crawled, last)
    # each estimate's 95 % interval under its card, as the API gives it, with its whisker (docs/concepts/measures.md,
    # definition 8)
    m = call(f"{url}/api/v1/ips/{top['ip_id']}?hours=168").json()["measures"]
    cards = {label: (text, dots) for label, text, dots, _ in shown}
    whys = {label: why for label, _, _, why in shown}
    # an insufficient measure says why under its card, in the API's words (docs: measures, "Insufficient")
    assert m["heat"]["value"] is None and whys["Heat"] == m["heat"]["why"] and "tracked hours" in whys["Heat"]
    # an estimated inflow (its pages could not reach back: docs, "Estimates") says so on its card
    listed = "Listed (≈ estimate)" if m["inflow"].get("interval") else "Listed"
    assert whys[listed] is None
    for label, key in (("Heat", "heat"), ("Sell-through", "sell_through"), ("Median sold price", "median_price")):
        text, dots = cards[label]
        if m[key]["value"] is None:  # insufficient (the demo's week has no baseline for a week's heat)
            assert (text, dots) == (None, 0), label
        else:
            assert m[key]["interval"] is not None and text.startswith("95 %: ") and dots == 1, (label, text)
    assert m["median_price"]["interval"] is not None
    low, high = m["median_price"]["interval"]
    assert cards["Median sold price"][0] == f"95 %: ¥{round(low):,} – ¥{round(high):,}"
    if listed == "Listed":
        assert cards[listed] == (None, 0)  # a count, not an estimate: no interval
    else:
        assert cards[listed][0].startswith("95 %: ") and cards[listed][1] == 1
    # the segments table: the API's goods types, most sold first, a price whisker where the median has an interval
    api = call(f"{url}/api/v1/ips/{top['ip_id']}/segments?hours=168&by=goods").json()["segments"]
    assert [key for key, _ in segments] == [s["key"] for s in api] and len(api) >= 5  # the simulator's titles
    assert [dots for _, dots in segments] == [int(s["measures"]["median_price"]["interval"] is not None
                                                  and s["measures"]["median_price"]["value"] is not None) for s in api]
    assert sum(dots for _, dots in segments) >= 3
    assert call(f"{url}/api/v1/ips/{top['ip_id']}?hours=168").json()["search_totals"]  # the crawler reports them
    assert all(count > 500 for count in drawn.values()), drawn  # each chart drew more than its frame
    assert sales and all(href.startswith("http") for href in sales)
    assert "¥" in axis and "per hour" in axis and "Asia/Tokyo" in axis  # units and time zone, also as text


def test_operations_requeue_and_purge(site, broker, start_worker, chromium):
    url, letters, token = site

    @dramatiq.actor(broker=broker, queue_name="work", max_retries=0)
    def doomed(n: int) -> None:
        raise RuntimeError(f"doomed {n}")

    log = DriftLog(state_redis())
    for _ in range(CRAWLS):  # three crawls in a row read only the page: the API path is gone
        log.record({"pages": [{"source": "dom", "items": 120, "has_next": True, "anomalies": {}}] * 2})
    sent = [doomed.send(n).message_id for n in range(3)]
    start_worker(broker)
    wait_for(lambda: len(letters.list("work")) == 3, what="three dead letters")
    RequestBudget(10, state_redis).throttled("direct")  # the site answered 429: the budget is halved
    from lib.scheduling.budget_plan import CostStore, Price
    CostStore(state_redis()).set_price(Price(price=0.0, budget=480, planned=300, ips=40, lengthened=0, unseen=90,
                                             at=1_800_000_000.0, reached=0.9, deepened=3, sold_pages=12))

    async def go():
        browser = await launch(chromium)
        try:
            page = await new_page(browser)
            await page.open(f"{url}/operations")
            await page.wait("() => document.querySelectorAll('#letters tbody tr').length === 3")
            drift = await page.js("() => document.getElementById('drift').innerText")
            assert "ALERT crawler drift: api_path_missing" in drift, drift
            assert f"{2 * CRAWLS} from the page (DOM)" in drift, drift
            budget = await page.js("() => [...document.querySelectorAll('#budgets tbody td')].map(td => td.innerText)")
            assert budget[:4] == ["direct", "0", "5", "10"] and budget[4] != "–" and budget[5] != "–", budget
            await page.wait("() => !document.getElementById('crawl-plan').hidden")
            plan = await page.js("() => document.getElementById('crawl-plan').textContent")
            assert plan.startswith("Planned: 300 of 480 requests an hour for 40 IPs; every IP at its own interval")
            assert plan.endswith(" 3 IP(s) outrun their sold pages: read 12 pages deep with the requests to "
                                 "spare."), plan
            if token is None:
                state = await page.js("() => [document.getElementById('readonly').hidden,"
                                      " document.getElementById('letter-actions').hidden,"
                                      " document.querySelectorAll('input.pick').length]")
                assert state == [False, True, 0]
                return page.errors
            await page.page.type("#token", TOKEN)
            await page.page.click("#signin-form button")
            await page.wait("() => !document.getElementById('letter-actions').hidden")
            await page.wait("() => document.querySelectorAll('input.pick').length === 3")
            # purge one: the confirmation names it, then it is gone
            await page.page.click(f"input.pick[value='{letters.list('work')[0].id}']")
            await page.page.click("#purge-selected")
            await page.wait("() => document.getElementById('confirm').open")
            title = await page.js("() => document.getElementById('confirm-title').textContent")
            assert title == "Purge 1 dead letter?"
            await page.page.click("#confirm-ok")
            await page.wait("() => document.querySelectorAll('#letters tbody tr').length === 2")
            # requeue the rest, cancelled first (nothing happens), then confirmed
            await page.page.click("#requeue-all")
            await page.wait("() => document.getElementById('confirm').open")
            assert await page.js("() => document.getElementById('confirm-title').textContent") == \
                "Requeue 2 dead letters?"
            await page.page.click("#confirm button[value='cancel']")
            await page.wait("() => !document.getElementById('confirm').open")
            assert len(letters.list("work")) == 2
            await page.page.click("#requeue-all")
            await page.wait("() => document.getElementById('confirm').open")
            await page.page.click("#confirm-ok")
            await page.wait("() => !document.getElementById('confirm').open")
            return page.errors
        finally:
            await browser.close()

    assert run(go()) == []
    if token is not None:
        # the two requeued messages ran again (and, still doomed, came back): the purged one never did
        wait_for(lambda: len(letters.list("work")) == 2 and all(d.retries == 0 for d in letters.list("work")),
                 what="the requeued messages to run again")
        assert {d.message_id for d in letters.list("work")} < set(sent)
    else:
        assert {d.message_id for d in letters.list("work")} == set(sent)


def test_hostile_text_stays_text_and_the_layout_holds(site, chromium, tmp_path):
    url, _, _ = site
    top = call(f"{url}/api/v1/leaderboard?by=outflow&hours=24").json()["rows"]
    for row, name in zip(top, HOSTILE, strict=False):
        IpMetadata.update(display_name=name).where(IpMetadata.id == row["ip_id"]).execute()
    ip = top[0]["ip_id"]
    sold = ItemSnapshot.select().where((ItemSnapshot.ip_id == ip) & (ItemSnapshot.status == "sold")).first()
    ItemSnapshot.update(title=HOSTILE[1], item_url="javascript:window.__pwned=1").where(
        ItemSnapshot.id == sold.id).execute()
    state_redis().flushdb()  # the read side's caches

    async def go():
        browser = await launch(chromium)
        results = {}
        try:
            for width in (1280, 375):
                page = await new_page(browser, width=width, height=800)
                for path in ("/?by=outflow&hours=24", f"/ip/{ip}?hours=168", "/segments?hours=24"):
                    await page.open(url + path)
                    results[(width, path)] = await page.js("""() => ({
                        pwned: window.__pwned === 1,
                        injected: document.querySelectorAll('img[onerror], script:not([src])').length,
                        text: document.body.innerText,
                        overflow: document.documentElement.scrollWidth - window.innerWidth,
                        javascriptLinks: document.querySelectorAll('a[href^="javascript"]').length})""")
                    await page.page.screenshot({"path": str(tmp_path / f"hostile-{width}-{len(results)}.png")})
                assert page.errors == []
        finally:
            await browser.close()
        return results

    for where, seen in run(go()).items():
        assert not seen["pwned"] and seen["injected"] == 0 and seen["javascriptLinks"] == 0, where
        assert seen["overflow"] <= 0, where  # nothing wider than the screen, even 300 unbroken characters
    board = run_text = next(v["text"] for k, v in run(go()).items() if k == (1280, "/?by=outflow&hours=24"))
    assert HOSTILE[0] in board and HOSTILE[1] in board and "🎌🔥 呪術廻戦" in run_text


def test_keyboard_reaches_and_works_every_control(site, chromium):
    url, _, _ = site

    async def go():
        browser = await launch(chromium)
        try:
            page = await new_page(browser)
            await page.open(f"{url}/?by=outflow&hours=24")
            reached = []
            for _ in range(40):
                await page.page.keyboard.press("Tab")
                reached.append(await page.js("() => document.activeElement.id || "
                                             "document.activeElement.dataset.key || document.activeElement.tagName"))
                if reached[-1] == "inflow":
                    break
            assert {"by", "hours", "q"} <= set(reached) and reached[-1] == "inflow", reached
            await page.page.keyboard.press("Enter")  # the focused sort button
            await page.wait("() => new URLSearchParams(location.search).get('by') === 'inflow'")
            return page.errors
        finally:
            await browser.close()

    assert run(go()) == []
