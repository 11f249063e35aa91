"""Fetching one search page (docs/concepts/crawling.md): navigate, detect blocks, read the items.

Two sources, raced from the moment the page starts loading:
- the search API's JSON, captured over CDP as soon as it arrives (the most robust source): it also tells a
  soft block (no items while the search has some) within seconds, and the search's total count;
- the DOM, when the API response is not captured (the API renamed or reshaped: ``MERCARI_API_PATTERN`` no
  longer matches). It reads only what the real page renders: cells are collected while scrolling through the
  virtual list; at the bottom it waits for the lazily loaded rest of the page. A page with a next page
  (``a[data-testid="pagination-next-button"]``) is whole at ``PAGE_SIZE`` items, or at the bottom of its list
  with at least ``FULL_PAGE_MIN`` once the list is quiet (the site drops a few filtered listings from a page:
  see ``_QUIET_LIST``); the last page is done when the list stops growing.
Each page reports which source was read and what looked unexpected (``anomalies``: drift signals).
"""

from __future__ import annotations

import asyncio
import email.utils
import enum
import random
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from lib.crawling import driver_compat
from lib.crawling import selectors as sel
from lib.crawling.driver import FRAME_WAIT, ApiResponse, NavigationFailed, RenderingStopped, Tab
from lib.crawling.listings import (
    api_anomalies,
    cell_anomalies,
    disagreements,
    item_from_api,
    item_from_cell,
)
from lib.crawling.waits import cancel_and_wait

PAGE_SIZE = sel.PAGE_SIZE
FULL_PAGE_MIN = sel.FULL_PAGE_MIN
#: Once the DOM shows items, how long the API response may still take to be captured before the DOM is read.
#: The page renders from the response, but CDP may report the response after the render (a loaded machine:
#: over a second), and a page read from the DOM loses the listings' creation times. Once a crawl saw no API
#: response on a page, its next pages wait only ``API_GRACE_AFTER_MISS``.
API_GRACE = 3.0
API_GRACE_AFTER_MISS = 0.3
#: At the bottom of a page that should hold more items (it has a next page and fewer than ``FULL_PAGE_MIN``): how
#: long to wait for the lazy load.
LAZY_WAIT = 5.0
#: At the bottom of a page with a next page and at least ``FULL_PAGE_MIN`` items: how long the list must have had
#: no cell added or removed (then a frame) to be whole.
LIST_QUIET = 0.15
#: At the bottom of the last page: how long the list must stay the same to be done.
QUIET = 2.0
#: How far one step scrolls the list, in viewports (consecutive reads overlap).
SCROLL_STEP = 0.8
#: At most this many viewports per step, however far below the viewport the list renders cells.
MAX_STEP = 3
#: After two reads with no listing in common (a late render): how far to step back, in viewports.
GAP_STEP_BACK = 0.4
#: Cross-check: how long to wait for the rendered cells next to a captured API response.
CROSS_CHECK_WAIT = 3.0


class ErrorKind(str, enum.Enum):
    TIMEOUT = "timeout"
    BLOCKED = "blocked"
    #: HTTP 429: the site's limit of requests per address (the address's budget is cut, lib/crawling/budget.py)
    THROTTLED = "throttled"
    NETWORK = "network"
    PARSE = "parse"
    UNKNOWN = "unknown"
    #: no turn under the crawl rate limit (``lib.crawling.rate_limit.NoTurn``): not loaded, nothing to do with
    #: the site or the proxy
    RATE_LIMITED = "rate_limited"

    @property
    def counts_toward_proxy_switch(self) -> bool:
        return self in (ErrorKind.TIMEOUT, ErrorKind.BLOCKED, ErrorKind.THROTTLED, ErrorKind.NETWORK)


class PageError(Exception):
    """A page that could not be read; ``retry_after``: seconds the site asked us to wait (a 429's header)."""

    def __init__(self, kind: ErrorKind, detail: str, retry_after: float | None = None) -> None:
        super().__init__(f"{kind.value}: {detail}")
        self.kind = kind
        self.detail = detail
        self.retry_after = retry_after


