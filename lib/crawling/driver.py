"""The only module that talks to pyppeteer (unmaintained): moving to another CDP client is a one-module change.

What it offers the rest of the crawler: launch a browser (``Browser``), open
a page (``Tab``) with the stealth script, resource blocking through the CDP
Fetch domain (``Network.setRequestInterception`` no longer exists in today's
Chromium) and capture of the search API's JSON responses.
"""

from __future__ import annotations

import asyncio
import fnmatch
import inspect
import logging
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import warnings
from collections.abc import Awaitable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import unquote, urlsplit

from lib.crawling import driver_compat, loop_errors
from lib.crawling.selectors import ANALYTICS_URL_PATTERNS, BLOCKED_RESOURCE_TYPES
from lib.crawling.waits import result_within, retrieve, within

logger = logging.getLogger(__name__)
T = TypeVar("T")

#: Chromium puts unix sockets in its profile and temporary directories and exits at once, without a word,
#: when their paths are longer than the kernel allows (108 bytes): with a long TMPDIR both go under /tmp.
TMPDIR_MAX = 60


def _short_tmpdir() -> str:
    parent = tempfile.gettempdir()
    if len(parent) > TMPDIR_MAX and os.access("/tmp", os.W_OK):
        return "/tmp"
    return parent

CHROMIUM_CANDIDATES = ("/usr/lib/chromium/chromium", "/usr/bin/chromium", "/usr/bin/chromium-browser",
                       "/usr/bin/google-chrome", "/usr/bin/google-chrome-stable")

#: Flags that keep a headless Chromium quiet on a closed network (no update, sync or metrics calls), and a
#: renderer from being throttled or backgrounded. The second group comes from the default arguments of Puppeteer
#: (puppeteer-core, ChromeLauncher.defaultArgs) and Playwright (playwright-core, chromiumSwitches.ts), both of
#: which pass every one of them today; pyppeteer's own defaults date from 2020 and have only the first:
#: - ``--disable-background-timer-throttling``: timers of a page Chromium thinks is in the background keep
#:   their pace (the in-page waits below end on timers);
#: - ``--disable-backgrounding-occluded-windows``, ``--disable-renderer-backgrounding``: a window Chromium
#:   thinks is covered, and its renderer, keep their priority and keep producing frames;
#: - ``--disable-ipc-flooding-protection``: many CDP calls in a row are not rate-limited by the browser;
#: - ``--disable-hang-monitor``: a renderer busy for a while is not reported as hung;
#: - ``CalculateNativeWinOcclusion`` (in ``--disable-features``; Puppeteer disabled it until 2024): Chromium
#:   does not compute whether a window is covered (Windows only, harmless elsewhere).
#: Chromium reads only the last ``--disable-features``: every feature goes in this one (pyppeteer's
#: ``--disable-features=site-per-process`` comes first and is overridden, as it was before).
BASE_ARGS = ("--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
             "--disable-features=Translate,MediaRouter,CalculateNativeWinOcclusion", "--mute-audio",
             "--window-size=1280,900",
             "--disable-background-timer-throttling", "--disable-backgrounding-occluded-windows",
             "--disable-renderer-backgrounding", "--disable-ipc-flooding-protection", "--disable-hang-monitor")

