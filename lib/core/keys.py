"""Every Redis key name the application uses, defined once.

All keys live in the application-state database (REDIS_URL), never in the
broker's database, whose maintenance scans keys.

On a Redis Cluster (``REDIS_URL=redis+cluster://…``) a Lua script or a
transaction may only touch keys of one hash slot, so keys used together
share a hash tag, the part in braces that Redis hashes instead of the whole
name: one IP's item states (``animetop:item:{42}:…``), one cache group and
its index (an IP's detail caches). Where a key's name is known to others (the in-flight set of
docs/concepts/scheduling.md, the pool lists of docs/operating/pools.md), its companions are named ``{key}:suffix``
(``companion``): Redis hashes a name without braces whole, so the companion
lands in the key's own slot and the key keeps its name. Every other key has
no tag and spreads over the cluster by its own name.
"""

PREFIX = "animetop"


def companion(key: str, suffix: str) -> str:
    """A key in the same hash slot as ``key`` (a name without braces), which keeps its name."""
    return f"{{{key}}}:{suffix}"


#: Namespace of the Redis broker's own keys (in the broker's database, BROKER_URL, not this one).
BROKER_NAMESPACE = PREFIX

# scheduler (docs/concepts/scheduling.md)
SCHEDULE_PENDING = f"{PREFIX}:schedule:pending"
TASKS_PENDING = f"{PREFIX}:queue:tasks:pending"
#: Claimed together with TASKS_PENDING in one script, so in its slot.
TASKS_STARTED = companion(TASKS_PENDING, "started")
#: ETA (Unix seconds) of the self-scheduled tick already on its way, so tick chains never multiply.
SCHEDULE_NEXT_TICK = f"{PREFIX}:schedule:next_tick"
#: Set while crawling is paused: ticks enqueue nothing and end their chain (the demo's stop).
SCHEDULE_PAUSED = f"{PREFIX}:schedule:paused"
#: When stale in-flight markers were last swept.
JANITOR_LAST_SWEEP = f"{PREFIX}:schedule:janitor_last_sweep"


def in_flight_member(ip_id: int) -> str:
    """Member of TASKS_PENDING for an IP with a crawl on its way (docs/concepts/scheduling.md)."""
    return f"ip:{ip_id}"


def item_state(ip_id: int, source_id: str) -> str:
    """One listing's state; an IP's states share the tag ``{ip_id}`` (one script writes a crawl's states)."""
    return f"{PREFIX}:item:{{{ip_id}}}:{source_id}"


def ip_cache_group(ip_id: int) -> str:
    """An IP's detail caches: they and their index share this group as their tag (one script drops them)."""
    return f"ip:{ip_id}"


def leaderboard(hours: int) -> str:
    """One window's leaderboard: every IP's measures, which each ranking sorts (``lib.market.read_side``)."""
    return f"{PREFIX}:leaderboard:{hours}"


def segments_board(kind: str, hours: int) -> str:
    """The board of one kind of segment across every IP (``lib.market.read_side``), in the group of its index."""
    return f"{PREFIX}:{{segments-board}}:{kind}:{hours}"


def ip_cache(ip_id: int, name: str) -> str:
    return f"{PREFIX}:{{{ip_cache_group(ip_id)}}}:{name}"


def cache_index(group: str) -> str:
    """SET of the cache keys filled in a group (``leaderboard``, ``ip:{id}``): invalidating them reads this set
    instead of scanning the keyspace, which holds a hash per listing (a scan per result grew with the IPs)."""
    return f"{PREFIX}:cache-index:{{{group}}}"


# middleware
def idempotency(actor_name: str, key: str) -> str:
    """One key per processed message, each with its own expiry (not one ever-growing SET)."""
    return f"{PREFIX}:idem:{actor_name}:{key}"


def lock(name: str) -> str:
    return f"{PREFIX}:lock:{name}"


LOCK_PATTERN = f"{PREFIX}:lock:*"


def lease_holder(holder: str) -> str:
    """Present (with a short TTL, renewed) while the process ``holder`` that holds leases runs."""
    return f"{PREFIX}:holder:{holder}"


def dead_letter_reason(message_id: str) -> str:
    return f"{PREFIX}:deadletter:reason:{message_id}"


# title/content pools (docs/operating/pools.md's names, kept so other consumers of the pools find them)
def pool(kind: str, group_id: int) -> str:
    return f"{kind}:pool:{group_id}"


