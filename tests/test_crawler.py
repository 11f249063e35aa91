"""The crawler in real headless Chromium against the local market simulator."""

import asyncio
import json
import os
import signal
import urllib.error
import urllib.request
from collections import Counter

import pytest

from lib.core.redis_client import state_redis
from lib.core.settings import load_settings
from lib.crawling import page_fetch
from lib.crawling.budget import RequestBudget
from lib.crawling.crawl import Crawler, CrawlFailed
from lib.crawling.driver import Browser
from lib.crawling.page_fetch import ErrorKind, PageError, fetch_page, search_url
from lib.crawling.proxies import ProxyRotator

from .helpers import ForwardProxy, alive, simulator_crawl_env, wait_until

KEYWORD = "鬼滅の刃"
ON_SALE, SOLD = {"on_sale"}, {"sold_out", "trading"}


@pytest.fixture
def crawl_env(env, sim, chromium):
    return simulator_crawl_env(env, sim, chromium, PROXY_SWITCH_AFTER="3", PROXY_COOLDOWN="1s")


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


def want_price(truth: dict) -> tuple[int | None, str | None]:
    """The documented rule (docs/concepts/crawling.md, "Prices that are prices"), written out here: a listing flagged as
    having no price, or priced at the placeholder ¥9,999,999, has no price."""
    if truth.get("isNoPrice") is True:
        return None, "no_price"
    if int(truth["price"]) == 9_999_999:
        return None, "placeholder"
    return int(truth["price"]), None


#: A search API name that no longer matches (as when Mercari renames or reshapes it): the DOM path is read.
RENAMED_API = r"/v9/renamed:search"


@pytest.mark.parametrize("path", ["api", "dom"])
def test_a_crawl_reads_every_item_of_every_page_exactly(crawl_env, sim, path):
    settings = load_settings({**crawl_env, **({"MERCARI_API_PATTERN": RENAMED_API} if path == "dom" else {})})

    async def go():
        crawler = Crawler.from_settings(settings)
        try:
            return await crawler.crawl(7, KEYWORD, "t-1")
        finally:
            await crawler.close()

    result = run(go())
    assert result["pages_crawled"] == 10 and result["errors"] == {}
    truth = {x["id"]: x for x in expected(sim, ON_SALE) + expected(sim, SOLD)}
    sizes = [len(sim.truth(KEYWORD, statuses, n)) for statuses in (ON_SALE, SOLD) for n in range(1, 6)]
    assert sum(size < 120 for size in sizes) >= 3  # as on the real site, most pages are a few listings short
    got = {x["source_id"]: x for x in result["items"]}
    assert got.keys() == truth.keys() and len(got) == sum(sizes)
    flags = set()
    for sid, t in truth.items():
        g = got[sid]
        price, flag = want_price(t)
        assert g["title"] == t["name"]
        assert g["price"] == price
        if path == "api":
            assert g["price_flag"] == flag
            assert g["created"] == int(t["created"])
        else:  # the cells cannot tell a no-price flag from the placeholder, and carry no creation time
            assert (g["price_flag"] is None) == (flag is None)
            assert g["created"] is None
        flags.add(flag)
        assert g["status"] == ("on_sale" if t["status"] == "ITEM_STATUS_ON_SALE" else "sold")
        kind = "/item/" if t["itemType"] == "ITEM_TYPE_MERCARI" else "/shops/product/"
        assert g["item_url"] == sim.url + kind + sid
    assert {"no_price", "placeholder", None} <= flags  # both kinds of priceless listings were on these pages
    assert {t["status"] for t in truth.values()} >= {"ITEM_STATUS_SOLD_OUT", "ITEM_STATUS_TRADING"}
    assert any("/shops/product/" in g["item_url"] for g in got.values())
    # the market's size: the site's count per search (the API's numFound; the DOM does not show it)
    for label, statuses in (("on_sale", ON_SALE), ("sold", SOLD)):
        _, found = sim.page_items(KEYWORD, statuses, 1, sim.clock.now())
        assert result["search"][label] == {"num_found": found if path == "api" else None, "pages": 5,
                                           "items": len(expected(sim, statuses)), "ended": False}
    sources = [p["source"] for p in result["drift"]["pages"]]
    assert sources == [path] * 10 and [p["items"] for p in result["drift"]["pages"]] == sizes
    assert all(p["has_next"] for p in result["drift"]["pages"])
    # a page a few listings short of 120 with a next page is whole: no drift signal says otherwise
    assert not [p for p in result["drift"]["pages"] if "short_page" in p["anomalies"]]
    if path == "dom":  # the page rendered while no API response was captured: a drift signal on every page
        assert all(p["anomalies"].get("api_missing") == 1 for p in result["drift"]["pages"])
    else:  # the first page of each search was cross-checked against its cells, without disagreement
        first = [p["anomalies"] for p in result["drift"]["pages"] if p["page"] == 1]
        assert all(a.get("cross_checked", 0) > 0 and "cross_check_disagreement" not in a for a in first)


