"""One test per error that ``lib.crawling.driver_compat`` tells apart, provoked in real headless Chromium where it
can be, and the crawler's classification of each error class (``page_fetch._classify``). A failure here means
pyppeteer or Chromium changed under us: fix ``lib/crawling/driver_compat.py`` for the new version."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Awaitable, Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from pyppeteer.errors import ElementHandleError, NetworkError, PageError
from pyppeteer.errors import TimeoutError as PyppeteerTimeout
from websockets.exceptions import ConnectionClosedError

from lib.crawling import driver_compat
from lib.crawling.driver import Browser, CallTimeout, NavigationFailed, Tab
from lib.crawling.page_fetch import ErrorKind, _classify


def changed(what: str) -> str:
    return f"{what} changed in pyppeteer {driver_compat.installed_version()}: update lib/crawling/driver_compat.py"


def test_the_installed_pyppeteer_is_the_one_the_texts_were_checked_against():
    assert driver_compat.installed_version() == driver_compat.PYPPETEER_VERSION, changed("the release")


class _Pages(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        body = f"<html><body><p>{self.path}</p></body></html>".encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def site() -> Iterator[str]:
    """A loopback site whose every path is a small page naming it."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Pages)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture
def stalling_site() -> Iterator[str]:
    """A loopback site that sends a page's headers and the start of its body, then nothing more (its document is
    never parsed to the end)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    held: list[socket.socket] = []

    def serve() -> None:
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:  # the listener closed: the test is over
                return
            held.append(connection)
            connection.recv(65536)
            connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n<html><body><p>the start")

    threading.Thread(target=serve, daemon=True).start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}/"
    listener.close()
    for connection in held:
        connection.close()


def in_browser(chromium: str, check: Callable[[Browser], Awaitable[None]]) -> None:
    """``check`` run with a real headless Chromium, closed after it."""

    async def go() -> None:
        browser = await Browser.launch(chromium, no_sandbox=True)
        try:
            await check(browser)
        finally:
            await browser.close()

    asyncio.run(go())


def test_a_call_into_a_document_a_navigation_replaced_is_told(chromium, site):
    async def check(browser: Browser) -> None:
        page = await browser.bare_page()
        await page.goto(site + "/one")
        context = await page.mainFrame.executionContext()
        await page.goto(site + "/two")
        with pytest.raises(NetworkError) as caught:  # Chromium: "Cannot find context with specified id", rewritten
            await context.evaluate("() => document.body.innerHTML")
        assert driver_compat.is_context_lost(caught.value), changed(f"the lost context's text ({caught.value})")

    in_browser(chromium, check)


#: A wait's predicate that counts its polls in the page (``window.polls``) and holds on page ``/two``.
ON_PAGE_TWO = "() => { window.polls = (window.polls || 0) + 1; return document.body.innerText.includes('/two'); }"


async def until_polled(tab: Tab) -> None:
    """Until the page says a wait's evaluation is running in it (bounded by the caller)."""
    while not await tab.evaluate("() => window.polls || 0"):
        pass


def test_a_wait_running_when_its_page_navigates_goes_on_in_the_new_document(chromium, site):
    async def check(browser: Browser) -> None:
        page = await browser.bare_page()
        tab = Tab(page, r"$^")
        await tab.goto(site + "/one", 10)
        running = asyncio.ensure_future(page.evaluate("() => { window.polls = 1; return new Promise(() => {}); }"))
        await asyncio.wait_for(until_polled(tab), 10)
        await tab.goto(site + "/two", 10)
        with pytest.raises(NetworkError) as caught:
            await asyncio.wait_for(running, 10)
        assert driver_compat.is_context_lost(caught.value), changed(f"a navigated call's text ({caught.value})")

        await tab.goto(site + "/one", 10)
        waiting = asyncio.ensure_future(tab.wait_for(ON_PAGE_TWO, 10))
        await asyncio.wait_for(until_polled(tab), 10)  # the wait's evaluation runs in the page as it navigates
        await tab.goto(site + "/two", 10)
        assert await asyncio.wait_for(waiting, 15) is True

    in_browser(chromium, check)


def test_a_wait_that_starts_as_its_page_navigates_goes_on_in_the_new_document(chromium, site):
    async def check(browser: Browser) -> None:
        tab = await browser.new_tab(r"$^", block_resources=False)
        await tab.goto(site + "/one", 10)
        waiting = asyncio.ensure_future(tab.wait_for("() => document.body.innerText.includes('/two')", 10))
        await tab.goto(site + "/two", 10)
        assert await asyncio.wait_for(waiting, 15) is True

    in_browser(chromium, check)