#: Bound of a CDP call outside a page's own deadline (opening, preparing and closing a tab): the page timeout
#: where the crawler gives one (``Tab``'s ``call_timeout``).
CALL_TIMEOUT = 30.0
#: How long a tab may take to produce an animation frame once asked, before it is said to have stopped
#: rendering (a loaded machine takes tens of milliseconds).
FRAME_WAIT = 2.0
#: While a long in-page evaluation (a read of the list) runs, how often the tab is checked for frames.
FRAME_CHECK = 3.0
#: Added to an in-page wait's own time limit for the crawler's bound on it (the round trip, a busy renderer).
WAIT_SLACK = 2.0
#: The longest a tab's close, a browser's close or a killed Chromium's exit is waited for.
CLOSE_TIMEOUT = 10.0
#: The item API a listing's page GETs (``https://api.mercari.jp/items/get?id=m…``, take-kun/mercapi
#: tests/cassettes/test_item.yml): captured like the search API's answers.
ITEM_API = re.compile(r"/items/get\?")
#: The longest Chromium may take to start and accept the CDP connection (pyppeteer's own limit was 30 s, on
#: only part of the start).
LAUNCH_TIMEOUT = 30.0
#: A tab's frame probe: a requested animation frame, or ``false`` when a timer comes first (a page whose timers
#: stopped too leaves the bound on the crawler's side).
_FRAME = "(ms) => new Promise(r => { requestAnimationFrame(() => r(true)); setTimeout(() => r(false), ms); })"

USER_AGENT = ("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
              "Chrome/156.0.0.0 Safari/537.36")

STEALTH = r"""
Object.defineProperty(navigator, 'webdriver', {get: () => undefined});
Object.defineProperty(navigator, 'languages', {get: () => ['ja-JP', 'ja', 'en-US']});
Object.defineProperty(navigator, 'plugins', {get: () => [1, 2, 3, 4, 5]});
window.chrome = window.chrome || {runtime: {}};
const originalQuery = window.navigator.permissions && window.navigator.permissions.query;
if (originalQuery) {
  window.navigator.permissions.query = (p) => p && p.name === 'notifications'
    ? Promise.resolve({state: Notification.permission}) : originalQuery(p);
}
try {
  const getParameter = WebGLRenderingContext.prototype.getParameter;
  WebGLRenderingContext.prototype.getParameter = function (p) {
    if (p === 37445) return 'Intel Inc.';
    if (p === 37446) return 'Intel Iris OpenGL Engine';
    return getParameter.call(this, p);
  };
} catch (e) {}
"""


class DriverError(RuntimeError):
    """The browser could not be started or has gone away."""


class CallTimeout(asyncio.TimeoutError):
    """A CDP call (an evaluation, a navigation, a response body) outlived its deadline: an
    ``asyncio.TimeoutError``, which the crawler classes as a page timeout."""


class NavigationFailed(Exception):
    """Chromium could not make a navigation (its ``net::ERR_...``: no name resolution, refused, reset, the
    proxy): the crawler classes it as a network error."""


class RenderingStopped(Exception):
    """The tab stopped producing animation frames (its page is frozen, hidden or starved): nothing that waits on
    a frame will end there. ``visible``: the page's visibility then (None if it could not be read)."""

    def __init__(self, detail: str, visible: bool | None) -> None:
        super().__init__(detail)
        self.visible = visible


def find_chromium(configured: str | None) -> str:
    if configured:
        if not os.access(configured, os.X_OK):
            raise DriverError(f"CHROMIUM_PATH={configured} is not an executable file")
        return configured
    for candidate in CHROMIUM_CANDIDATES:
        if os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which("chromium") or shutil.which("google-chrome")
    if found:
        return found
    raise DriverError("no Chromium found: install it (apt-get install chromium) or set CHROMIUM_PATH")


SANDBOX_AS_ROOT = ("Chromium cannot run sandboxed as root: run the crawler as an unprivileged user (safer), or set "
                   "CHROMIUM_NO_SANDBOX=true to turn Chromium's sandbox off (see docs/reliability/security.md)")


def check_sandbox(no_sandbox: bool) -> None:
    """Refuse at once, naming the setting, what Chromium would refuse with a cryptic message: its sandbox as root."""
    if os.geteuid() == 0 and not no_sandbox:
        raise DriverError(SANDBOX_AS_ROOT)


def proxy_server(proxy: str) -> str:
    """The proxy for ``--proxy-server``: scheme, host and port only. Chromium takes no credentials there, and a
    command line is readable by every local user (``ps``, ``/proc/PID/cmdline``); they go over CDP instead."""
    parts = urlsplit(proxy)
    return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}"


