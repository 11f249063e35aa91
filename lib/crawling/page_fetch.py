"""Fetching one search page (seed 000 §3.4–3.5): navigate, detect blocks, read the items.

Items come from the search API's JSON captured in the browser when it is
there (the most robust source), else from the DOM, read through the
virtual list: cells are collected as they appear while scrolling, until the
page's item count is reached or three scrolls bring nothing new.
"""

from __future__ import annotations

import asyncio
import enum
import random
import re
from dataclasses import dataclass, field
from urllib.parse import quote

from lib.crawling import selectors as sel
from lib.crawling.driver import Tab

PAGE_SIZE = 120
STALL_SCROLLS = 3


class ErrorKind(str, enum.Enum):
    TIMEOUT = "timeout"
    BLOCKED = "blocked"
    NETWORK = "network"
    PARSE = "parse"
    UNKNOWN = "unknown"

    @property
    def counts_toward_proxy_switch(self) -> bool:
        return self in (ErrorKind.TIMEOUT, ErrorKind.BLOCKED, ErrorKind.NETWORK)


class PageError(Exception):
    def __init__(self, kind: ErrorKind, detail: str) -> None:
        super().__init__(f"{kind.value}: {detail}")
        self.kind = kind
        self.detail = detail


@dataclass
class PageResult:
    items: list[dict] = field(default_factory=list)
    num_found: int | None = None
    has_next: bool = False
    source: str = "api"  # or "dom"


def search_url(base_url: str, keyword: str, status: str, page: int) -> str:
    """The newest-first search URL; page n+1 carries ``page_token=v1:n``."""
    url = (f"{base_url.rstrip('/')}/search?keyword={quote(keyword)}&status={quote(status, safe='')}"
           f"&sort=created_time&order=desc")
    return url + (f"&page_token=v1:{page - 1}" if page > 1 else "")


READY = f"""() => {{
  if (document.querySelector('{sel.CELL} {sel.LINK}')) return true;
  const text = document.body ? document.body.innerText : '';
  if (text.includes('{sel.NO_RESULTS_TEXT}')) return true;
  if (typeof window.__numFound === 'number' && window.__numFound > 0
      && !document.querySelector('{sel.CELL} {sel.LINK}')) return true;
  return {list(sel.BLOCK_MARKERS)}.some(m => document.title.includes(m) || text.includes(m));
}}"""

READ_CELLS = f"""() => Array.from(document.querySelectorAll('{sel.CELL}')).map(cell => {{
  const link = cell.querySelector('{sel.LINK}');
  if (!link) return null;
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
}}).filter(Boolean)"""

PAGE_STATE = f"""() => ({{
  numFound: typeof window.__numFound === 'number' ? window.__numFound : null,
  scrollY: window.scrollY, height: document.documentElement.scrollHeight, viewport: window.innerHeight,
  noResults: document.body.innerText.includes('{sel.NO_RESULTS_TEXT}'),
}})"""


def _detect_block(status: int | None, title: str, text: str) -> str | None:
    if status in (403, 429):
        return f"HTTP {status}"
    for marker in sel.BLOCK_MARKERS:
        if marker in title or marker in text:
            return marker
    if status is not None and status >= 500:
        return f"HTTP {status}"
    return None


def item_from_api(raw: dict, base_url: str) -> dict:
    shops = raw.get("itemType") == "ITEM_TYPE_BEYOND"
    price = raw.get("price")
    return {
        "source_id": str(raw["id"]),
        "title": raw.get("name") or "",
        "price": int(price) if price not in (None, "") else None,
        "status": "on_sale" if raw.get("status") == "ITEM_STATUS_ON_SALE" else "sold",
        "image_url": (raw.get("thumbnails") or [""])[0],
        "item_url": f"{base_url.rstrip('/')}/{'shops/product' if shops else 'item'}/{raw['id']}",
        "created": int(raw["created"]) if raw.get("created") else None,
        "updated": int(raw["updated"]) if raw.get("updated") else None,
    }


def item_from_cell(cell: dict, base_url: str) -> dict | None:
    """A cell read from the DOM as an item, or None when it has no usable link."""
    href = cell.get("href") or ""
    match = re.match(sel.ITEM_HREF, href) or re.match(sel.SHOPS_HREF, href)
    if not match:
        return None
    price_text = cell.get("price") or ""
    digits = re.sub(r"[^\d]", "", price_text)
    if not digits:
        in_label = re.search(sel.PRICE_IN_LABEL, cell.get("label") or "")
        digits = in_label.group(1).replace(",", "") if in_label else ""
    name = cell.get("name")
    if name is None:  # the name can also be read off the image label: "NAMEの画像 …"
        name = (cell.get("label") or "").split("の画像")[0]
    return {
        "source_id": match.group(1), "title": name, "price": int(digits) if digits else None,
        "status": "sold" if cell.get("sold") or "売り切れ" in (cell.get("label") or "") else "on_sale",
        "image_url": cell.get("image") or "", "item_url": f"{base_url.rstrip('/')}{href}",
        "created": None, "updated": None,
    }


