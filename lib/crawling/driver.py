"""The only module that talks to pyppeteer (unmaintained): moving to another CDP client is a one-module change.

What it offers the rest of the crawler: launch a browser (``Browser``), open
a page (``Tab``) with the stealth script, resource blocking through the CDP
Fetch domain (``Network.setRequestInterception`` no longer exists in today's
Chromium) and capture of the search API's JSON responses.
"""

from __future__ import annotations

import asyncio
import fnmatch
import logging
import os
import re
import shutil
import signal
import tempfile
import warnings
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlsplit

from lib.crawling import loop_errors
from lib.crawling.selectors import ANALYTICS_URL_PATTERNS, BLOCKED_RESOURCE_TYPES

logger = logging.getLogger(__name__)

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

#: Flags that keep a headless Chromium quiet on a closed network (no update, sync or metrics calls).
BASE_ARGS = ("--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
             "--disable-features=Translate,MediaRouter", "--mute-audio", "--window-size=1280,900")

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
                   "CHROMIUM_NO_SANDBOX=true to turn Chromium's sandbox off (see the README, Security)")


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
    """A captured search API response: its HTTP status, headers and JSON body (None if unreadable)."""

    status: int
    headers: dict[str, str]
    body: Any


class Tab:
    """One browser page."""

    def __init__(self, page, api_pattern: str) -> None:
        self._page = page
        self._api = re.compile(api_pattern)
        self._captured: list[tuple[Any, asyncio.Future]] = []
        self._arrived = asyncio.Event()
        page.on("response", self._on_response)

    def _on_response(self, response) -> None:
        if self._api.search(response.url) and response.request.method == "POST":
            self._captured.append((response, asyncio.ensure_future(response.json())))
            self._arrived.set()

    async def prepare(self, block_resources: bool, proxy_auth: tuple[str, str] | None = None) -> None:
        await self._page.setUserAgent(USER_AGENT)
        await self._page.setExtraHTTPHeaders({"Accept-Language": "ja-JP,ja;q=0.9"})
        await self._page.evaluateOnNewDocument(STEALTH)
        if not block_resources and proxy_auth is None:
            return
        # The CDP Fetch domain: drop unneeded resources, and answer the proxy's 407 with its credentials (the
        # only way to give Chromium a proxy password; it must then see every request, not just blocked ones).
        session = await self._page.target.createCDPSession()
        if proxy_auth is None:
            patterns = [{"resourceType": t, "requestStage": "Request"} for t in BLOCKED_RESOURCE_TYPES]
            patterns += [{"urlPattern": u, "requestStage": "Request"} for u in ANALYTICS_URL_PATTERNS]
        else:
            patterns = [{"urlPattern": "*", "requestStage": "Request"}]
        answered: set[str] = set()

        def paused(event) -> None:
            request_id = event["requestId"]
            if block_resources and _blocked(event):
                command = session.send("Fetch.failRequest", {"requestId": request_id, "errorReason": "BlockedByClient"})
            else:
                command = session.send("Fetch.continueRequest", {"requestId": request_id})
            asyncio.ensure_future(_quietly(command))

        def auth_required(event) -> None:
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
        await session.send("Fetch.enable", {"patterns": patterns, "handleAuthRequests": proxy_auth is not None})

    async def goto(self, url: str, timeout: float, read_text: bool = True) -> Navigation:
        """Navigate (until the document is parsed) and read its title and text. ``read_text=False``: only
        when the answer is not a success (a page that loaded normally is read later, with its readiness: one
        round trip to a busy renderer less per page)."""
        self._discard_captured()
        response = await self._page.goto(url, waitUntil="domcontentloaded", timeout=int(timeout * 1000))
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
        if none came within ``timeout`` seconds."""
        try:
            await asyncio.wait_for(self._arrived.wait(), timeout)
        except asyncio.TimeoutError:
            return None
        response, body = self._captured[0]
        try:
            payload = await asyncio.wait_for(asyncio.shield(body), timeout)
        except Exception as e:  # a body that never arrived or is not JSON: the DOM is the fallback
            logger.debug("could not read a captured API response: %s", e)
            payload = None
        return ApiResponse(status=response.status, headers={k.lower(): v for k, v in response.headers.items()},
                           body=payload)

    async def wait_for(self, js_predicate: str, timeout: float, polling: int | str = 100) -> Any:
        """Until the predicate holds in the page (``polling``: milliseconds, or "raf" / "mutation": at the next
        frame, at the next change of the DOM), returning its (truthy) value; ``asyncio.TimeoutError`` after
        ``timeout`` seconds.

        The wait runs in the page (one evaluation), not in pyppeteer's poller, so it can be cancelled when no
        longer needed: pyppeteer's waitForFunction, cancelled, later sets the result of a cancelled future."""
        if polling == "raf":
            pause = "new Promise(r => requestAnimationFrame(r))"
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
            # shielded: when the wait is no longer needed (cancelled), the evaluation still ends on its own (in
            # pyppeteer, a cancelled evaluation errs at the connection's close: "invalid state")
            evaluation = asyncio.ensure_future(self._page.evaluate(js))
            evaluation.add_done_callback(_retrieve)
            try:
                held = await asyncio.shield(evaluation)
                if held:
                    return held["value"]
            except asyncio.CancelledError:
                raise
            except Exception as e:  # a navigation replaced the document: wait on in the new one
                if "context" not in str(e).lower():
                    raise
                await asyncio.sleep(0.05)

    async def evaluate(self, js: str, *args) -> Any:
        return await self._page.evaluate(js, *args)

    async def evaluate_detached(self, js: str, *args) -> Any:
        """``evaluate``, for a caller that may be cancelled: the evaluation then ends on its own, its outcome
        unread (a cancelled pyppeteer evaluation errs later, at its answer or the connection's close)."""
        evaluation = asyncio.ensure_future(self._page.evaluate(js, *args))
        evaluation.add_done_callback(_retrieve)
        return await asyncio.shield(evaluation)

    def _discard_captured(self) -> None:
        for _, future in self._captured:
            # bodies nobody read: their outcome is seen when it comes, never cancelled (pyppeteer errs when a
            # cancelled request's answer, or the connection's close, reaches it: "invalid state")
            future.add_done_callback(_retrieve)
        self._captured.clear()
        self._arrived.clear()

    async def close(self) -> None:
        self._discard_captured()
        await _quietly(self._page.close())