def last_page_keyword(sim, statuses):
    """A keyword whose last page holds more items than the page renders before its lazy load (60)."""
    for n in range(200):
        keyword = f"{KEYWORD} {n}"
        _, found = sim.page_items(keyword, statuses, 1, sim.clock.now())
        if found % 120 > 60:
            return keyword, found // 120 + 1
    raise AssertionError("no such keyword")


@pytest.mark.parametrize("script", ["BACK_TO_TOP", "FIRST_READ"])
def test_back_at_the_top_the_list_is_rendered_there(crawl_settings, sim, chromium, script):
    """A virtual list renders a scroll on its ``scroll`` event, a frame after ``scrollTo``: a read right after
    the person's scrolling (or the DOM path's first read) ended must see the page's first listings, not the cells
    of where it had been scrolled to (CI once saw the DOM path miss the first 4 listings of page 1)."""
    truth = sim.truth(KEYWORD, ON_SALE, 1)

    async def go():
        browser = await Browser.launch(chromium, no_sandbox=True)
        try:
            tab = await browser.new_tab(crawl_settings.mercari_api_pattern, True)
            await tab.goto(search_url(sim.url, KEYWORD, "on_sale", 1), 15, read_text=False)
            await tab.wait_for("() => document.querySelector('a[data-testid=\"thumbnail-link\"]')", 15)
            # well down the list, rendered there; then the script, and a read in the same task (no frame between)
            down = await tab.evaluate("""async () => {
              window.scrollBy(0, 1500);
              await new Promise(r => setTimeout(r, 300));
              return document.querySelector('a[data-testid="thumbnail-link"]').getAttribute('href');
            }""")
            at_top = await tab.evaluate(f"""async () => {{
              await ({getattr(page_fetch, script)})([]);
              return document.querySelector('a[data-testid="thumbnail-link"]').getAttribute('href');
            }}""")
            return down, at_top
        finally:
            await browser.close()

    down, at_top = run(go())
    assert not down.endswith(truth[0]["id"])  # the scroll down was rendered: the first listing had gone
    assert at_top.endswith("/" + truth[0]["id"])


@pytest.mark.parametrize("statuses, param", [(ON_SALE, "on_sale"), (SOLD, "sold_out|trading")])
def test_the_dom_alone_reads_full_and_last_pages(crawl_settings, sim, chromium, statuses, param):
    """Without the captured API response: the virtual list (~20 cells live at a time) is scrolled, the lazily
    loaded second part of each page is waited for, and the next-page control decides whether there is more."""
    keyword, last = last_page_keyword(sim, statuses)

    async def go():
        browser = await Browser.launch(chromium, no_sandbox=True)
        try:
            tab = await browser.new_tab(crawl_settings.mercari_api_pattern, True)
            return [await fetch_page(tab, search_url(sim.url, keyword, param, n), sim.url, timeout=15,
                                     first_page=n == 1, use_api=False) for n in (1, last)]
        finally:
            await browser.close()

    pages = run(go())
    for result, n in zip(pages, (1, last)):
        truth = sim.truth(keyword, statuses, n)
        assert result.source == "dom" and result.has_next == (n != last)
        assert [x["source_id"] for x in result.items] == [t["id"] for t in truth]
        assert [x["price"] for x in result.items] == [want_price(t)[0] for t in truth]
        assert not set(result.anomalies) - {"dom_gap"}  # a gap (a late render) is read again, and said
        # the lazy load is waited for where it comes; only the end of the last page is waited out (quiet)
        assert result.waited_out == ({} if n != last else {"quiet": 1})


