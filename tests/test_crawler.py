"""The crawler in real headless Chromium against the local market simulator."""

import asyncio
import os
import signal

import pytest

from lib.core.settings import load_settings
from lib.crawling.crawl import Crawler, CrawlFailed
from lib.crawling.driver import Browser
from lib.crawling.page_fetch import ErrorKind, PageError, fetch_page, search_url
from lib.crawling.proxies import ProxyRotator
from lib.standins.simulator import MarketSimulator

from .helpers import ForwardProxy, alive, wait_until

KEYWORD = "鬼滅の刃"
ON_SALE, SOLD = {"on_sale"}, {"sold_out", "trading"}


@pytest.fixture
def sim():
    server = MarketSimulator(speed=0).start()  # a frozen market: ground truth does not move during a crawl
    yield server
    server.stop()


@pytest.fixture
def crawl_env(env, sim, chromium):
    return {**env, "MERCARI_BASE_URL": sim.url, "CHROMIUM_PATH": chromium, "CHROMIUM_NO_SANDBOX": "true",
            "CRAWL_PAGE_TIMEOUT": "15s", "PROXY_SWITCH_AFTER": "3", "PROXY_COOLDOWN": "1s"}


@pytest.fixture
def crawl_settings(crawl_env):
    return load_settings(crawl_env)


def run(coro):
    return asyncio.run(coro)


def expected(sim, statuses, pages=5):
    out = []
    for page in range(1, pages + 1):
        out += sim.truth(KEYWORD, statuses, page)
    return out


def test_a_crawl_reads_every_item_of_every_page_exactly(crawl_settings, sim):
    async def go():
        crawler = Crawler.from_settings(crawl_settings)
        try:
            return await crawler.crawl(7, KEYWORD, "t-1")
        finally:
            await crawler.close()

    result = run(go())
    assert result["pages_crawled"] == 10 and result["errors"] == {}
    truth = {x["id"]: x for x in expected(sim, ON_SALE) + expected(sim, SOLD)}
    got = {x["source_id"]: x for x in result["items"]}
    assert got.keys() == truth.keys() and len(got) == 1200
    for sid, t in truth.items():
        g = got[sid]
        assert g["title"] == t["name"]
        assert g["price"] == (int(t["price"]) if "price" in t else None)
        assert g["status"] == ("on_sale" if t["status"] == "ITEM_STATUS_ON_SALE" else "sold")
        assert g["created"] == int(t["created"])
        assert g["item_url"].endswith(("/item/" if t["itemType"] == "ITEM_TYPE_MERCARI" else "/shops/product/") + sid)
    assert any(g["price"] is None for g in got.values())  # no-price listings came through as such
    assert any("/shops/product/" in g["item_url"] for g in got.values())


@pytest.mark.parametrize("statuses, param", [(ON_SALE, "on_sale"), (SOLD, "sold_out|trading")])
def test_the_virtual_list_alone_yields_every_item(crawl_settings, sim, chromium, statuses, param):
    """Without the captured API response, the DOM path scrolls the virtual list (~20 cells live at a time)."""
    async def go():
        browser = await Browser.launch(chromium, no_sandbox=True)
        try:
            tab = await browser.new_tab(crawl_settings.mercari_api_pattern, True)
            return [await fetch_page(tab, search_url(sim.url, KEYWORD, param, n), sim.url, timeout=15,
                                     first_page=n == 1, use_api=False) for n in (1, 3)]
        finally:
            await browser.close()

    pages = run(go())
    for result, n in zip(pages, (1, 3)):
        truth = sim.truth(KEYWORD, statuses, n)
        assert result.source == "dom"
        assert [x["source_id"] for x in result.items] == [t["id"] for t in truth]
        assert [x["price"] for x in result.items] == [int(t["price"]) if "price" in t else None for t in truth]


