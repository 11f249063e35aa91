"""A deterministic second-hand market per keyword, evolving with a (possibly accelerated) clock.

Nothing is stored: listing ``n`` of a keyword is derived from a seeded
random stream, so the state at any time ``t`` — and so the ground truth the
tests compare against — is a pure function of (keyword, t). Listings appear
at the keyword's rate; each may change price, sell (first "trading", then
"sold out"), be relisted, be a Mercari Shops product, have no price (the site then shows the placeholder
¥9,999,999 with a no-price flag) or be priced at that placeholder by its seller (no flag).

Like the real site, a sold listing stays in the sold search for good: a sold search's total (``numFound``)
counts every sold listing since the market began, so it only grows, except when a trade is cancelled and the
listing relisted. A listing still on sale ``HORIZON`` after its creation is withdrawn (it leaves the on-sale
search). Every listing's story is over by then (sold out, relisted, or never sold), and which listings sell is
dealt out per block of ``BLOCK`` listings in fixed numbers, so the sold listings older than the horizon (the
archive) are counted without generating them.

Like the real site, a search page is filled from 120 search hits (its
positions in the search) and then drops the listings the site
filters out of search pages (``hidden``: about one listing in ``HIDDEN_ONE_IN``, drawn from its own seed, so
the same listings whatever the time or the page): a page with a next page holds a few listings short of 120
(recorded answers of the real API: 116 to 119), and ``numFound`` still counts them. A hidden listing is never
served, on any page of either search, at any time: it is not in the pages' truth (the simulator's
``page_items``), and a crawl that reads every page misses nothing it could have seen.
"""

from __future__ import annotations

import hashlib
import math
import random
from dataclasses import dataclass
from functools import cached_property, lru_cache

from lib.standins.simulator.titles import Title, make_title

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
    """One listing's whole life: listing ``n`` of ``keyword``. Its title (``name``) and what it truly carries
    (``goods``, ``characters``) are derived when first asked for: a search's total needs every young listing's
    status, its pages only 120 titles."""

    keyword: str
    n: int
    id: str            # "m…" or, for Shops products, a 22-character id
    shops: bool
    created: float
    price0: int | None
    price_change_at: float | None
    price1: int | None
    sold_at: float | None      # on sale until then, then trading
    sold_out_at: float | None  # trading until then, then sold out
    relisted_at: float | None  # sold → on sale again
    hidden: bool = False       # filtered out of every search page (counted in numFound)

    @cached_property
    def _title(self) -> Title:
        return make_title(self.keyword, self.n)

    @property
    def name(self) -> str:
        return self._title.text

    @property
    def goods(self) -> tuple[str, ...]:
        """The goods types the title truly carries (``titles.make_title``)."""
        return self._title.goods

    @property
    def characters(self) -> tuple[str, ...]:
        """The characters it truly names."""
        return self._title.characters

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


#: Of each block of BLOCK consecutive listings, SOLD_FOR_GOOD sell and stay sold, RELISTED sell and are relisted
#: (a cancelled trade), the rest never sell: 70 % sell, 3 % of those are relisted.
BLOCK, SOLD_FOR_GOOD, RELISTED = 100, 68, 2
SOLD_FATE, RELISTED_FATE, UNSOLD_FATE = "sold", "relisted", "unsold"
#: A sale comes at most this long after the listing (an exponential wait of mean 10 h, cut there), its trade
#: ends within TRADE_MAX: a listing's story is over HORIZON after its creation.
SALE_MAX, TRADE_MAX, RELIST_MAX = 48 * HOUR, 24 * HOUR, 5 * HOUR


def _seed(keyword: str, n: int, salt: str = "") -> int:
    return int.from_bytes(hashlib.blake2b(f"{keyword}\x00{n}{salt}".encode(), digest_size=8).digest(), "big")


#: One listing in this many is hidden from the search pages (about 2 of a page's 120 hits; its own seed: the
#: listings' other draws are as they were).
HIDDEN_ONE_IN = 60


def hidden(keyword: str, n: int) -> bool:
    """Whether the site filters listing ``n`` out of its search pages."""
    return _seed(keyword, n, "\x00hidden") % HIDDEN_ONE_IN == 0


#: Keywords starting with this have no listings at all (the "no results" page).
NO_RESULTS_PREFIX = "該当なし"


@lru_cache(maxsize=20_000)
def listings_per_hour(keyword: str) -> float:
    """Each keyword has its own heat: 20 to 220 new listings an hour."""
    if keyword.startswith(NO_RESULTS_PREFIX):
        return 0.0
    return 20 + _seed(keyword, -1) % 200


@lru_cache(maxsize=20_000)
def _fates(keyword: str, block: int) -> tuple[str, ...]:
    """The fate of each listing of a block: exactly SOLD_FOR_GOOD sold, RELISTED relisted, in a seeded order."""
    unsold = BLOCK - SOLD_FOR_GOOD - RELISTED
    fates = [SOLD_FATE] * SOLD_FOR_GOOD + [RELISTED_FATE] * RELISTED + [UNSOLD_FATE] * unsold
    random.Random(_seed(keyword, -2 - block)).shuffle(fates)
    return tuple(fates)