def test_chromiums_reply_for_a_closed_session_is_told(chromium):
    async def check(browser: Browser) -> None:
        tab = await browser.new_tab(r"$^", block_resources=False)
        with pytest.raises(NetworkError) as caught:
            await tab.send("Target.sendMessageToTarget", {"sessionId": "closed-long-ago", "message": "{}"})
        assert driver_compat.is_orphaned_session_reply(caught.value), changed(f"its text ({caught.value})")
        assert not driver_compat.is_context_lost(caught.value)

    in_browser(chromium, check)


def test_a_navigation_chromium_cannot_make_is_a_network_error(chromium):
    async def check(browser: Browser) -> None:
        tab = await browser.new_tab(r"$^", block_resources=False)
        with socket.socket() as unused:  # a port nobody listens on: refused
            unused.bind(("127.0.0.1", 0))
            port = unused.getsockname()[1]
        with pytest.raises(NavigationFailed) as caught:
            await tab.goto(f"http://127.0.0.1:{port}/", 10)
        assert isinstance(caught.value.__cause__, PageError), changed("goto's error for a failed navigation")
        assert _classify(caught.value).kind is ErrorKind.NETWORK

    in_browser(chromium, check)


def test_a_navigation_past_its_time_is_a_timeout(chromium, stalling_site):
    async def check(browser: Browser) -> None:
        page = await browser.bare_page()
        with pytest.raises(PyppeteerTimeout) as caught:
            await asyncio.wait_for(page.goto(stalling_site, waitUntil="domcontentloaded", timeout=300), 10)
        assert _classify(caught.value).kind is ErrorKind.TIMEOUT

    in_browser(chromium, check)


def test_a_failed_evaluation_and_a_closed_tab_are_unknown(chromium):
    async def check(browser: Browser) -> None:
        page = await browser.bare_page()
        with pytest.raises(ElementHandleError) as thrown:
            await page.evaluate("() => { throw new Error('boom') }")
        await page.close()
        with pytest.raises(NetworkError) as closed:
            await page.evaluate("() => 1")
        for error in (thrown.value, closed.value):
            assert _classify(error).kind is ErrorKind.UNKNOWN
            assert not driver_compat.is_context_lost(error) and not driver_compat.is_orphaned_session_reply(error)

    in_browser(chromium, check)


@pytest.mark.parametrize("error, kind", [
    (PyppeteerTimeout("Navigation Timeout Exceeded: 300 ms exceeded."), ErrorKind.TIMEOUT),
    (CallTimeout("timeout: the navigation took over 15.0s"), ErrorKind.TIMEOUT),
    (asyncio.TimeoutError(), ErrorKind.TIMEOUT),
    (TimeoutError("timed out"), ErrorKind.TIMEOUT),  # a socket's: the builtin one (not asyncio's before 3.11)
    (NavigationFailed("net::ERR_CONNECTION_REFUSED at http://127.0.0.1:1/"), ErrorKind.NETWORK),
    (ConnectionClosedError(None, None), ErrorKind.NETWORK),
    (ConnectionError("Connection is closed"), ErrorKind.NETWORK),  # pyppeteer's send on a closed connection
    (ConnectionResetError(104, "reset"), ErrorKind.NETWORK),
    (OSError(101, "Network is unreachable"), ErrorKind.NETWORK),
    (NetworkError("Protocol error Page.navigate: Target closed."), ErrorKind.UNKNOWN),
    (ElementHandleError("Evaluation failed: Error: boom"), ErrorKind.UNKNOWN),
    (PageError("No main frame."), ErrorKind.UNKNOWN),  # not a navigation's error: only goto's are (above)
    # the words of another kind do not make it that kind: the class does
    (RuntimeError("timeout: connection refused"), ErrorKind.UNKNOWN),
])
def test_each_error_class_has_its_kind(error, kind):
    assert _classify(error).kind is kind


def test_the_texts_are_read_from_pyppeteers_classes_only():
    assert driver_compat.is_context_lost(ElementHandleError("ExecutionContext is None."))  # a frame between pages
    assert driver_compat.is_context_lost(NetworkError("Protocol error (Runtime.callFunctionOn): Cannot find "
                                                      "context with specified id"))
    assert not driver_compat.is_context_lost(RuntimeError("Execution context was destroyed"))
    assert not driver_compat.is_orphaned_session_reply(ValueError("No session with given id"))
    assert not driver_compat.is_navigation_failure(RuntimeError("net::ERR_CONNECTION_REFUSED"))