def short_page(sim) -> tuple[set[str], int, list[dict]]:
    """A page a few listings short of 120 that has a next page (most are: the site drops the listings it
    filters; see lib/standins/simulator/market.py): its statuses, number and truth."""
    for statuses in (ON_SALE, SOLD):
        for n in range(1, 6):
            truth = sim.truth(KEYWORD, statuses, n)
            if len(truth) < 120:
                return statuses, n, truth
    raise AssertionError("every page full")


def test_pages_short_of_120_are_whole_and_a_page_cut_short_is_noticed(crawl_settings, sim, chromium, monkeypatch):
    """A page with a next page and a few listings short of 120 (as the real site's are) is read whole on both
    paths without waiting for more at its bottom, and counts no ``short_page``; a page that stops rendering
    after 40 listings (its lazy load never comes) waits its lazy-load wait out and counts one."""
    # the cut-short page's lazy load never comes: waiting for it the full 5 s twice would only slow the test
    monkeypatch.setattr(page_fetch, "LAZY_WAIT", 1.5)
    statuses, n, truth = short_page(sim)
    url = search_url(sim.url, KEYWORD, "on_sale" if statuses == ON_SALE else "sold_out|trading", n)

    async def go():
        browser = await Browser.launch(chromium, no_sandbox=True)
        try:
            tab = await browser.new_tab(crawl_settings.mercari_api_pattern, True)
            dom = await fetch_page(tab, url, sim.url, timeout=15, first_page=False, use_api=False)
            api = await fetch_page(tab, url, sim.url, timeout=15, first_page=False)
            sim.set_mode("cut_short", count=1)
            cut = await fetch_page(tab, url, sim.url, timeout=15, first_page=False, use_api=False)
            sim.set_mode("cut_short", count=1)
            cut_api = await fetch_page(tab, url, sim.url, timeout=15, first_page=False)
            return dom, api, cut, cut_api
        finally:
            await browser.close()

    dom, api, cut, cut_api = run(go())
    ids = [t["id"] for t in truth]
    for result, source in ((dom, "dom"), (api, "api")):
        assert result.source == source and result.has_next
        assert [x["source_id"] for x in result.items] == ids
        assert [x["price"] for x in result.items] == [want_price(t)[0] for t in truth]
        assert "short_page" not in result.anomalies
    assert dom.waited_out == {}  # complete at its bottom: no lazy-load wait spent on it
    # cut short: what rendered is read, and the page is said to be short (a drift signal)
    assert cut.source == "dom" and cut.has_next and [x["source_id"] for x in cut.items] == ids[:40]
    assert cut.anomalies["short_page"] == 1 and cut.waited_out == {"lazy_load": 1}
    # the API path reads the page's answer, whole whatever the page renders
    assert cut_api.source == "api" and [x["source_id"] for x in cut_api.items] == ids


