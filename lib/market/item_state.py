"""The per-listing state machine (docs/concepts/measures.md): what changed since an item was last seen.

States live in Redis hashes ``animetop:item:{<ip_id>}:<source_id>`` (status,
price, first_seen, last_seen, and ``t``: the fingerprint of the title the
listing's snapshot got, ``title_key``) with a TTL by status. Reading and writing
a 1,000-item result takes a handful of round trips: one Lua call per ``CHUNK``
items each way.
"""

from __future__ import annotations

import enum
import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import redis

from lib.core import keys
from lib.core.clock import Clock, get_clock
from lib.core.errors import BadMessage

ON_SALE = "on_sale"
SOLD = "sold"
STATUSES = (ON_SALE, SOLD)

#: Longest seller hash a result may carry (the crawler sends 16 hex digits).
SELLER_LENGTH = 32
#: Most items in one script call.
CHUNK = 500
#: The fields a state is read as, in order (``_READ`` answers them, item after item).
FIELDS = ("status", "price", "first_seen", "last_seen", "t")


class Transition(str, enum.Enum):
    NEW_LISTING = "new_listing"  # first seen on sale: inflow
    SOLD = "sold"                # on sale → sold: outflow
    NEW_SOLD = "new_sold"        # first seen sold: outflow
    PRICE_CHANGE = "price_change"
    RELISTED = "relisted"        # sold → on sale

    @property
    def inflow(self) -> int:
        return 1 if self is Transition.NEW_LISTING else 0

    @property
    def outflow(self) -> int:
        return 1 if self in (Transition.SOLD, Transition.NEW_SOLD) else 0


@dataclass(frozen=True)
class CrawlItem:
    """One listing as the crawler saw it."""

    source_id: str
    title: str
    price: int | None
    status: str
    image_url: str = ""
    item_url: str = ""
    created: float | None = None
    updated: float | None = None
    #: Why a listing has no price (the crawler's rule, lib/crawling/listings.py): "no_price", "placeholder", …
    price_flag: str | None = None
    #: The seller's keyed hash (never the id itself; None when the page showed no seller or none is kept), and
    #: whether the listing is an auction (its price is then the current bid): docs/concepts/crawling.md.
    seller: str | None = None
    auction: bool = False

    @classmethod
    def parse(cls, raw: Any) -> CrawlItem:
        """Validate one item of a crawl-result message; ``BadMessage`` says what is wrong."""
        if not isinstance(raw, dict):
            raise BadMessage(f"an item is a {type(raw).__name__}, not a map")
        source_id = raw.get("source_id")
        if not isinstance(source_id, str) or not source_id or len(source_id) > 64:
            raise BadMessage(f"item source_id must be a non-empty string of at most 64 characters: {source_id!r:.80}")
        status = raw.get("status")
        if status not in STATUSES:
            raise BadMessage(f"item {source_id}: status must be one of {STATUSES}, got {status!r:.40}")
        price = raw.get("price")
        if price is not None and (not isinstance(price, int) or isinstance(price, bool) or price < 0):
            raise BadMessage(f"item {source_id}: price must be a non-negative whole number of yen or null")
        price_flag = raw.get("price_flag")
        if price_flag is not None and (not isinstance(price_flag, str) or not price_flag or len(price_flag) > 32
                                       or price is not None):
            raise BadMessage(f"item {source_id}: price_flag must be a short reason given with a null price")
        for name in ("created", "updated"):
            value = raw.get(name)
            if value is not None and (not isinstance(value, (int, float)) or isinstance(value, bool)):
                raise BadMessage(f"item {source_id}: {name} must be a Unix time or null")
        seller = raw.get("seller")
        if seller is not None and (not isinstance(seller, str) or not seller or len(seller) > SELLER_LENGTH):
            raise BadMessage(f"item {source_id}: seller must be a hash of at most {SELLER_LENGTH} characters or null")
        auction = raw.get("auction", False)
        if not isinstance(auction, bool):
            raise BadMessage(f"item {source_id}: auction must be true or false")
        return cls(
            source_id=source_id, title=str(raw.get("title") or "")[:500], price=price, status=status,
            image_url=str(raw.get("image_url") or "")[:500], item_url=str(raw.get("item_url") or "")[:500],
            created=raw.get("created"), updated=raw.get("updated"), price_flag=price_flag, seller=seller,
            auction=auction,
        )


@dataclass(frozen=True)
class ItemState:
    status: str
    price: int | None
    first_seen: float
    last_seen: float
    #: ``title_key`` of the title the result that wrote this state stored (and segmented) with the listing; None
    #: when unknown (a state read back from a snapshot, or written before states kept it).
    title_key: str | None = None


def title_key(title: str) -> str:
    """A title's fingerprint in an item state: equal fingerprints, the same title (64 bits)."""
    return hashlib.blake2b(title.encode(), digest_size=8).hexdigest()


@dataclass(frozen=True)
class Change:
    """What one crawled item does to the state machine."""

    item: CrawlItem
    before: ItemState | None
    after: ItemState
    transition: Transition | None