class TabStalled(PageError):
    """The tab stopped rendering while its page was read (a timeout, noticed within seconds): the crawl recovers
    the tab and reads the page again."""

    def __init__(self, detail: str) -> None:
        super().__init__(ErrorKind.TIMEOUT, detail)


@dataclass
class PageResult:
    items: list[dict[str, Any]] = field(default_factory=list)
    num_found: int | None = None
    has_next: bool = False
    source: str = "api"  # or "dom"
    anomalies: Counter[str] = field(default_factory=Counter)
    #: The DOM path's waits at the bottom of the list for more items that did not come, by kind: ``lazy_load``
    #: (``LAZY_WAIT``, a page with a next page holding too few) and ``quiet`` (``QUIET``, the end of the list).
    waited_out: Counter[str] = field(default_factory=Counter)


def search_url(base_url: str, keyword: str, status: str, page: int) -> str:
    """The newest-first search URL; page n+1 carries ``page_token=v1:n``."""
    url = (f"{base_url.rstrip('/')}/search?keyword={quote(keyword)}&status={quote(status, safe='')}"
           f"&sort=created_time&order=desc")
    return url + (f"&page_token=v1:{page - 1}" if page > 1 else "")


def retry_after_seconds(value: str | None, now: float | None = None) -> float | None:
    """A ``Retry-After`` header (seconds or an HTTP date) in seconds from now."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


#: Items rendered (``items``), the no-results text visible (``empty``), or a block page (``blocked:`` and the
#: marker seen): the page is ready to be read.
READY = f"""() => {{
  if (document.querySelector('{sel.CELL} {sel.LINK}')) return 'items';
  const text = document.body ? document.body.innerText : '';
  if (text.includes('{sel.NO_RESULTS_TEXT}')) return 'empty';
  const marker = {list(sel.BLOCK_MARKERS)}.find(m => document.title.includes(m) || text.includes(m));
  return marker ? 'blocked:' + marker : null;
}}"""
BLOCKED_PREFIX = "blocked:"

#: The live cells, as data (a cell without a link keeps its text: a skeleton has none, a broken cell has some).
_CELLS = f"""() => Array.from(document.querySelectorAll('{sel.CELL}')).map(cell => {{
    const link = cell.querySelector('{sel.LINK}');
    if (!link) return {{href: null, text: cell.textContent.trim()}};
    const name = cell.querySelector('{sel.NAME}');
    const price = cell.querySelector('{sel.PRICE}');
    const label = cell.querySelector('{sel.IMAGE_LABEL}');
    const img = cell.querySelector('img');
    return {{
      href: link.getAttribute('href'),
      name: name ? name.textContent.trim() : null,
      price: price ? price.textContent : null,
      label: label ? label.getAttribute('aria-label') : '',
      sold: !!cell.querySelector('{sel.SOLD_STICKER}'),
      image: img ? img.getAttribute('src') : '',
    }};
  }})"""

#: Let the page render a scroll: its next change of the DOM (or 150 ms for a list that does not change), then
#: the next frame. Resolves to whether a frame came: ``false`` after ``FRAME_WAIT`` without one (the tab stopped
#: rendering; a frame that never comes must not hold the read).
_SETTLE = f"""() => new Promise(r => {{
    const o = new MutationObserver(() => {{ o.disconnect(); r(); }});
    o.observe(document.body, {{childList: true, subtree: true}});
    setTimeout(() => {{ o.disconnect(); r(); }}, 150);
  }}).then(() => new Promise(r => {{
    requestAnimationFrame(() => r(true));
    setTimeout(() => r(false), {int(FRAME_WAIT * 1000)});
  }}))"""

#: Back to the top of the list, rendered there: a virtual list re-renders on the ``scroll`` event, which comes
#: with the next frame, not with ``scrollTo``; reading before it reads the cells of where the page was (the first
#: listings would go unseen). So: the event (or 500 ms), then the page's next DOM change (or 150 ms), then a frame.
BACK_TO_TOP = f"""async () => {{
  if (!window.scrollY) return;
  const scrolled = new Promise(r => {{ window.addEventListener('scroll', r, {{once: true}}); setTimeout(r, 500); }});
  window.scrollTo(0, 0);
  await scrolled;
  await ({_SETTLE})();
}}"""

#: The live cells and the page's state, without scrolling (the cross-check's sample).
STEP = f"""() => ({{cells: ({_CELLS})(), next: !!document.querySelector('{sel.NEXT_BUTTON}')}})"""

#: The first read of a page on the DOM path: the modal scrim removed, the list scrolled to its top (and
#: rendered there), and the page's text (blocks, no results: layout work, done once).
FIRST_READ = f"""async () => {{
  const scrim = document.querySelector('{sel.MODAL_SCRIM}');
  if (scrim) scrim.remove();
  await ({BACK_TO_TOP})();
  const text = document.body.innerText;
  return {{noResults: text.includes('{sel.NO_RESULTS_TEXT}'), title: document.title, text: text.slice(0, 2000)}};
}}"""

#: When a page with a next page is whole at the bottom of its list: with at least ``FULL_PAGE_MIN`` listings
#: read, every cell read, and the list quiet: no cell added or removed for ``ms`` and then a frame (or 100 ms:
#: a tab whose frames stopped must not hold the read), the page no taller than when it was read.
#: Why not at ``PAGE_SIZE`` only: the site fills a page from 120 hits and then drops the listings it filters
#: (real pages hold 116 to 119 with a next page), so a page short of 120 is normal, and waiting at its bottom
#: for listings that never come cost the lazy-load wait on every page. Why the count still matters: a list that
#: stopped growing is not yet a whole list (a lazy load comes when it comes: a loaded machine, a slow site), and
#: only the count tells a page that stopped rendering, at its first part (half a page) or at 40, from a whole
#: one; ``FULL_PAGE_MIN`` is far above the first and just below what a page holds after the site's filter.
#: The quiet list makes sure the bottom is not read in the middle of a render.
#: Resolves true once quiet, false if the list is still changing after ``maxMs``.
_QUIET_LIST = f"""(ms, maxMs) => new Promise(resolve => {{
    const cell = document.querySelector('{sel.CELL}');
    const list = (cell && cell.parentElement) || document.body;
    let changes = 0, timer = null, over = false;
    const finish = value => {{
      if (over) return;
      over = true; observer.disconnect(); clearTimeout(timer); clearTimeout(cap); resolve(value);
    }};
    const arm = () => {{
      clearTimeout(timer);
      timer = setTimeout(() => {{
        const at = changes;
        new Promise(r => {{ requestAnimationFrame(r); setTimeout(r, 100); }})
          .then(() => {{ if (changes === at) finish(true); }});
      }}, ms);
    }};
    const observer = new MutationObserver(() => {{ changes++; arm(); }});
    observer.observe(list, {{childList: true, subtree: true}});
    const cap = setTimeout(() => finish(false), maxMs);
    arm();
  }})"""

#: Read through the virtual list inside the page, in one evaluation (a round trip over CDP per scroll step cost
#: more than the step itself on a loaded machine): read the live cells, scroll by ``step`` viewports, let the
#: page render, read again, until the page holds ``full`` listings with a next-page control, the bottom of what
#: is rendered, or ``budgetMs``. Two reads with no listing in common mean the page had not rendered the scroll
#: yet (cells between them may have gone unseen): it steps back ``back`` viewports and reads again (``gaps``).
#: Returns the cells not among ``known`` (listing ids read before), and the state where it stopped; ``stalled``
#: when a scroll got no frame within ``FRAME_WAIT`` (the scroll is undone: the read resumes where the list was
#: last rendered, once the tab renders again).
READ_LIST = f"""async ({{step, back, full, budgetMs, known}}) => {{
  const started = Date.now();
  const patterns = [new RegExp({sel.ITEM_HREF!r}), new RegExp({sel.SHOPS_HREF!r})];
  const idOf = href => {{
    for (const p of patterns) {{ const m = href && href.match(p); if (m) return m[1]; }}
    return null;
  }};
  const cellsNow = {_CELLS};
  const settle = {_SETTLE};
  const quiet = {_QUIET_LIST};
  const seen = new Set(known), broken = new Set(), out = [];
  let previous = null, gaps = 0, stalled = false, cells = cellsNow();
  for (;;) {{
    const ids = new Set(cells.map(c => idOf(c.href)).filter(id => id !== null));
    if (previous && ids.size && ![...ids].some(id => previous.has(id)) && Date.now() - started < budgetMs
        && !stalled) {{
      gaps++;
      const settled = settle(), by = -Math.floor(window.innerHeight * back);
      window.scrollBy(0, by);
      if (!await settled) {{ stalled = true; window.scrollBy(0, -by); }}
      cells = cellsNow();
      continue;
    }}
    if (ids.size) previous = ids;
    for (const c of cells) {{
      const id = idOf(c.href);
      if (id !== null) {{
        if (!seen.has(id)) {{ seen.add(id); out.push(c); }}
      }} else if (!c.href && c.text && !broken.has(c.text)) {{
        broken.add(c.text); out.push(c);
      }}
    }}
    const next = !!document.querySelector('{sel.NEXT_BUTTON}');
    if (next && seen.size >= {FULL_PAGE_MIN} && seen.size < full && Date.now() - started < budgetMs
        && window.scrollY + window.innerHeight >= document.documentElement.scrollHeight - 2) {{
      // at the bottom of a page short of ``full``: whole once the list is quiet (``_QUIET_LIST``), and then
      // returned below (at the bottom, with a next page and enough listings); if it changed, read on from here
      const tall = document.documentElement.scrollHeight;
      const still = await quiet({int(LIST_QUIET * 1000)}, budgetMs - (Date.now() - started));
      const now = cellsNow();
      if (!still || document.documentElement.scrollHeight !== tall
          || now.some(c => {{ const id = idOf(c.href); return id !== null && !seen.has(id); }})) {{
        cells = now;
        continue;
      }}
    }}
    const height = document.documentElement.scrollHeight;
    const bottom = window.scrollY + window.innerHeight >= height - 2;
    if ((next && seen.size >= full) || bottom || stalled || Date.now() - started >= budgetMs) {{
      return {{cells: out, gaps, next, bottom, height, stalled}};
    }}
    // the next step: ``step`` viewports, or further when the list renders cells below the viewport: the last
    // of them is brought near the top (it is read again, so consecutive reads still overlap)
    const view = window.innerHeight;
    const last = Math.max(-Infinity, ...Array.from(document.querySelectorAll('{sel.CELL} {sel.LINK}'))
      .map(a => a.closest('{sel.CELL}').getBoundingClientRect().top));
    const by = Math.floor(Math.min(Math.max(view * step, last - view * 0.1), view * {MAX_STEP}));
    const settled = settle();
    window.scrollBy(0, by);
    if (!await settled) {{ stalled = true; window.scrollBy(0, -by); }}
    cells = cellsNow();
  }}
}}"""


def _detect_block(status: int | None, title: str, text: str) -> str | None:
    if status in (403, 429):
        return f"HTTP {status}"
    for marker in sel.BLOCK_MARKERS:
        if marker in title or marker in text:
            return marker
    if status is not None and status >= 500:
        return f"HTTP {status}"
    return None


async def open_page(tab: Tab, url: str, timeout: float) -> None:
    """Navigate the tab to ``url``; raises ``PageError`` for a navigation that failed or a block page the
    answer shows (an HTTP 403, 429 or 5xx, or a block's marker in its title or text)."""
    try:
        nav = await tab.goto(url, timeout, read_text=False)
    except Exception as e:
        raise _classify(e) from None
    blocked = _detect_block(nav.status, nav.title, nav.text)
    if blocked:
        raise PageError(ErrorKind.THROTTLED if nav.status == 429 else ErrorKind.BLOCKED, blocked,
                        retry_after_seconds(nav.headers.get("retry-after")))


async def fetch_page(tab: Tab, url: str, base_url: str, *, timeout: float, first_page: bool,
                     use_api: bool = True, cross_check: bool = False, search_status: str = "on_sale",
                     api_grace: float = API_GRACE, seller_key: bytes | None = None) -> PageResult:
    """One search page's items; raises ``PageError`` with its kind. ``seller_key``: the key of the sellers' hash
    (lib/crawling/listings.py; None: sellers are not kept).

    ``use_api=False`` reads the DOM only; ``cross_check`` compares the cells in view with a captured API
    response (a cheap sample: disagreements are counted as an anomaly)."""
    # every call to the tab ends by the page's deadline (``CallTimeout``, a page timeout); a tab that stops
    # rendering is told within seconds (``TabStalled``: the crawl recovers it)
    with tab.page_deadline(timeout):
        try:
            return await _fetch_page(tab, url, base_url, timeout, first_page, use_api, cross_check, search_status,
                                     api_grace, seller_key)
        except RenderingStopped as e:
            raise TabStalled(str(e)) from None
        except asyncio.TimeoutError as e:
            raise PageError(ErrorKind.TIMEOUT, str(e) or f"the page took over {timeout:.0f}s") from None


async def _fetch_page(tab: Tab, url: str, base_url: str, timeout: float, first_page: bool, use_api: bool,
                      cross_check: bool, search_status: str, api_grace: float,
                      seller_key: bytes | None = None) -> PageResult:
    started = asyncio.get_running_loop().time()
    # a page that loaded normally has its text read with its readiness (a block page shown with a success status,
    # such as a CAPTCHA, is recognized there, without waiting for the API)
    await open_page(tab, url, timeout)
    # a person scrolls a little while the page loads (first page only); the API's answer does not
    # wait for the scrolling to end: once the page is read from it, the scrolling stops there (between two steps,
    # before the tab moves on); the DOM is read only after the scrolling ended, back at the top
    scrolling = asyncio.ensure_future(_human_scroll(tab)) if first_page else None
    try:
        return await _read(tab, base_url, timeout, started, use_api, cross_check, search_status, api_grace,
                           scrolling, seller_key)
    finally:
        await _stop(scrolling)


async def _read(tab: Tab, base_url: str, timeout: float, started: float, use_api: bool, cross_check: bool,
                search_status: str, api_grace: float, scrolling: asyncio.Task[None] | None,
                seller_key: bytes | None = None) -> PageResult:
    """The page's items once it is loading: from the API's answer, or else from the DOM."""
    left = max(1.0, timeout - (asyncio.get_running_loop().time() - started))
    api, dom_ready = await _first_signal(tab, left, use_api, api_grace)
    if api is not None:
        result = page_from_api(api, base_url, search_status, seller_key)
        if result is not None:
            if cross_check and result.items:
                await _cross_check(tab, base_url, result)
            return result
        anomalies = Counter({"api_unreadable": 1})
        if not dom_ready:  # the API answered first, with nothing to read: the DOM may still render
            left = max(1.0, timeout - (asyncio.get_running_loop().time() - started))
            _, dom_ready = await _first_signal(tab, left, False, 0.0)
    else:
        anomalies = Counter()
    if dom_ready and dom_ready.startswith(BLOCKED_PREFIX):
        raise PageError(ErrorKind.BLOCKED, dom_ready[len(BLOCKED_PREFIX):])
    if not dom_ready:
        raise PageError(ErrorKind.TIMEOUT, f"nothing to read after {timeout:.0f}s")
    if use_api:
        anomalies["api_missing"] += 1  # the page rendered, the API response was not captured
    if scrolling is not None:
        await scrolling
    result = await _read_dom(tab, base_url, deadline=started + timeout)
    result.anomalies.update(anomalies)
    return result


async def _first_signal(tab: Tab, timeout: float, use_api: bool, grace: float) -> tuple[ApiResponse | None, str | None]:
    """(the captured API response or None, what the DOM is ready with, ``READY``'s value, or None):
    whichever comes first; once the DOM is ready, an API response not seen yet gets ``grace`` more seconds, and
    one seen already (its body still being read over CDP, which takes long on a busy machine) the rest of the
    page's time. A block page is not waited on."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    dom = asyncio.ensure_future(tab.wait_for(READY, timeout, polling="mutation"))
    api = asyncio.ensure_future(tab.api_response(timeout)) if use_api else None

    def ready() -> str | None:
        return dom.result() if dom.done() and not dom.cancelled() and dom.exception() is None else None

    try:
        waiting = {dom} if api is None else {dom, api}
        while waiting:
            done, waiting = await asyncio.wait(waiting, timeout=max(0.0, deadline - loop.time()),
                                               return_when=asyncio.FIRST_COMPLETED)
            if not done:
                break
            if api in done and api.result() is not None:
                return api.result(), ready()
            if dom in done:
                error = dom.exception()
                if error is not None:
                    if not isinstance(error, asyncio.TimeoutError):
                        raise _classify(error)
                    break
                shown = ready()  # the DOM's value: a wait ends only on a truthy one
                if api is None or api.done() or (shown is not None and shown.startswith(BLOCKED_PREFIX)):
                    return (api.result() if api is not None and api.done() else None), ready()
                if not tab.api_arrived:  # a response already seen is waited for whole: its body is on its way
                    deadline = min(deadline, loop.time() + grace)
        return (api.result() if api is not None and api.done() else None), ready()
    finally:
        await cancel_and_wait(dom, api)


def page_from_api(api: ApiResponse, base_url: str, search_status: str,
                  seller_key: bytes | None = None) -> PageResult | None:
    """The page from the API's answer; None when the answer cannot be read (the DOM is then read)."""
    if api.status in (403, 429):
        raise PageError(ErrorKind.THROTTLED if api.status == 429 else ErrorKind.BLOCKED, f"API HTTP {api.status}",
                        retry_after_seconds(api.headers.get("retry-after")))
    payload = api.body
    if api.status >= 400 or not isinstance(payload, dict) or not isinstance(payload.get("items"), list):
        return None
    anomalies = api_anomalies(payload)
    meta: dict[str, Any] = payload["meta"] if isinstance(payload.get("meta"), dict) else {}
    num_found: int | None
    try:
        num_found = int(meta["numFound"])
    except (KeyError, TypeError, ValueError):
        num_found = None
    if not payload["items"]:
        if num_found:
            raise PageError(ErrorKind.BLOCKED, f"soft block: no items while numFound={num_found}")
        return PageResult(items=[], num_found=num_found, has_next=False, source="api", anomalies=anomalies)
    try:
        items = [item_from_api(raw, base_url, search_status, seller_key) for raw in payload["items"]]
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise PageError(ErrorKind.PARSE, f"unexpected API item: {e}") from None
    return PageResult(items=items, num_found=num_found, has_next=bool(meta.get("nextPageToken")), source="api",
                      anomalies=anomalies)


async def _cross_check(tab: Tab, base_url: str, result: PageResult) -> None:
    """Compare the cells in view with the API's listings of the same ids."""
    try:  # the cells as soon as they render, in the same evaluation
        state = await tab.wait_for(f"() => document.querySelector('{sel.CELL} {sel.LINK}') ? ({STEP})() : null",
                                   CROSS_CHECK_WAIT, polling="mutation")
    except Exception:
        result.anomalies["cross_check_no_cells"] += 1
        return
    dom = []
    for cell in state["cells"]:
        item = item_from_cell(cell, base_url) if cell["href"] else None
        if item is not None:
            dom.append(item)
            result.anomalies.update(cell_anomalies(cell))
    result.anomalies["cross_checked"] += len(dom)
    wrong = disagreements(result.items, dom)
    if wrong:
        result.anomalies["cross_check_disagreement"] += wrong


async def _read_dom(tab: Tab, base_url: str, deadline: float) -> PageResult:
    """Every listing of the page from its cells, scrolling the virtual list and waiting for lazy loads."""
    loop = asyncio.get_running_loop()
    seen: dict[str, dict[str, Any]] = {}
    anomalies: Counter[str] = Counter()
    waited_out: Counter[str] = Counter()
    broken: set[str] = set()
    state = await tab.evaluate_watched(FIRST_READ)
    blocked = _detect_block(None, state["title"], state["text"])
    if blocked:
        raise PageError(ErrorKind.BLOCKED, blocked)
    if state["noResults"]:
        return PageResult(items=[], num_found=0, has_next=False, source="dom")
    while True:
        left = deadline - loop.time()
        if left <= 0:
            raise PageError(ErrorKind.TIMEOUT, f"reading the list took too long ({len(seen)} items read)")
        state = await tab.evaluate_watched(READ_LIST, {"step": SCROLL_STEP, "back": GAP_STEP_BACK, "full": PAGE_SIZE,
                                               "budgetMs": int(left * 1000), "known": list(seen)})
        anomalies["dom_gap"] += state["gaps"]
        for cell in state["cells"]:
            item = item_from_cell(cell, base_url) if cell["href"] else None
            if item is None:
                if cell.get("text") and cell["text"] not in broken:  # a skeleton has no text; a broken cell has
                    broken.add(cell["text"])
                    anomalies["cell_without_link"] += 1
                continue
            if item["source_id"] not in seen:
                seen[item["source_id"]] = item
                anomalies.update(cell_anomalies(cell))
        if state["stalled"]:  # a scroll got no frame: on if the tab renders again (read on from there)
            await tab.check_rendering()
            continue
        if state["next"] and len(seen) >= PAGE_SIZE:  # a full page
            break
        if state["bottom"] and state["next"] and len(seen) >= FULL_PAGE_MIN:  # whole: quiet at its bottom
            break  # (``READ_LIST`` returns there only once the list was quiet: ``_QUIET_LIST``)
        if state["bottom"]:  # at the bottom of what is rendered
            short = state["next"] and len(seen) < PAGE_SIZE
            wait = min(LAZY_WAIT if short else QUIET, max(0.0, deadline - loop.time()))
            try:
                await tab.wait_for(f"() => document.documentElement.scrollHeight > {state['height']}", wait,
                                   polling="raf")
            except Exception:
                await tab.check_rendering()  # a list that stopped growing in a tab that stopped rendering: not done
                # the list stopped growing: done (re-read the next-page control, it may come with the last items)
                final = await tab.evaluate(STEP)
                waited_out["lazy_load" if short else "quiet"] += 1
                if final["next"] and len(seen) < FULL_PAGE_MIN:  # a page that stopped rendering
                    anomalies["short_page"] += 1
                state["next"] = final["next"]
                break
    anomalies = +anomalies  # no zero counts
    return PageResult(items=list(seen.values()), num_found=None, has_next=bool(state["next"]), source="dom",
                      anomalies=anomalies, waited_out=waited_out)


#: A person's scroll: one small step down (the pauses between steps are the crawler's, see ``_human_scroll``).
HUMAN_STEP = "(dy) => window.scrollBy(0, dy)"


async def _human_scroll(tab: Tab) -> None:
    """A few small, uneven scrolls and pauses, as a person would (first page only, while it loads), then back to
    the top. Driven step by step from here, not as one script inside the page: it can be stopped between two
    steps (the API path stops it once its page is read, before the tab moves on to the next page; a script left
    running in the page was still scrolling, and re-rendering the list, when the next page was requested)."""
    steps = [(random.randint(120, 420), random.randint(30, 100)) for _ in range(random.randint(2, 3))]
    try:
        for dy, pause in steps:
            await tab.evaluate_detached(HUMAN_STEP, dy)
            await asyncio.sleep(pause / 1000)
        await tab.evaluate_detached(BACK_TO_TOP)
    except asyncio.CancelledError:
        raise
    except Exception:  # the page went away (a block page, a navigation): nothing to imitate on
        pass


async def _stop(task: asyncio.Task[None] | None) -> None:
    """Stop a background task (between two of its steps) and wait until it has stopped; the caller's own
    cancellation meanwhile propagates."""
    await cancel_and_wait(task)


def _classify(error: BaseException) -> PageError:
    """A navigation's or a wait's error, by its class: a time limit (asyncio's, of which pyppeteer's
    ``TimeoutError`` and the driver's ``CallTimeout`` are kinds), the network (a navigation Chromium could not
    make, a lost connection or socket), else unknown (a tab or browser that went away, a failed evaluation)."""
    text = f"{type(error).__name__}: {error}"
    # the two are one class from Python 3.11 on; on 3.10 a socket's time limit is only the builtin one
    if isinstance(error, (asyncio.TimeoutError, TimeoutError)):
        return PageError(ErrorKind.TIMEOUT, text)
    if isinstance(error, NavigationFailed) or driver_compat.is_connection_lost(error):
        return PageError(ErrorKind.NETWORK, text)
    return PageError(ErrorKind.UNKNOWN, text)


__all__ = ["ErrorKind", "PageError", "PageResult", "fetch_page", "item_from_api", "item_from_cell", "open_page",
           "page_from_api", "search_url"]