class Browser:
    """A Chromium process and its CDP connection."""

    def __init__(self, browser, profile: str, proxy: str | None) -> None:
        self._browser = browser
        self._profile = profile
        self.proxy = proxy

    @classmethod
    async def launch(cls, chromium: str, *, no_sandbox: bool, proxy: str | None = None,
                     images: bool = True) -> Browser:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # websockets 10, pinned by pyppeteer
            from pyppeteer import launch
        check_sandbox(no_sandbox)
        loop_errors.install(asyncio.get_running_loop())
        args = chromium_args(no_sandbox=no_sandbox, proxy=proxy, images=images)
        tmpdir = _short_tmpdir()
        profile = tempfile.mkdtemp(prefix="animetop-chromium-", dir=tmpdir)
        try:
            browser = await launch(executablePath=chromium, headless=True, args=args, userDataDir=profile,
                                   handleSIGINT=False, handleSIGTERM=False, handleSIGHUP=False, autoClose=False,
                                   logLevel=logging.WARNING, env={**os.environ, "TMPDIR": tmpdir})
        except Exception as e:
            shutil.rmtree(profile, ignore_errors=True)
            raise DriverError(f"Chromium failed to start: {e}") from None
        return cls(browser, profile, proxy)

    @property
    def pid(self) -> int | None:
        process = getattr(self._browser, "process", None)
        return process.pid if process else None

    def alive(self) -> bool:
        process = getattr(self._browser, "process", None)
        connection = getattr(self._browser, "_connection", None)
        connected = connection is not None and getattr(connection, "_connected", True) \
            and not getattr(connection, "_closed", False)
        return bool(process and process.poll() is None and connected)

    async def new_tab(self, api_pattern: str, block_resources: bool) -> Tab:
        try:
            page = await self._browser.newPage()
        except Exception as e:
            raise DriverError(f"could not open a page: {e}") from None
        tab = Tab(page, api_pattern)
        await tab.prepare(block_resources, proxy_credentials(self.proxy))
        return tab

    async def close(self) -> None:
        """Close over CDP, then make sure the process is gone and reaped (no orphan Chromium)."""
        try:
            await asyncio.wait_for(self._browser.close(), 10)
        except Exception:
            pass
        process = getattr(self._browser, "process", None)
        if process is not None and process.poll() is None:
            try:
                process.send_signal(signal.SIGKILL)
            except ProcessLookupError:
                pass
        if process is not None:
            try:
                await asyncio.get_running_loop().run_in_executor(None, process.wait, 10)
            except Exception:
                pass
        shutil.rmtree(self._profile, ignore_errors=True)


def _blocked(event) -> bool:
    """Whether a paused request is one of the resources a search page never needs."""
    url = event.get("request", {}).get("url", "")
    return event.get("resourceType") in BLOCKED_RESOURCE_TYPES or any(
        fnmatch.fnmatchcase(url, pattern) for pattern in ANALYTICS_URL_PATTERNS)


def _retrieve(future: asyncio.Future) -> None:
    """Mark a finished future's exception as seen (its outcome no longer matters)."""
    if not future.cancelled():
        future.exception()


async def _quietly(awaitable) -> None:
    try:
        await awaitable
    except Exception:
        pass
