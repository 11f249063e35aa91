"""A search page's listings as crawl items, from the API's JSON or from the page's cells, and what looked
unexpected in them (drift anomalies, counted by kind).

Prices that are prices: a listing the site marks as having no price (the API's no-price flag), or priced at
the placeholder ¥9,999,999 (shown for no-price listings, and set by sellers to mean "not for sale"), is carried
with ``price: None`` and ``price_flag`` saying why (``no_price``, ``placeholder``); a cell with no readable
price has ``price_flag: "missing"``. None of them enters price statistics (they skip a null price).

Relists and auctions (docs/concepts/crawling.md, "What the crawler keeps"): an API hit's seller id is kept only as
``seller``, a keyed hash (``seller_hash``, the key being SELLER_HASH_SECRET or the deployment's own), never the id;
the DOM shows no seller, so a listing read from the page has none. A hit with an ``auction_info`` map is an auction
(``auction: True``): its price is the current bid, carried as the price but kept out of the fixed-price
statistics by the pipeline.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections import Counter
from typing import Any

import redis

from lib.core import keys
from lib.core.settings import Settings
from lib.crawling import selectors as sel

NO_PRICE, PLACEHOLDER, MISSING = "no_price", "placeholder", "missing"
_NO_PRICE_FLAG = re.compile(sel.NO_PRICE_FLAG, re.IGNORECASE)


def price_of(amount: int | None, no_price_flag: bool = False) -> tuple[int | None, str | None]:
    """(price, flag): the one rule for what counts as a price."""
    if no_price_flag:
        return None, NO_PRICE
    if amount is None:
        return None, MISSING
    if amount >= sel.PLACEHOLDER_PRICE:
        return None, PLACEHOLDER
    return amount, None


def _number(value: Any) -> int | None:
    """A number the API sends as a string (or, after a change, as a number)."""
    if value is None or value == "" or isinstance(value, bool):
        return None
    return int(value)


def seller_hash(seller_id: str, key: bytes) -> str:
    """The seller's keyed hash (HMAC-BLAKE2b, 64 bits): the same seller, the same hash, under one key; without the
    key, no way back to the id short of trying every id with it. 16 hex digits."""
    return hmac.new(key, seller_id.encode(), hashlib.blake2b).hexdigest()[:16]


def seller_key(settings: Settings) -> bytes | None:
    """The key of the sellers' hash set by SELLER_HASH_SECRET, or None when it is unset."""
    return settings.seller_hash_secret.encode() if settings.seller_hash_secret else None


def deployment_seller_key(client: redis.Redis) -> bytes:
    """The deployment's own key of the sellers' hash, where SELLER_HASH_SECRET is unset: made at random by the first
    crawler that asks and kept in the state store, so every crawler of the deployment hashes a seller alike. A
    state store emptied makes a new key: a relist across that moment is counted as new goods."""
    client.set(keys.SELLER_HASH_KEY, secrets.token_hex(32), nx=True)
    stored = client.get(keys.SELLER_HASH_KEY)
    if stored is None:  # removed between the two calls: this crawl keeps no seller, the next one makes a key
        raise redis.RedisError("the sellers' hash key vanished from the state store")
    return stored if isinstance(stored, bytes) else str(stored).encode()


def _seller_of(raw: dict[str, Any], key: bytes | None) -> str | None:
    seller = raw.get(sel.API_SELLER)
    if key is None or seller is None or seller == "" or isinstance(seller, (bool, dict, list)):
        return None
    return seller_hash(str(seller), key)


def is_auction(raw: dict[str, Any]) -> bool:
    """Whether a hit is an auction: it carries an ``auction_info`` map (a fixed-price hit has none, or null)."""
    return isinstance(raw.get(sel.API_AUCTION), dict)


def has_no_price_flag(raw: dict[str, Any]) -> bool:
    return any(value is True and _NO_PRICE_FLAG.match(name) for name, value in raw.items())