def fate(keyword: str, n: int) -> str:
    return _fates(keyword, n // BLOCK)[n % BLOCK]


@lru_cache(maxsize=200_000)
def listing(keyword: str, n: int) -> Listing:
    seed = _seed(keyword, n)
    rng = random.Random(seed)
    rate = listings_per_hour(keyword)
    created = EPOCH + n / rate * HOUR + rng.uniform(0, HOUR / rate)
    shops = rng.random() < 0.08
    no_price = rng.random() < 0.02
    price0 = None if no_price else int(round(rng.lognormvariate(7.8, 0.8), -1)) + 300
    change = rng.random() < 0.15 and not no_price
    price_change_at = created + rng.uniform(0.5, 20) * HOUR if change else None
    price1 = max(300, int(price0 * rng.uniform(0.7, 0.95))) if change and price0 is not None else price0
    story = fate(keyword, n)
    wait, trade, relist = rng.random(), rng.uniform(1 * HOUR, TRADE_MAX), rng.uniform(0.5 * HOUR, RELIST_MAX)
    # an exponential wait of mean 10 h, cut at SALE_MAX (drawn by inverting its distribution function)
    sold_at = (created - 10 * HOUR * math.log(1 - wait * (1 - math.exp(-SALE_MAX / (10 * HOUR))))
               if story != UNSOLD_FATE else None)
    sold_out_at = sold_at + trade if sold_at is not None else None
    relisted_at = sold_at + relist if sold_at is not None and story == RELISTED_FATE else None
    ident = (hashlib.sha1(f"{keyword}{n}".encode()).hexdigest()[:22] if shops
             else f"m{10_000_000_000 + seed % 89_999_999_999}")
    rng.randrange(12)  # what the title's noun once drew: the draws after it stay the same
    if price0 is not None and not change and rng.random() < 0.01:  # drawn last: the other listings stay as they were
        price0 = price1 = PLACEHOLDER_PRICE
    return Listing(keyword, n, ident, shops, created, price0, price_change_at, price1, sold_at, sold_out_at,
                   relisted_at, hidden(keyword, n))


def _first(keyword: str, t: float) -> int:
    """The oldest listing younger than the horizon at ``t``: every listing before it was created over HORIZON
    before ``t`` (created(n) < EPOCH + (n + 1) / rate), its story over."""
    return max(0, math.floor((t - HORIZON - EPOCH) / HOUR * listings_per_hour(keyword)))


@lru_cache(maxsize=8)  # a crawl's pages, and a search's page and total, at one time: computed once
def visible(keyword: str, t: float) -> list[tuple[Listing, str]]:
    """Every listing younger than the horizon at ``t`` with its status, newest first (not to be changed)."""
    rate = listings_per_hour(keyword)
    if not rate:
        return []
    last = math.floor((t - EPOCH) / HOUR * rate)
    first = _first(keyword, t)
    out = []
    for n in range(last, first - 1, -1):
        item = listing(keyword, n)
        status = item.status_at(t)
        if status is not None:
            out.append((item, status))
    out.sort(key=lambda pair: pair[0].created, reverse=True)
    return out


def search(keyword: str, statuses: set[str], t: float) -> list[tuple[Listing, str]]:
    """What a newest-first search with these statuses lists at ``t`` among the listings younger than the
    horizon; a sold-out search goes on into the archive (``archive``, ``total``)."""
    return [(item, status) for item, status in visible(keyword, t) if status in statuses]


def archived_sold(keyword: str, statuses: set[str], t: float) -> int:
    """How many listings older than the horizon at ``t`` a search with these statuses counts: the sold ones (all
    sold out by then), counted by block."""
    if SOLD_OUT not in statuses or not listings_per_hour(keyword):
        return 0
    first = _first(keyword, t)
    block, rest = divmod(first, BLOCK)
    return block * SOLD_FOR_GOOD + _fates(keyword, block)[:rest].count(SOLD_FATE)


def archive(keyword: str, t: float, skip: int, count: int) -> list[tuple[Listing, str]]:
    """The sold listings older than the horizon at ``t``, newest first, after the first ``skip`` of them."""
    out: list[tuple[Listing, str]] = []
    if not listings_per_hour(keyword):
        return out
    n = _first(keyword, t) - 1
    while n >= 0 and len(out) < count:
        block, position = divmod(n, BLOCK)
        if position == BLOCK - 1 and skip >= SOLD_FOR_GOOD:  # whole blocks skipped at once
            blocks = min(skip // SOLD_FOR_GOOD, block + 1)
            skip -= blocks * SOLD_FOR_GOOD
            n -= blocks * BLOCK
            continue
        if _fates(keyword, block)[position] == SOLD_FATE:
            if skip:
                skip -= 1
            else:
                out.append((listing(keyword, n), SOLD_OUT))
        n -= 1
    return out


def total(keyword: str, statuses: set[str], t: float) -> int:
    """A search's total at ``t`` (the API's ``numFound``): the archive's sold listings count for a sold-out
    search."""
    return len(search(keyword, statuses, t)) + archived_sold(keyword, statuses, t)
