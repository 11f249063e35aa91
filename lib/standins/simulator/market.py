"""A deterministic second-hand market per keyword, evolving with a (possibly accelerated) clock.

Nothing is stored: listing ``n`` of a keyword is derived from a seeded
random stream, so the state at any time ``t`` — and so the ground truth the
tests compare against — is a pure function of (keyword, t). Listings appear
at the keyword's rate; each may change price, sell (first "trading", then
"sold out"), be relisted, be a Mercari Shops product, have no price (the site then shows the placeholder
¥9,999,999 with a no-price flag) or be priced at that placeholder by its seller (no flag).
"""

from __future__ import annotations

import hashlib
import math
import random
from dataclasses import dataclass
from functools import lru_cache

HOUR = 3600.0
#: How far back listings are generated: older ones are off every page the crawler reads.
HORIZON = 3 * 24 * HOUR
#: The epoch listings are numbered from (listing n appears around EPOCH + n / rate).
EPOCH = 1_700_000_000.0

ON_SALE, TRADING, SOLD_OUT = "on_sale", "trading", "sold_out"
#: The price the site shows for a listing without a real one.
PLACEHOLDER_PRICE = 9_999_999


@dataclass(frozen=True)
class Listing:
    """One listing's whole life."""

    id: str            # "m…" or, for Shops products, a 22-character id
    shops: bool
    name: str
    created: float
    price0: int | None
    price_change_at: float | None
    price1: int | None
    sold_at: float | None      # on sale until then, then trading
    sold_out_at: float | None  # trading until then, then sold out
    relisted_at: float | None  # sold → on sale again

    def status_at(self, t: float) -> str | None:
        if t < self.created:
            return None
        if self.relisted_at is not None and t >= self.relisted_at:
            return ON_SALE
        if self.sold_at is not None and t >= self.sold_at:
            return SOLD_OUT if self.sold_out_at is not None and t >= self.sold_out_at else TRADING
        return ON_SALE

    def price_at(self, t: float) -> int | None:
        if self.price_change_at is not None and t >= self.price_change_at:
            return self.price1
        return self.price0

    def updated_at(self, t: float) -> float:
        moments = [m for m in (self.created, self.price_change_at, self.sold_at, self.sold_out_at, self.relisted_at)
                   if m is not None and m <= t]
        return max(moments)


def _seed(keyword: str, n: int) -> int:
    return int.from_bytes(hashlib.blake2b(f"{keyword}\x00{n}".encode(), digest_size=8).digest(), "big")


#: Keywords starting with this have no listings at all (the "no results" page).
NO_RESULTS_PREFIX = "該当なし"


def listings_per_hour(keyword: str) -> float:
    """Each keyword has its own heat: 20 to 220 new listings an hour."""
    if keyword.startswith(NO_RESULTS_PREFIX):
        return 0.0
    return 20 + _seed(keyword, -1) % 200


@lru_cache(maxsize=200_000)
def listing(keyword: str, n: int) -> Listing:
    rng = random.Random(_seed(keyword, n))
    rate = listings_per_hour(keyword)
    created = EPOCH + n / rate * HOUR + rng.uniform(0, HOUR / rate)
    shops = rng.random() < 0.08
    no_price = rng.random() < 0.02
    price0 = None if no_price else int(round(rng.lognormvariate(7.8, 0.8), -1)) + 300
    change = rng.random() < 0.15 and not no_price
    price_change_at = created + rng.uniform(0.5, 20) * HOUR if change else None
    price1 = max(300, int(price0 * rng.uniform(0.7, 0.95))) if change and price0 is not None else price0
    sells = rng.random() < 0.7
    sold_at = created + rng.expovariate(1 / (10 * HOUR)) if sells else None
    sold_out_at = sold_at + rng.uniform(1, 48) * HOUR if sold_at is not None else None
    relisted_at = sold_at + rng.uniform(0.5, 5) * HOUR if sold_at is not None and rng.random() < 0.03 else None
    ident = (hashlib.sha1(f"{keyword}{n}".encode()).hexdigest()[:22] if shops
             else f"m{10_000_000_000 + _seed(keyword, n) % 89_999_999_999}")
    name = f"{keyword} {_NOUNS[rng.randrange(len(_NOUNS))]} {n % 1000:03d}"
    if price0 is not None and not change and rng.random() < 0.01:  # drawn last: the other listings stay as they were
        price0 = price1 = PLACEHOLDER_PRICE
    return Listing(ident, shops, name, created, price0, price_change_at, price1, sold_at, sold_out_at, relisted_at)


_NOUNS = ["フィギュア", "アクリルスタンド", "缶バッジ", "ぬいぐるみ", "キーホルダー", "タペストリー", "色紙",
          "全巻セット", "トレカ", "ポスター", "Tシャツ", "クリアファイル"]


def visible(keyword: str, t: float) -> list[tuple[Listing, str]]:
    """Every listing that exists at ``t`` with its status, newest first."""
    rate = listings_per_hour(keyword)
    if not rate:
        return []
    last = math.floor((t - EPOCH) / HOUR * rate)
    first = max(0, math.floor((t - HORIZON - EPOCH) / HOUR * rate))
    out = []
    for n in range(last, first - 1, -1):
        item = listing(keyword, n)
        status = item.status_at(t)
        if status is not None:
            out.append((item, status))
    out.sort(key=lambda pair: pair[0].created, reverse=True)
    return out


def search(keyword: str, statuses: set[str], t: float) -> list[tuple[Listing, str]]:
    """What a newest-first search with these statuses lists at ``t``."""
    return [(item, status) for item, status in visible(keyword, t) if status in statuses]