def item_from_api(raw: dict[str, Any], base_url: str, search_status: str = "on_sale",
                  seller_key: bytes | None = None) -> dict[str, Any]:
    """One API item as a crawl item. An unknown status value takes the status of the search that listed it.
    ``seller_key``: the key of the seller's hash (None: the seller is not kept)."""
    api_status = raw.get("status")
    if api_status == sel.API_ON_SALE:
        status = "on_sale"
    elif api_status in sel.API_SOLD:
        status = "sold"
    else:
        status = search_status
    price, flag = price_of(_number(raw.get("price")), has_no_price_flag(raw))
    shops = raw.get("itemType") == sel.API_SHOPS_TYPE
    return {
        "source_id": str(raw["id"]), "title": raw.get("name") or "", "price": price, "price_flag": flag,
        "status": status, "image_url": (raw.get("thumbnails") or [""])[0],
        "item_url": f"{base_url.rstrip('/')}/{'shops/product' if shops else 'item'}/{raw['id']}",
        "created": _number(raw.get("created")), "updated": _number(raw.get("updated")),
        "seller": _seller_of(raw, seller_key), "auction": is_auction(raw),
    }


def api_anomalies(payload: dict[str, Any]) -> Counter[str]:
    """What in an API answer differs from the shape the crawler was written for: fields missing or of another
    JSON type, status values it does not know."""
    found: Counter[str] = Counter()
    meta = payload.get("meta")
    if not isinstance(meta, dict):
        found["api_meta_missing"] += 1
        meta = {}
    for name, kind in sel.API_META_FIELDS.items():
        if name not in meta:
            found[f"api_field_missing:meta.{name}"] += 1
        elif not isinstance(meta[name], kind):
            found[f"api_field_type:meta.{name}"] += 1
    for raw in payload.get("items") or []:
        if not isinstance(raw, dict):
            found["api_item_not_a_map"] += 1
            continue
        for name, item_kind in sel.API_ITEM_FIELDS.items():
            if name not in raw:
                found[f"api_field_missing:{name}"] += 1
            elif not isinstance(raw[name], item_kind):
                found[f"api_field_type:{name}"] += 1
        status = raw.get("status")
        if status != sel.API_ON_SALE and status not in sel.API_SOLD:
            found[f"api_status_unknown:{str(status)[:40]}"] += 1
    return found


def item_from_cell(cell: dict[str, Any], base_url: str) -> dict[str, Any] | None:
    """A cell read from the DOM as an item, or None when it has no usable link."""
    href = cell.get("href") or ""
    match = re.match(sel.ITEM_HREF, href) or re.match(sel.SHOPS_HREF, href)
    if not match:
        return None
    label = cell.get("label") or ""
    digits = re.sub(r"[^\d]", "", cell.get("price") or "")
    if not digits:
        in_label = re.search(sel.PRICE_IN_LABEL, label)
        digits = in_label.group(1).replace(",", "") if in_label else ""
    name = cell.get("name")
    if name is None:  # the name can also be read off the image label: "NAMEの画像 …"
        name = label.split("の画像")[0]
    price, flag = price_of(int(digits) if digits else None)
    return {
        "source_id": match.group(1), "title": name, "price": price, "price_flag": flag,
        "status": "sold" if cell.get("sold") or "売り切れ" in label else "on_sale",
        "image_url": cell.get("image") or "", "item_url": f"{base_url.rstrip('/')}{href}",
        "created": None, "updated": None, "seller": None, "auction": False,
    }


def cell_anomalies(cell: dict[str, Any]) -> list[str]:
    """What a cell with a link lacks that the crawler reads (it may still be read, off the image label)."""
    out = []
    if cell.get("name") is None:
        out.append("cell_without_name")
    if not cell.get("price"):
        out.append("cell_without_price")
    return out


#: Fields compared when both sources are there (the DOM has no creation time).
CROSS_CHECKED = ("title", "price", "status", "item_url")


def disagreements(api_items: list[dict[str, Any]], dom_items: list[dict[str, Any]]) -> int:
    """How many of the cells read disagree with the API's listing of the same id (or are not in it)."""
    by_id = {item["source_id"]: item for item in api_items}
    wrong = 0
    for item in dom_items:
        twin = by_id.get(item["source_id"])
        if twin is None or any(item[f] != twin[f] for f in CROSS_CHECKED):
            wrong += 1
    return wrong