async def fetch_page(tab: Tab, url: str, base_url: str, *, timeout: float, first_page: bool,
                     use_api: bool = True) -> PageResult:
    """One search page's items; raises ``PageError`` with its kind."""
    try:
        nav = await tab.goto(url, timeout)
    except Exception as e:
        raise _classify(e) from None
    blocked = _detect_block(nav.status, nav.title, nav.text)
    if blocked:
        raise PageError(ErrorKind.BLOCKED, blocked)
    try:
        await tab.wait_for(READY, timeout)
    except Exception as e:
        raise _classify(e) from None
    after = await tab.evaluate("() => [document.title, document.body.innerText.slice(0, 2000)]")
    blocked = _detect_block(None, after[0], after[1])
    if blocked:
        raise PageError(ErrorKind.BLOCKED, blocked)
    await tab.evaluate(f"() => {{ const s = document.querySelector('{sel.MODAL_SCRIM}'); if (s) s.remove(); }}")

    state = await tab.evaluate(PAGE_STATE)
    payloads = await tab.api_payloads() if use_api else []
    api = next((p for p in payloads if isinstance(p, dict) and isinstance(p.get("items"), list)), None)
    num_found = state["numFound"]
    if api is not None:
        num_found = int((api.get("meta") or {}).get("numFound") or 0)
    if state["noResults"] or num_found == 0:
        return PageResult(items=[], num_found=0, has_next=False, source="api" if api else "dom")
    if api is not None and not api["items"] and num_found:
        raise PageError(ErrorKind.BLOCKED, f"soft block: no items while numFound={num_found}")
    if first_page:
        await _human_scroll(tab)
    if api is not None:
        try:
            items = [item_from_api(raw, base_url) for raw in api["items"]]
        except (KeyError, TypeError, ValueError) as e:
            raise PageError(ErrorKind.PARSE, f"unexpected API item: {e}") from None
        has_next = bool((api.get("meta") or {}).get("nextPageToken"))
        return PageResult(items=items, num_found=num_found, has_next=has_next, source="api")
    items = await _scroll_virtual_list(tab, base_url, expected=min(PAGE_SIZE, num_found or PAGE_SIZE))
    if not items and num_found:
        raise PageError(ErrorKind.BLOCKED, f"soft block: no cells while numFound={num_found}")
    return PageResult(items=items, num_found=num_found, has_next=bool(num_found and num_found > PAGE_SIZE),
                      source="dom")


async def _human_scroll(tab: Tab) -> None:
    """A few small, uneven scrolls and pauses before reading, as a person would (first page only)."""
    for _ in range(random.randint(2, 4)):
        await tab.evaluate(f"() => window.scrollBy(0, {random.randint(120, 420)})")
        await asyncio.sleep(random.uniform(0.05, 0.2))
    await tab.evaluate("() => window.scrollTo(0, 0)")


async def _scroll_virtual_list(tab: Tab, base_url: str, expected: int) -> list[dict]:
    """Collect cells while scrolling: the list only keeps ~20 in the DOM at a time."""
    seen: dict[str, dict] = {}
    stalls = 0
    while len(seen) < expected and stalls < STALL_SCROLLS:
        before = len(seen)
        for cell in await tab.evaluate(READ_CELLS):
            item = item_from_cell(cell, base_url)
            if item is not None:
                seen.setdefault(item["source_id"], item)
        state = await tab.evaluate(PAGE_STATE)
        at_bottom = state["scrollY"] + state["viewport"] >= state["height"] - 2
        stalls = stalls + 1 if len(seen) == before else 0
        if at_bottom and len(seen) == before:
            break
        await tab.evaluate("() => window.scrollBy(0, Math.floor(window.innerHeight * 0.8))")
        await asyncio.sleep(0.06)
    return list(seen.values())


def _classify(error: Exception) -> PageError:
    text = f"{type(error).__name__}: {error}"
    lowered = text.lower()
    if "timeout" in lowered:
        return PageError(ErrorKind.TIMEOUT, text)
    if any(k in lowered for k in ("net::err", "connection", "refused", "reset", "unreachable", "dns")):
        return PageError(ErrorKind.NETWORK, text)
    return PageError(ErrorKind.UNKNOWN, text)