def proxy_credentials(proxy: str | None) -> tuple[str, str] | None:
    """(user, password) of a proxy URL, if it has any."""
    if not proxy:
        return None
    parts = urlsplit(proxy)
    if parts.username is None and parts.password is None:
        return None
    return unquote(parts.username or ""), unquote(parts.password or "")


def chromium_args(*, no_sandbox: bool, proxy: str | None = None, images: bool = True) -> list[str]:
    """Chromium's command-line flags. ``--no-sandbox`` only when asked (``CHROMIUM_NO_SANDBOX``); never a
    proxy's credentials. ``images=False``: pages request no images at all (the renderer does not load them),
    where blocking them through the Fetch domain costs a round trip to the crawler per image (a search page
    renders 20 thumbnails, and again at each scroll of its virtual list)."""
    args = list(BASE_ARGS)
    if not images:
        args.append("--blink-settings=imagesEnabled=false")
    if no_sandbox:
        args.append("--no-sandbox")
    if proxy:
        args += [f"--proxy-server={proxy_server(proxy)}", "--proxy-bypass-list=<-loopback>"]
    return args


@dataclass
class Navigation:
    status: int | None
    title: str
    text: str
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class ApiResponse:
    """A captured API response (the search's, or a listing page's item API): its HTTP status, headers and JSON
    body (None if unreadable)."""

    status: int
    headers: dict[str, str]
    body: Any