#: How far a listing's ``created`` time may precede our clock and still count as new (the two clocks differ).
CREATED_CLOCK_SLACK = 60.0


def decide(before: ItemState | None, item: CrawlItem, seen_at: float, *, baseline: bool,
           resurfaced_after: float, window_start: float | None = None) -> Change | None:
    """The transition an item makes, or None for a result older than the item's state (never move back).

    ``baseline``: the IP's first crawl stores states but counts nothing. Inflow is listings *created* in
    the window since the IP's previous crawl (``window_start``): a listing first seen on sale but created
    before it was below the pages we read and has moved up as others sold, so it is not new. Without a
    window, one created more than ``resurfaced_after`` seconds ago is an old listing resurfacing.
    """
    if before is not None and seen_at < before.last_seen:
        return None
    after = ItemState(status=item.status, price=item.price,
                      first_seen=before.first_seen if before else seen_at, last_seen=seen_at,
                      title_key=title_key(item.title))
    transition = None
    if before is None:
        if baseline:
            transition = None
        elif item.status == SOLD:
            transition = Transition.NEW_SOLD
        elif item.created is not None and seen_at - item.created > resurfaced_after:
            transition = None
        elif (item.created is not None and window_start is not None
              and item.created < window_start - CREATED_CLOCK_SLACK):
            transition = None
        else:
            transition = Transition.NEW_LISTING
    elif before.status == ON_SALE and item.status == SOLD:
        transition = Transition.SOLD
    elif before.status == SOLD and item.status == ON_SALE:
        transition = Transition.RELISTED
    elif item.status == ON_SALE and before.price != item.price:
        transition = Transition.PRICE_CHANGE
    return Change(item=item, before=before, after=after, transition=transition)


# Writes a state unless the stored one is newer: a late, older result never moves an item back.
_APPLY = """
local n = #KEYS
for i = 1, n do
  local a = (i - 1) * 6
  local last = redis.call('HGET', KEYS[i], 'last_seen')
  if (not last) or tonumber(last) <= tonumber(ARGV[a + 4]) then
    redis.call('HSET', KEYS[i], 'status', ARGV[a + 1], 'price', ARGV[a + 2], 'first_seen', ARGV[a + 3],
               'last_seen', ARGV[a + 4])
    if ARGV[a + 6] == '' then
      redis.call('HDEL', KEYS[i], 't')
    else
      redis.call('HSET', KEYS[i], 't', ARGV[a + 6])
    end
    redis.call('PEXPIRE', KEYS[i], ARGV[a + 5])
  end
end
return n
"""


# The fields named in ARGV of each key, flat (false for a missing field or key). One call instead of a pipelined
# HGETALL per key: a 1,000-item read took 20 ms that way and 8.5 ms this way, most of the difference being the
# client's packing of 1,000 commands and parsing of 1,000 maps.
_READ = """
local out = {}
local n = 0
for i = 1, #KEYS do
  local fields = redis.call('HMGET', KEYS[i], unpack(ARGV))
  for j = 1, #ARGV do
    n = n + 1
    out[n] = fields[j]
  end
end
return out
"""


class ItemStateStore:
    """Item states of all IPs in Redis."""

    def __init__(self, client: redis.Redis, ttl_on_sale: float, ttl_sold: float, clock: Clock | None = None) -> None:
        self.client = client
        clock = clock or get_clock()
        # TTLs are in clock time; Redis expires in real time
        self.ttl = {ON_SALE: clock.real_seconds(ttl_on_sale), SOLD: clock.real_seconds(ttl_sold)}
        self._apply = client.register_script(_APPLY)
        self._read = client.register_script(_READ)

    def read(self, ip_id: int, source_ids: list[str]) -> dict[str, ItemState]:
        """The states Redis holds of these listings (a listing without one is left out)."""
        found: dict[str, ItemState] = {}
        width = len(FIELDS)
        for start in range(0, len(source_ids), CHUNK):
            chunk = source_ids[start:start + CHUNK]
            flat = self._read(keys=[keys.item_state(ip_id, source_id) for source_id in chunk], args=FIELDS)
            for k, source_id in enumerate(chunk):
                status, price, first_seen, last_seen, key = flat[k * width:(k + 1) * width]
                if status is not None:
                    found[source_id] = ItemState(
                        status=status.decode(), price=int(price) if price else None, first_seen=float(first_seen),
                        last_seen=float(last_seen), title_key=key.decode() if key else None)
        return found

    def write(self, ip_id: int, states: Iterable[tuple[str, ItemState]]) -> None:
        states = list(states)
        for start in range(0, len(states), CHUNK):
            chunk = states[start:start + CHUNK]
            args: list[str | int | float] = []
            for _, s in chunk:
                args += [s.status, "" if s.price is None else s.price, s.first_seen, s.last_seen,
                         int(self.ttl[s.status] * 1000), s.title_key or ""]
            self._apply(keys=[keys.item_state(ip_id, sid) for sid, _ in chunk], args=args)