@pytest.mark.parametrize("mode, kind", [
    ("403", ErrorKind.BLOCKED), ("429", ErrorKind.BLOCKED), ("challenge", ErrorKind.BLOCKED),
    ("captcha", ErrorKind.BLOCKED), ("soft_block", ErrorKind.BLOCKED), ("slow", ErrorKind.TIMEOUT),
])
def test_each_block_kind_is_detected(sim, chromium, mode, kind):
    async def go():
        browser = await Browser.launch(chromium, no_sandbox=True)
        try:
            tab = await browser.new_tab(r"/v2/entities:search", True)
            sim.set_mode(mode, count=1, delay_ms=6000)
            with pytest.raises(PageError) as e:
                await fetch_page(tab, search_url(sim.url, KEYWORD, "on_sale", 1), sim.url, timeout=3,
                                 first_page=False)
            assert e.value.kind == kind
            # and the next page is fine again
            ok = await fetch_page(tab, search_url(sim.url, KEYWORD, "on_sale", 1), sim.url, timeout=15,
                                  first_page=False)
            assert len(ok.items) == 120
        finally:
            await browser.close()

    run(go())


def test_no_results_modal_and_malformed_cells(sim, chromium):
    async def go():
        browser = await Browser.launch(chromium, no_sandbox=True)
        try:
            tab = await browser.new_tab(r"/v2/entities:search", True)
            sim.set_mode("scrim", count=1)
            covered = await fetch_page(tab, search_url(sim.url, KEYWORD, "on_sale", 1), sim.url, timeout=15,
                                       first_page=False)
            sim.set_mode("malformed", count=1)
            broken = await fetch_page(tab, search_url(sim.url, KEYWORD, "on_sale", 1), sim.url, timeout=15,
                                      first_page=False, use_api=False)
            empty = await fetch_page(tab, search_url(sim.url, "該当なし グッズ", "on_sale", 1), sim.url,
                                     timeout=15, first_page=False)
            return covered, broken, empty
        finally:
            await browser.close()

    covered, broken, empty = run(go())
    assert len(covered.items) == 120
    truth = {t["id"]: t for t in sim.truth(KEYWORD, ON_SALE, 1)}
    assert 100 < len(broken.items) < 120  # cells without a link are skipped, the rest read
    for item in broken.items:
        assert item["source_id"] in truth
        assert item["title"] == truth[item["source_id"]]["name"]  # a missing name is read off the image label
        want = truth[item["source_id"]].get("price")
        assert item["price"] == (int(want) if want else None)  # a missing price is read off the label too
    assert empty.items == [] and empty.num_found == 0


def test_proxy_switch_after_consecutive_failures(crawl_env, sim):
    proxy = ForwardProxy()
    settings = load_settings({**crawl_env, "PROXY_URLS": f"http://127.0.0.1:1,{proxy.url}",
                              "SCHEDULER_PAGES_ON_SALE": "5", "SCHEDULER_PAGES_SOLD": "1"})

    async def go():
        crawler = Crawler.from_settings(settings)  # starts on the first proxy, which is dead
        try:
            result = await crawler.crawl(1, KEYWORD, "t-proxy")
            return result, crawler.manager.proxy, crawler.manager.restarts
        finally:
            await crawler.close()

    try:
        result, current, restarts = run(go())
    finally:
        proxy.stop()
    # three network failures in a row (PROXY_SWITCH_AFTER=3) → health check → switch (draining restart)
    assert result["errors"] == {"on_sale:1": "network", "on_sale:2": "network", "on_sale:3": "network"}
    assert current == proxy.url and restarts == 1
    assert proxy.requests > 0  # the later pages really went through the new proxy
    assert result["pages_crawled"] == 3 and len(result["items"]) == 360


def test_proxy_rotation_rules():
    now = [0.0]
    checks = []
    rotator = ProxyRotator(("http://a", "http://b", "http://c"), switch_after=3, cooldown=1800,
                           check_url="http://x", check=lambda p, u: checks.append(p) or p != "http://b",
                           clock=lambda: now[0])
    assert rotator.record(ErrorKind.BLOCKED) is False and rotator.record(ErrorKind.TIMEOUT) is False
    assert rotator.record(None) is False  # a success resets the streak
    for _ in range(2):
        assert rotator.record(ErrorKind.NETWORK) is False
    assert rotator.record(ErrorKind.PARSE) is False  # parse errors are the page's fault, not the proxy's
    for _ in range(2):
        rotator.record(ErrorKind.BLOCKED)
    assert rotator.record(ErrorKind.BLOCKED) == "http://c"  # b failed its health check
    for _ in range(5):
        assert rotator.record(ErrorKind.BLOCKED) is False  # cooldown
    now[0] = 1801
    assert rotator.record(ErrorKind.BLOCKED) == "http://a"
    assert "http://a" not in checks[:1]  # the current proxy is never "switched" to itself
    lone = ProxyRotator((), switch_after=2, cooldown=0, check_url="x")
    lone.record(ErrorKind.BLOCKED), lone.record(ErrorKind.BLOCKED)
    assert lone.backoff() > 0  # no proxies: back off and keep going


