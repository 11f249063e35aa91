"""One listing's state, read from its page (docs/concepts/crawling.md, "Item checks"): the page's script GETs the
item API (``https://api.mercari.jp/items/get?id=m…``), whose answer the tab captures, as it captures a search
page's. The answer says the listing is on sale, trading or sold out (``data.status``), or, HTTP 404 with
``RecordNotFoundException``, that the site holds no listing under that id any more: its seller deleted it
(take-kun/mercapi tests/cassettes/test_item.yml, test_item_not_found.yml).

The worker asks this of the earlier listing a new one may relist (``lib.market.relists``): deleted, the new one
is its relist; on sale or sold, the new one is other goods. Only the API's answer is read: a page whose answer
was not captured, or says something else (a status this module does not know), tells nothing (``UNKNOWN``).
"""

from __future__ import annotations

from typing import Any

from lib.crawling.driver import ApiResponse, Tab
from lib.crawling.item_states import DELETED, ON_SALE, SOLD_OUT, TRADING, UNKNOWN
from lib.crawling.page_fetch import ErrorKind, PageError, open_page, retry_after_seconds

#: The item API's error code for an id it holds no listing under.
NOT_FOUND = "RecordNotFoundException"


def item_url(base_url: str, source_id: str) -> str:
    return f"{base_url.rstrip('/')}/item/{source_id}"


def state_from_api(api: ApiResponse) -> str:
    """The state an item API answer tells. Raises ``PageError`` (throttled or blocked) for a 429 or 403."""
    if api.status in (403, 429):
        raise PageError(ErrorKind.THROTTLED if api.status == 429 else ErrorKind.BLOCKED, f"item API HTTP {api.status}",
                        retry_after_seconds(api.headers.get("retry-after")))
    body: Any = api.body
    if not isinstance(body, dict):
        return UNKNOWN
    if api.status == 404:
        errors = body.get("errors")
        codes = {e.get("code") for e in errors if isinstance(e, dict)} if isinstance(errors, list) else set()
        return DELETED if NOT_FOUND in codes else UNKNOWN
    data = body.get("data")
    status = data.get("status") if api.status == 200 and isinstance(data, dict) else None
    return status if status in (ON_SALE, TRADING, SOLD_OUT) else UNKNOWN


def answered_state(status: int, body: object) -> str:
    """``state_from_api`` of an answer given as its HTTP status and JSON body (a stand-in's, read without a
    browser)."""
    return state_from_api(ApiResponse(status, {}, body))


async def read_item(tab: Tab, url: str, timeout: float) -> str:
    """The state of the listing whose page is ``url``, read within ``timeout`` seconds; raises ``PageError``
    when the site refuses the read (a block page, a 429 or 403)."""
    with tab.page_deadline(timeout):
        await open_page(tab, url, timeout)
        api = await tab.api_response(timeout)
    return UNKNOWN if api is None else state_from_api(api)