def test_the_simulator_flatters_no_crawler(sim, chromium):
    """The simulator's page offers nothing the real one lacks: no helper global, an API that refuses requests
    without the page's own headers, the no-results text only inside a <template> of the raw HTML."""
    url = search_url(sim.url, KEYWORD, "on_sale", 1)
    raw = urllib.request.urlopen(url, timeout=10).read().decode()
    assert "出品された商品がありません" in raw.split("<template")[1].split("</template>")[0]
    request = urllib.request.Request(sim.url + "/v2/entities:search", method="POST",
                                     data=json.dumps({"searchCondition": {"keyword": KEYWORD}}).encode(),
                                     headers={"Content-Type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=10)
    assert refused.value.code == 401

    async def go():
        browser = await Browser.launch(chromium, no_sandbox=True)
        try:
            blank = await browser.new_tab(r"$^", True)
            await blank.goto(sim.url + "/item/m10000000001", 10)  # a plain page of the same origin
            baseline = set(await blank.evaluate("() => Object.keys(window)"))
            tab = await browser.new_tab(r"$^", True)
            await tab.goto(url, 10)
            await tab.wait_for("() => document.querySelector('a[data-testid=\"thumbnail-link\"]')", 10)  # a node: found
            return set(await tab.evaluate("() => Object.keys(window)")) - baseline, \
                await tab.evaluate("() => document.body.innerText")
        finally:
            await browser.close()

    extra, text = run(go())
    assert extra == set()
    assert "出品された商品がありません" not in text


@pytest.mark.parametrize("mode, kind", [
    ("403", ErrorKind.BLOCKED), ("429", ErrorKind.THROTTLED), ("challenge", ErrorKind.BLOCKED),
    ("captcha", ErrorKind.BLOCKED), ("soft_block", ErrorKind.BLOCKED), ("slow", ErrorKind.TIMEOUT),
])
def test_each_block_kind_is_detected(sim, chromium, mode, kind):
    async def go():
        browser = await Browser.launch(chromium, no_sandbox=True)
        try:
            tab = await browser.new_tab(r"/v2/entities:search", True)
            sim.set_mode(mode, count=1, delay_ms=6000, retry_after=7)
            timeout = 3 if mode == "slow" else 60
            with pytest.raises(PageError) as e:
                # bounded well below the page timeout: a block is classed from what arrives, not by waiting
                await asyncio.wait_for(fetch_page(tab, search_url(sim.url, KEYWORD, "on_sale", 1), sim.url,
                                                  timeout=timeout, first_page=False), 20)
            assert e.value.kind == kind
            if mode == "soft_block":
                assert e.value.detail.startswith("soft block: no items while numFound=")
            assert e.value.retry_after == (7 if mode == "429" else None)
            # and the next page is fine again
            ok = await fetch_page(tab, search_url(sim.url, KEYWORD, "on_sale", 1), sim.url, timeout=15,
                                  first_page=False)
            assert len(ok.items) == len(sim.truth(KEYWORD, ON_SALE, 1))
        finally:
            await browser.close()

    run(go())


def crawl_after_a_429(crawl_env, sim, retry_after: int, task_id: str, budget: int = 0):
    """A 3+1-page crawl whose first page answers 429 with ``Retry-After``, under a request budget of ``budget``
    page loads a minute (0: none); (the crawl's result or its ``CrawlFailed``, the simulator's page log of the
    crawl)."""
    settings = load_settings({**crawl_env, "SCHEDULER_PAGES_ON_SALE": "3", "SCHEDULER_PAGES_SOLD": "1",
                              "CRAWL_RATE_LIMIT": str(budget)})

    async def go():
        crawler = Crawler.from_settings(settings)
        try:
            sim.set_mode("429", count=1, retry_after=retry_after)
            return await crawler.crawl(1, KEYWORD, task_id)
        finally:
            await crawler.close()

    before = len(sim.page_log)
    try:
        outcome: dict | CrawlFailed = run(go())
    except CrawlFailed as e:
        outcome = e
    return outcome, sim.page_log[before:]


def test_retry_after_is_honoured_and_the_429_cuts_the_address_budget(crawl_env, sim):
    result, log = crawl_after_a_429(crawl_env, sim, 3, "t-429", budget=10)
    assert isinstance(result, dict), result
    assert result["errors"] == {"on_sale:1": "throttled"} and result["pages_crawled"] == 3
    assert log[0][1] == "429" and log[1][0] - log[0][0] >= 3.0  # the next request waited as asked
    # the whole fleet's budget for this address (no proxy) is halved (lib/crawling/budget.py)
    settings = load_settings(crawl_env)
    assert RequestBudget(10, lambda: state_redis(settings)).now("direct").limit == 5


def test_a_retry_after_too_long_ends_the_crawl(crawl_env, sim):
    failed, log = crawl_after_a_429(crawl_env, sim, 3600, "t-429-long")
    assert isinstance(failed, CrawlFailed), failed
    assert failed.errors == {"on_sale:1": "throttled"} and len(log) == 1


def test_no_results_modal_and_malformed_cells(sim, chromium):
    async def go():
        browser = await Browser.launch(chromium, no_sandbox=True)
        try:
            tab = await browser.new_tab(r"/v2/entities:search", True)
            sim.set_mode("scrim", count=1)
            covered = await fetch_page(tab, search_url(sim.url, KEYWORD, "on_sale", 1), sim.url, timeout=15,
                                       first_page=False, use_api=False)
            sim.set_mode("malformed", count=1)
            broken = await fetch_page(tab, search_url(sim.url, KEYWORD, "on_sale", 1), sim.url, timeout=15,
                                      first_page=False, use_api=False)
            sim.set_mode("malformed", count=1)
            checked = await fetch_page(tab, search_url(sim.url, KEYWORD, "on_sale", 1), sim.url, timeout=15,
                                       first_page=False, cross_check=True)
            empty = [await fetch_page(tab, search_url(sim.url, "該当なし グッズ", "on_sale", 1), sim.url,
                                      timeout=15, first_page=False, use_api=use_api) for use_api in (True, False)]
            return covered, broken, checked, empty
        finally:
            await browser.close()

    covered, broken, checked, empty = run(go())
    truth = {t["id"]: t for t in sim.truth(KEYWORD, ON_SALE, 1)}
    assert len(covered.items) == len(truth)
    # every tenth cell from the fourth (index 3, 13, 23, ...) is broken, in turn without link, name, price; a page
    # holds a few less than 120 listings (some hidden, as on the real site), so the last ones may not be there
    broken_cells = Counter(("link", "name", "price")[(index // 10) % 3] for index in range(3, len(truth), 10))
    assert broken_cells["link"] >= 3 and broken_cells["price"] >= 3
    assert len(broken.items) == len(truth) - broken_cells["link"]
    assert [broken.anomalies[f"cell_without_{kind}"] for kind in ("link", "name", "price")] == [
        broken_cells[kind] for kind in ("link", "name", "price")]
    for item in broken.items:
        assert item["title"] == truth[item["source_id"]]["name"]  # a missing name is read off the image label
        assert item["price"] == want_price(truth[item["source_id"]])[0]  # a missing price too
    assert checked.source == "api" and len(checked.items) == len(truth)  # the API path does not mind broken cells
    assert empty[0].items == [] and empty[0].num_found == 0 and empty[1].items == [] and not empty[1].has_next


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
    assert result["pages_crawled"] == 3 and len(result["items"]) == sum(
        len(sim.truth(KEYWORD, statuses, n)) for statuses, n in ((ON_SALE, 4), (ON_SALE, 5), (SOLD, 1)))


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
    assert len(result.items) == len(sim.truth(KEYWORD, ON_SALE, 1))
    assert len(after.items) == len(sim.truth(KEYWORD, ON_SALE, 2))
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


@pytest.mark.parametrize("block", [True, False])
def test_a_browser_that_blocks_resources_requests_no_image(crawl_env, sim, block):
    """``CRAWL_BLOCK_RESOURCES``: the crawler's browser does not request the thumbnails at all (dropping each
    request through the Fetch domain cost a round trip to the crawler per image, at every render of the list);
    without it they are requested."""
    settings = load_settings({**crawl_env, "CRAWL_BLOCK_RESOURCES": str(block).lower()})
    images: list[str] = []

    async def go():
        crawler = Crawler.from_settings(settings)
        try:
            async with crawler.manager.tab() as tab:
                tab._page.on("request", lambda r: images.append(r.url) if r.resourceType == "image" else None)
                for n in (1, 2):  # page 2's navigation comes after every request page 1's cells made
                    await fetch_page(tab, search_url(sim.url, KEYWORD, "on_sale", n), sim.url, timeout=15,
                                     first_page=n == 1)
                    await tab.wait_for("() => document.querySelector('li[data-testid=\"item-cell\"] img')", 15)
                if not block:
                    await wait_until(lambda: images, timeout=15)
        finally:
            await crawler.close()

    run(go())
    assert bool(images) is not block, images[:3]