def test_draining_restart_loses_no_page_in_flight(crawl_settings, sim):
    async def go():
        crawler = Crawler.from_settings(crawl_settings)
        manager = crawler.manager
        try:
            sim.set_mode("slow", delay_ms=2000)

            async def read_slowly():
                async with manager.tab() as tab:
                    return await fetch_page(tab, search_url(sim.url, KEYWORD, "on_sale", 1), sim.url, timeout=15,
                                            first_page=False)

            api_calls = sim.counters["api"]
            in_flight = asyncio.ensure_future(read_slowly())
            await wait_until(lambda: sim.counters["api"] > api_calls, what="the slow page's API call in flight")
            old_pid = manager.browser_pid
            await manager.restart("test", None)
            new_pid = manager.browser_pid
            result = await in_flight
            sim.set_mode("normal")
            async with manager.tab() as tab:
                after = await fetch_page(tab, search_url(sim.url, KEYWORD, "on_sale", 2), sim.url, timeout=15,
                                         first_page=False)
            await wait_until(lambda: not alive(old_pid), timeout=5, what="the old browser to exit")
            return result, after, old_pid, new_pid
        finally:
            await crawler.close()

    result, after, old_pid, new_pid = run(go())
    assert len(result.items) == 120 and len(after.items) == 120
    assert old_pid != new_pid and not alive(old_pid)  # the old browser was closed once its page was done


@pytest.mark.slow
def test_a_browser_killed_mid_crawl_costs_at_most_that_crawl(crawl_settings, sim):
    async def go():
        crawler = Crawler.from_settings(crawl_settings)
        try:
            sim.set_mode("slow", delay_ms=1500)
            api_calls = sim.counters["api"]
            crawl = asyncio.ensure_future(crawler.crawl(3, KEYWORD, "t-killed"))
            # mid-crawl: the browser is up and a (slow) page of the crawl is in flight
            await wait_until(lambda: crawler.manager.browser_pid and sim.counters["api"] > api_calls,
                             what="the crawl's first page in flight")
            killed = crawler.manager.browser_pid
            os.kill(killed, signal.SIGKILL)
            try:
                first = await crawl
            except CrawlFailed as e:
                first = e
            sim.set_mode("normal")
            second = await crawler.crawl(3, KEYWORD, "t-after")
            return killed, first, second, crawler.manager.browser_pid
        finally:
            await crawler.close()

    killed, first, second, pid = run(go())
    assert pid != killed
    assert second["pages_crawled"] == 10 and second["errors"] == {}
    if isinstance(first, dict):  # the rest of that crawl already ran on a new browser
        assert first["errors"]


def test_chromium_starts_under_a_long_tmpdir(chromium, tmp_path, monkeypatch):
    """Chromium exits silently when its sockets' paths run past 108 bytes: a long TMPDIR (a deep CI or pytest
    temporary directory) must not keep the crawler from starting."""
    import tempfile

    deep = tmp_path / ("d" * 100)
    deep.mkdir()
    monkeypatch.setenv("TMPDIR", str(deep))
    monkeypatch.setattr(tempfile, "tempdir", None)  # gettempdir() reads TMPDIR again

    async def go():
        browser = await Browser.launch(chromium, no_sandbox=os.geteuid() == 0)
        try:
            tab = await browser.new_tab(r"$^", block_resources=False)
            return await tab.evaluate("() => 6 * 7")
        finally:
            await browser.close()

    assert run(go()) == 42