def pool_filling(kind: str, group_id: int) -> str:
    """The fill lock of a pool."""
    return f"{kind}:pool:{group_id}:filling"


def pool_handed(kind: str, group_id: int) -> str:
    """Ids popped from a pool whose rows are not yet marked used (moved there by the pop script: same slot)."""
    return companion(pool(kind, group_id), "handed")


def pool_fill_requested(kind: str, group_id: int) -> str:
    """Set while a consumer-triggered fill is on its way, so consumers request one fill, not thousands."""
    return f"{kind}:pool:{group_id}:fill_requested"


# the fleet-wide crawl rate limit (lib/crawling/rate_limit.py)
def crawl_rate(proxy_label: str) -> str:
    """Key of one proxy's page-load window (Dramatiq's WindowRateLimiter adds ``@<second>`` per bucket, after the
    tag: a window's buckets share a slot, as its WATCH/MULTI over them needs on a cluster)."""
    return f"{PREFIX}:crawl-rate:{{{proxy_label}}}"


def crawl_rate_waiting(waiter: str) -> str:
    """A page load waiting for its turn (expires unless its waiter refreshes it); status and metrics list them."""
    return f"{PREFIX}:crawl-rate-waiting:{waiter}"


CRAWL_RATE_WAITING_PATTERN = crawl_rate_waiting("*")


# each address's request budget (lib/crawling/budget.py)
def crawl_budget(address: str) -> str:
    """An address's budget after a 429 cut it, and when (gone once it has climbed back)."""
    return f"{PREFIX}:crawl-budget:{{{address}}}"


#: The addresses a 429 ever cut (their budgets may have climbed back since): status lists them without a scan.
CRAWL_BUDGET_ADDRESSES = f"{PREFIX}:crawl-budget-addresses"


def crawl_loads(address: str, minute: int) -> str:
    """The page loads an address began in one minute (``int(time // 60)``), for status and metrics."""
    return f"{PREFIX}:crawl-loads:{{{address}}}@{minute}"


# each IP's page plan for its next crawl (lib/crawling/page_plan.py)
def crawl_plan(ip_id: int) -> str:
    """How deep the IP's next crawl reads each search, as the worker planned it after its last crawl."""
    return f"{PREFIX}:crawl-plan:{ip_id}"


# the fleet's crawl intervals under its request budget (lib/scheduling/budget_plan.py)
#: Hash: IP id → what its crawls cost and see, as the worker reckoned them after its last result.
CRAWL_COSTS = f"{PREFIX}:crawl-costs"
#: The budget's price now (JSON), set by the scheduler's tick.
CRAWL_PRICE = f"{PREFIX}:crawl-price"
#: Hash: hour (Unix hours) → the requests the reads back and item checks for undecided relists spent in it,
#: fleet-wide.
RELIST_READS = f"{PREFIX}:relist-reads"


# alert notifications (the three layers of dedup of docs/operating/alerts.md)
def notify_state(ip_id: int, rule: str) -> str:
    """Hash of the last state notified for an IP and rule; expires after NOTIFY_DEDUP_WINDOW."""
    return f"{PREFIX}:notify:state:{ip_id}:{rule}"


def notify_event(event_id: str) -> str:
    """An event already processed (IP, rule, old hash, new hash, minute)."""
    return f"{PREFIX}:notify:event:{event_id}"


# crawler drift (lib/crawling/drift.py)
#: LIST of the latest crawls' drift records (JSON), newest first, trimmed to a fixed length.
CRAWLER_DRIFT = f"{PREFIX}:crawler:drift"
#: HASH of each IP's usual share of listings on its pages that are about it: field the IP's id, value JSON
#: ``{"share": …, "crawls": …}`` (an exponentially weighted mean), what a crawl's share is compared with.
CRAWLER_MATCH_SHARE = f"{PREFIX}:crawler:match_share"
#: The deployment's key of the sellers' hash where SELLER_HASH_SECRET is unset (lib.crawling.listings).
SELLER_HASH_KEY = f"{PREFIX}:crawler:seller_hash_key"

#: HASH of the tab recoveries of the crawlers (a tab that stopped rendering): a count per step, the last step
#: and when (``lib.crawling.recovery``).
CRAWLER_TAB_RECOVERIES = f"{PREFIX}:crawler:tab_recoveries"