class Tab:
    """One browser page. Every CDP call it makes has a deadline: the page's (``page_deadline``) while a page is
    read, else ``call_timeout`` seconds; past it the call raises ``CallTimeout`` (the call itself is left to end
    on its own, its outcome unread: a cancelled pyppeteer call errs later, at its answer or the connection's
    close)."""

    def __init__(self, page: Any, api_pattern: str, call_timeout: float = CALL_TIMEOUT) -> None:
        self._page = page
        self._api = re.compile(api_pattern)
        self._captured: list[tuple[Any, asyncio.Future[Any]]] = []
        self._arrived = asyncio.Event()
        self.call_timeout = call_timeout
        self._deadline: float | None = None
        page.on("response", self._on_response)

    def _on_response(self, response: Any) -> None:
        method = response.request.method
        if (method == "POST" and self._api.search(response.url)) or (method == "GET" and ITEM_API.search(response.url)):
            self._captured.append((response, asyncio.ensure_future(response.json())))
            self._arrived.set()

    @contextmanager
    def page_deadline(self, seconds: float) -> Iterator[None]:
        """No call made inside outlives ``seconds`` from now (one page's time)."""
        outer, self._deadline = self._deadline, asyncio.get_running_loop().time() + seconds
        try:
            yield
        finally:
            self._deadline = outer

    def time_left(self, timeout: float | None = None) -> float:
        """Seconds a call may take now: ``timeout`` (else ``call_timeout``), within the page's deadline."""
        left = self.call_timeout if timeout is None else timeout
        if self._deadline is not None:
            left = min(left, self._deadline - asyncio.get_running_loop().time())
        return left

    async def _bounded(self, awaitable: Awaitable[T], what: str, timeout: float | None = None) -> T:
        """``awaitable`` within ``time_left(timeout)``, else ``CallTimeout``. Shielded: on a timeout (or when
        the caller is cancelled) the call ends on its own, its outcome unread."""
        left = self.time_left(timeout)
        if left <= 0:
            if inspect.iscoroutine(awaitable):
                awaitable.close()  # never started
            raise CallTimeout(f"timeout: no time left for {what}")
        call = asyncio.ensure_future(awaitable)
        call.add_done_callback(retrieve)
        try:
            return await result_within(call, left)
        except asyncio.TimeoutError:
            raise CallTimeout(f"timeout: {what} took over {left:.1f}s") from None

    async def prepare(self, block_resources: bool, proxy_auth: tuple[str, str] | None = None) -> None:
        await self._bounded(self._page.setUserAgent(USER_AGENT), "setting the user agent")
        await self._bounded(self._page.setExtraHTTPHeaders({"Accept-Language": "ja-JP,ja;q=0.9"}),
                            "setting the headers")
        await self._bounded(self._page.evaluateOnNewDocument(STEALTH), "adding the stealth script")
        if not block_resources and proxy_auth is None:
            return
        # The CDP Fetch domain: drop unneeded resources, and answer the proxy's 407 with its credentials (the
        # only way to give Chromium a proxy password; it must then see every request, not just blocked ones).
        session = await self._bounded(self._page.target.createCDPSession(), "opening a CDP session")
        if proxy_auth is None:
            patterns = [{"resourceType": t, "requestStage": "Request"} for t in BLOCKED_RESOURCE_TYPES]
            patterns += [{"urlPattern": u, "requestStage": "Request"} for u in ANALYTICS_URL_PATTERNS]
        else:
            patterns = [{"urlPattern": "*", "requestStage": "Request"}]
        answered: set[str] = set()

        def paused(event: dict[str, Any]) -> None:
            request_id = event["requestId"]
            if block_resources and _blocked(event):
                command = session.send("Fetch.failRequest", {"requestId": request_id, "errorReason": "BlockedByClient"})
            else:
                command = session.send("Fetch.continueRequest", {"requestId": request_id})
            asyncio.ensure_future(_quietly(command))

        def auth_required(event: dict[str, Any]) -> None:
            request_id = event["requestId"]
            if (proxy_auth is not None and event.get("authChallenge", {}).get("source") == "Proxy"
                    and request_id not in answered):
                answered.add(request_id)  # once: wrong credentials must fail, not loop
                response = {"response": "ProvideCredentials", "username": proxy_auth[0], "password": proxy_auth[1]}
            else:
                response = {"response": "CancelAuth"}
            asyncio.ensure_future(_quietly(session.send(
                "Fetch.continueWithAuth", {"requestId": request_id, "authChallengeResponse": response})))

        session.on("Fetch.requestPaused", paused)
        session.on("Fetch.authRequired", auth_required)
        await self._bounded(session.send("Fetch.enable", {"patterns": patterns,
                                                          "handleAuthRequests": proxy_auth is not None}),
                            "enabling the Fetch domain")

    async def goto(self, url: str, timeout: float, read_text: bool = True) -> Navigation:
        """Navigate (until the document is parsed) and read its title and text. ``read_text=False``: only
        when the answer is not a success (a page that loaded normally is read later, with its readiness: one
        round trip to a busy renderer less per page)."""
        self._discard_captured()
        # pyppeteer's own timeout covers the wait for the document, not the Page.navigate command before it
        left = self.time_left(timeout)
        try:
            response = await self._bounded(
                self._page.goto(url, waitUntil="domcontentloaded", timeout=max(1, int(left * 1000))),
                "the navigation", timeout)
        except Exception as e:
            if driver_compat.is_navigation_failure(e):
                raise NavigationFailed(str(e)) from e
            raise
        status = response.status if response else None
        title = text = ""
        if read_text or status is None or status >= 400:
            title, text = await self.evaluate(
                "() => [document.title, document.body ? document.body.innerText.slice(0, 2000) : '']")
        return Navigation(status=status, title=title, text=text,
                          headers={k.lower(): v for k, v in (response.headers if response else {}).items()})

    @property
    def api_arrived(self) -> bool:
        """Whether the search API's response (its headers) has been seen since the last navigation."""
        return self._arrived.is_set()

    async def api_response(self, timeout: float) -> ApiResponse | None:
        """The first search API response since the last navigation, as soon as it arrives (over CDP), or None
        if none came within ``timeout`` seconds (and the page's deadline); its body None when it could not be
        read in that time."""
        try:
            await within(self._arrived.wait(), max(0.0, self.time_left(timeout)))
        except asyncio.TimeoutError:
            return None
        response, body = self._captured[0]
        try:
            payload = await self._bounded(body, "the API response's body", timeout)
        except Exception as e:  # a body that never arrived or is not JSON: the DOM is the fallback
            logger.debug("could not read a captured API response: %s", e)
            payload = None
        return ApiResponse(status=response.status, headers={k.lower(): v for k, v in response.headers.items()},
                           body=payload)

    async def wait_for(self, js_predicate: str, timeout: float, polling: int | str = 100) -> Any:
        """Until the predicate holds in the page (``polling``: milliseconds, or "raf" / "mutation": at the next
        frame, at the next change of the DOM; each also ends on a timer, a page that stopped rendering or
        changing is polled all the same), returning its (truthy) value; ``asyncio.TimeoutError`` after
        ``timeout`` seconds (``CallTimeout`` when the page did not answer by then: its predicate or its timers
        hung).

        The wait runs in the page (one evaluation), not in pyppeteer's poller, so it can be cancelled when no
        longer needed: pyppeteer's waitForFunction, cancelled, later sets the result of a cancelled future."""
        if polling == "raf":
            pause = "new Promise(r => { requestAnimationFrame(r); setTimeout(r, 100); })"
        elif polling == "mutation":
            pause = ("new Promise(r => { const o = new MutationObserver(() => { o.disconnect(); r(); });"
                     " o.observe(document, {childList: true, subtree: true, attributes: true, characterData: true});"
                     " setTimeout(() => { o.disconnect(); r(); }, 100); })")
        else:
            pause = f"new Promise(r => setTimeout(r, {int(polling)}))"
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            left = deadline - loop.time()
            if left <= 0:
                raise asyncio.TimeoutError(f"timeout: waiting for {js_predicate[:60]!r} took over {timeout:.1f}s")
            js = f"""async () => {{
              const predicate = {js_predicate};
              const deadline = Date.now() + {int(left * 1000)};
              for (;;) {{
                try {{
                  const value = await predicate();
                  // a node does not cross CDP by value (it would come as {{}}): it says only that it was found
                  if (value) return {{value: value instanceof Node ? true : value}};
                }} catch (e) {{}}
                if (Date.now() >= deadline) return null;
                await {pause};
              }}
            }}"""
            try:
                # the page ends the wait by its own clock; this bound is for a page that does not answer at all
                held = await self._bounded(self._page.evaluate(js), f"waiting for {js_predicate[:60]!r}",
                                           left + WAIT_SLACK)
                if held:
                    return held["value"]
            except (asyncio.CancelledError, asyncio.TimeoutError):
                raise
            except Exception as e:
                if not driver_compat.is_context_lost(e):
                    raise
                # a navigation replaced the document: wait on in the new one
                await asyncio.sleep(0.05)

    async def evaluate(self, js: str, *args: Any, timeout: float | None = None) -> Any:
        """Evaluate in the page, within ``timeout`` (else ``call_timeout``) and the page's deadline. Cancelling
        the caller leaves the evaluation to end on its own, its outcome unread."""
        return await self._bounded(self._page.evaluate(js, *args), f"evaluating {_head(js)!r}", timeout)

    #: The same (every evaluation now survives its caller's cancellation).
    evaluate_detached = evaluate

    async def evaluate_watched(self, js: str, *args: Any) -> Any:
        """``evaluate`` for a long evaluation that waits on the page's frames (a read of the list): every
        ``FRAME_CHECK`` seconds while it runs, the tab is asked for a frame; a tab that gives none within
        ``FRAME_WAIT`` raises ``RenderingStopped`` (within seconds, not at the page's deadline)."""
        evaluation = asyncio.ensure_future(self._page.evaluate(js, *args))
        evaluation.add_done_callback(retrieve)
        while True:
            try:
                return await self._bounded(evaluation, f"evaluating {_head(js)!r}", FRAME_CHECK)
            except CallTimeout:
                if self.time_left() <= 0:
                    raise
            await self.check_rendering()

    async def renders(self, within: float = FRAME_WAIT) -> bool:
        """Whether the tab produces an animation frame within ``within`` seconds of being asked."""
        return await self._probe_frame(within) is True

    async def _probe_frame(self, within: float) -> bool | None:
        """True: a frame came; False: the page's timer came first (its clock runs, its frames do not); None: the
        page answered neither (its timers stopped as well)."""
        try:
            return bool(await self.evaluate(_FRAME, int(within * 1000), timeout=within + WAIT_SLACK))
        except asyncio.TimeoutError:
            return None

    async def check_rendering(self) -> None:
        """``RenderingStopped`` unless the tab produces a frame within ``FRAME_WAIT``; a visible page whose timers
        run is given a second ``FRAME_WAIT`` first."""
        probe = await self._probe_frame(FRAME_WAIT)
        if probe:
            return
        visible, detail = await self._visibility()
        if probe is False and visible:
            # A starved renderer on a loaded machine (a visible page whose clock runs) can miss one probe's frame;
            # a stopped one misses the next as well. A hidden page or a stopped clock is told at once.
            if await self._probe_frame(FRAME_WAIT):
                logger.info("the tab was slow to give a frame, and gave one on a second probe")
                return
            visible, detail = await self._visibility()
        raise RenderingStopped(f"the tab produced no animation frame within {FRAME_WAIT:.0f}s ({detail})", visible)

    async def _visibility(self) -> tuple[bool | None, str]:
        try:  # a synchronous read: answered even where the page's frames and timers stopped
            state = await self.evaluate("() => [document.visibilityState, performance.now()]", timeout=FRAME_WAIT)
            return state[0] == "visible", f"page {state[0]}, its clock at {state[1]:.0f} ms"
        except Exception as e:
            return None, f"page state unreadable: {e}"

    async def bring_to_front(self) -> None:
        """Make this tab the browser's active one (CDP ``Page.bringToFront``)."""
        await self._bounded(self._page.bringToFront(), "bringing the tab to the front", FRAME_WAIT * 2)

    async def send(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """A raw CDP command to this tab's page (tests freeze a tab with it)."""
        return await self._bounded(self._page._client.send(method, params or {}), method)

    def _discard_captured(self) -> None:
        for _, future in self._captured:
            # bodies nobody read: their outcome is seen when it comes, never cancelled (pyppeteer errs when a
            # cancelled request's answer, or the connection's close, reaches it: "invalid state")
            future.add_done_callback(retrieve)
        self._captured.clear()
        self._arrived.clear()

    async def close(self) -> None:
        self._discard_captured()
        try:  # a frozen page may never confirm its close: the browser's drain or close ends it then
            await self._bounded(self._page.close(), "closing the tab", min(self.call_timeout, CLOSE_TIMEOUT))
        except Exception:
            pass


class Browser:
    """A Chromium process and its CDP connection."""

    def __init__(self, browser: Any, process: subprocess.Popen[bytes], profile: str, proxy: str | None) -> None:
        self._browser = browser
        self._process = process
        self._profile = profile
        self.proxy = proxy
        self._closing: set[asyncio.Task[None]] = set()  # pages given up on, being closed

    @classmethod
    async def launch(cls, chromium: str, *, no_sandbox: bool, proxy: str | None = None,
                     images: bool = True, timeout: float = LAUNCH_TIMEOUT) -> Browser:
        """Start Chromium and connect to it, within ``timeout`` seconds or a ``DriverError``.

        pyppeteer's own ``launch`` cannot be bounded: it polls Chromium's HTTP endpoint synchronously (the event
        loop stands still meanwhile, for up to 30 s, and each ``urlopen`` has no time limit), then waits for the
        browser's first page target without a limit. So Chromium is started here with pyppeteer's command line,
        on a debugging port it chooses itself (``--remote-debugging-port=0``: no port to race for), and writes to
        its profile's ``DevToolsActivePort``; pyppeteer then only connects, under the remaining time."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # websockets 10, pinned by pyppeteer
            from pyppeteer.launcher import Launcher, connect
        check_sandbox(no_sandbox)
        loop_errors.install(asyncio.get_running_loop())
        args = chromium_args(no_sandbox=no_sandbox, proxy=proxy, images=images)
        tmpdir = _short_tmpdir()
        profile = tempfile.mkdtemp(prefix="animetop-chromium-", dir=tmpdir)
        deadline = time.monotonic() + timeout
        command = [a if not a.startswith("--remote-debugging-port=") else "--remote-debugging-port=0"
                   for a in Launcher(executablePath=chromium, headless=True, args=args, userDataDir=profile).cmd]
        log_path = os.path.join(profile, "chromium-stderr.log")
        process: subprocess.Popen[bytes] | None = None
        try:
            with open(log_path, "wb") as log:
                process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log,
                                           env={**os.environ, "TMPDIR": tmpdir})
            endpoint = await _devtools_endpoint(process, profile, log_path, deadline)
            browser = await within(
                connect(browserWSEndpoint=endpoint, logLevel=logging.WARNING), max(deadline - time.monotonic(), 0.1))
        except BaseException as e:  # a cancelled start (the crawl's time limit) leaves no Chromium either
            if process is not None:
                _kill(process)
            _remove_profile(profile)
            if not isinstance(e, Exception):
                raise
            reason = f"no answer within {timeout:g} s" if isinstance(e, asyncio.TimeoutError) else str(e)
            raise DriverError(f"Chromium failed to start: {reason}") from None
        return cls(browser, process, profile, proxy)

    @property
    def pid(self) -> int | None:
        return self._process.pid

    def page_count(self) -> int:
        """How many pages (tabs) the browser has open, from its targets as the CDP connection last heard them."""
        return sum(1 for target in self._browser.targets() if target.type == "page")

    def alive(self) -> bool:
        connection = _connection(self._browser)
        connected = connection is not None and getattr(connection, "_connected", True) \
            and not getattr(connection, "_closed", False)
        return bool(self._process.poll() is None and connected)

    async def bare_page(self, timeout: float = CALL_TIMEOUT) -> Any:
        """A pyppeteer page with nothing of the crawler's (no stealth script, no blocking), for the tools that
        drive a page themselves: the dashboard's browser tests and ``bench dashboard``."""
        return await self._open_page(timeout)

    async def _open_page(self, timeout: float) -> Any:
        """A new pyppeteer page within ``timeout``; past it, or when the caller is cancelled, the opening is left
        to end on its own (a cancelled pyppeteer call errs later) and the page it opens is closed."""
        opening = asyncio.ensure_future(self._browser.newPage())
        opening.add_done_callback(retrieve)
        handed_over = False
        try:
            page = await result_within(opening, timeout)
            handed_over = True
            return page
        except Exception as e:
            raise DriverError(f"could not open a page: {type(e).__name__}: {e}") from None
        finally:
            if not handed_over:  # even one opened just as its caller was cancelled
                opening.add_done_callback(self._close_opened)

    def _close_opened(self, opening: asyncio.Future[Any]) -> None:
        """Close, in the background, the page of an opening nobody waits for any more (no tab left behind)."""
        if opening.cancelled() or opening.exception() is not None:
            return
        closing = asyncio.ensure_future(_quietly(opening.result().close()))
        self._closing.add(closing)
        closing.add_done_callback(self._closing.discard)

    async def new_tab(self, api_pattern: str, block_resources: bool, call_timeout: float = CALL_TIMEOUT) -> Tab:
        """A prepared page; ``call_timeout``: the bound of its CDP calls (the crawler's page timeout)."""
        page = await self._open_page(call_timeout)
        tab = Tab(page, api_pattern, call_timeout)
        try:
            await tab.prepare(block_resources, proxy_credentials(self.proxy))
        except Exception as e:
            await tab.close()
            raise DriverError(f"could not prepare a page: {type(e).__name__}: {e}") from None
        return tab

    async def close(self) -> None:
        """Close over CDP, then make sure the process is gone and reaped (no orphan Chromium)."""
        try:
            await within(self._browser.close(), CLOSE_TIMEOUT)
        except Exception:
            pass
        connection = _connection(self._browser)
        if connection is not None:  # what pyppeteer's own launch did on close: end the WebSocket's reader
            try:
                await within(_quietly(connection.dispose()), CLOSE_TIMEOUT)
            except Exception:
                pass
        await asyncio.get_running_loop().run_in_executor(None, _kill, self._process)
        await asyncio.get_running_loop().run_in_executor(None, _remove_profile, self._profile)


async def _devtools_endpoint(process: subprocess.Popen[bytes], profile: str, log_path: str, deadline: float) -> str:
    """The browser's WebSocket address, once Chromium has written it to ``DevToolsActivePort`` (its port on the
    first line, the browser target's path on the second)."""
    active = os.path.join(profile, "DevToolsActivePort")
    while True:
        if process.poll() is not None:
            raise DriverError(f"Chromium exited with code {process.returncode}: {_tail(log_path)}")
        try:
            with open(active) as f:
                lines = f.read().split("\n")
            if len(lines) >= 2 and lines[0].strip().isdigit() and lines[1].strip():
                return f"ws://127.0.0.1:{lines[0].strip()}{lines[1].strip()}"
        except FileNotFoundError:
            pass
        if time.monotonic() >= deadline:
            raise asyncio.TimeoutError
        await asyncio.sleep(0.05)  # the pace of looks at a file Chromium writes once


def _connection(browser: Any) -> Any:
    """A pyppeteer ``Browser``'s CDP connection (private: ``Browser._connection``; None if it has none)."""
    return getattr(browser, "_connection", None)


def _tail(path: str, limit: int = 300) -> str:
    try:
        with open(path, "rb") as f:
            text = f.read().decode(errors="replace").strip()
    except OSError:
        return "(no output)"
    return text[-limit:] if text else "(no output)"


def _kill(process: subprocess.Popen[bytes]) -> None:
    """SIGKILL the browser process (its zygote and renderers notice and exit) and reap it."""
    if process.poll() is None:
        try:
            process.send_signal(signal.SIGKILL)
        except ProcessLookupError:
            pass
    try:
        process.wait(CLOSE_TIMEOUT)
    except subprocess.TimeoutExpired:
        logger.warning("Chromium (pid %s) not reaped %g s after SIGKILL", process.pid, CLOSE_TIMEOUT)


def _remove_profile(profile: str, timeout: float = CLOSE_TIMEOUT) -> None:
    """Remove a browser's profile directory, again while it is still there, for ``timeout`` at most: Chromium's
    zygote and renderers exit a moment after the browser process, and one writing a file into the profile during
    the removal leaves the directory behind."""
    deadline = time.monotonic() + timeout
    while True:
        shutil.rmtree(profile, ignore_errors=True)
        if not os.path.exists(profile):
            return
        if time.monotonic() > deadline:
            logger.warning("Chromium's profile %s still there %g s after the browser closed", profile, timeout)
            return
        time.sleep(0.05)


def _blocked(event: dict[str, Any]) -> bool:
    """Whether a paused request is one of the resources a search page never needs."""
    url = event.get("request", {}).get("url", "")
    return event.get("resourceType") in BLOCKED_RESOURCE_TYPES or any(
        fnmatch.fnmatchcase(url, pattern) for pattern in ANALYTICS_URL_PATTERNS)


def _head(js: str) -> str:
    """A script's first line, to name it in an error."""
    return js.strip().splitlines()[0][:60] if js.strip() else js


async def _quietly(awaitable: Awaitable[Any]) -> None:
    try:
        await awaitable
    except Exception:
        pass
