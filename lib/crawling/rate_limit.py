"""The fleet-wide politeness limit: at most CRAWL_RATE_LIMIT page loads begin in any minute, across every
crawler process and machine, per proxy where proxies are set; less where the site answered 429 through that
address (``lib.crawling.budget``: the budget is cut, then climbs back).

The count is shared through the application-state Redis by Dramatiq's ``WindowRateLimiter`` (a sliding window
of one-second buckets). A page load that finds the window full waits, polling for a turn, and says so: a
key per waiting page load (``keys.crawl_rate_waiting``) that ``animetop status`` and the metrics list, a log
line, and the time waited in the ``animetop_crawl_rate_limit_wait_seconds_total`` counter. The buckets are
whole seconds of each machine's clock, so the machines' clocks must agree (NTP) to the second.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import json
import logging
import os
import random
import socket
import time
from collections.abc import Callable
from typing import Any

import redis
from dramatiq.rate_limits import WindowRateLimiter
from dramatiq.rate_limits.backends import RedisBackend

from lib.core import keys
from lib.core.redaction import redact_url
from lib.core.settings import Settings
from lib.crawling.budget import RequestBudget

logger = logging.getLogger(__name__)

#: One-second buckets in the window: 61 of them cover every 60 s interval however it falls on the seconds, so
#: no 60 s ever holds more than the limit (60 would let one extra in across a bucket boundary).
WINDOW_SECONDS = 61
#: A waiting page load's marker outlives its refreshes by this much (seconds), then lapses (its process died).
WAITING_MARKER_GRACE = 10.0
#: The longest a page load waits for its turn. Each turn frees within a window, so three windows without one
#: means the state Redis cannot be reached or the fleet is far over its limit: the crawl then ends with what it
#: read (``NoTurn``, classified ``rate_limited``) and is retried later, instead of holding a crawler thread until
#: the crawl's time limit throws it away. No page is loaded without a turn either way.
TURN_WAIT_MAX = 3 * WINDOW_SECONDS


def proxy_label(proxy: str | None, direct: str = "direct") -> str:
    """The name an address's window and budget go by in Redis: a digest of the proxy (never its credentials), or
    ``direct`` (``CRAWL_DIRECT_ADDRESS``) without one."""
    return direct if not proxy else hashlib.sha256(proxy.encode()).hexdigest()[:16]


class _TransactionalPipelines:
    """The state client as Dramatiq's RedisBackend needs it on a cluster too. The backend WATCHes a window's
    buckets in ``client.pipeline()``, reads them with ``mget`` and writes in MULTI/EXEC; redis-py's cluster
    client makes a pipeline a transaction only when asked, and refuses ``mget`` on a pipeline by name (it cannot
    know the keys share a slot; here they do, by the window's hash tag), so MGET is sent as a plain command."""

    def __init__(self, client: redis.Redis) -> None:
        self._client = client

    def pipeline(self) -> Any:
        return _Pipeline(self._client.pipeline(transaction=True))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


class _Pipeline:
    def __init__(self, pipe: Any) -> None:
        self._pipe = pipe

    def mget(self, names: list[str]) -> Any:
        return self._pipe.execute_command("MGET", *names)

    def __enter__(self) -> _Pipeline:
        self._pipe.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._pipe.__exit__(*exc)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._pipe, name)


class NoTurn(TimeoutError):
    """A page load found no turn under the crawl rate limit within ``TURN_WAIT_MAX``."""


#: Dramatiq's ``WindowRateLimiter`` as a typed constructor (its ``__init__`` carries no annotations).
_window_limiter: Callable[..., WindowRateLimiter] = WindowRateLimiter


class CrawlRateLimit:
    """Gives each page load its turn under the fleet-wide limit.

    Parameters:
      limit: page loads per minute per proxy; 0 turns the limit off.
      client: the application-state Redis client (a function returning it).
      observe: called with the seconds a page load waited, when it waited (the metrics' counter).
      patience: the longest a page load waits for its turn (``TURN_WAIT_MAX``), then ``NoTurn``.
      direct: the name of the address page loads without a proxy go out from (``CRAWL_DIRECT_ADDRESS``).
    """

    def __init__(self, limit: int, client: Callable[[], redis.Redis], *,
                 observe: Callable[[float], None] | None = None, patience: float = TURN_WAIT_MAX,
                 direct: str = "direct") -> None:
        self.limit = limit
        self.direct = direct
        self._client = client
        self.observe = observe
        self.patience = patience
        self._limiters: dict[str, WindowRateLimiter] = {}
        self._ids = itertools.count(1)
        self.budget = RequestBudget(limit, client) if limit else None
        # between two tries: about half the spacing of page loads at the limit, within [0.2 s, 2 s]
        self.poll = min(2.0, max(0.2, 30.0 / limit)) if limit else 0.0

    @classmethod
    def from_settings(cls, settings: Settings, *, observe: Callable[[float], None] | None = None) -> CrawlRateLimit:
        from lib.core.redis_client import state_redis

        return cls(settings.crawl_rate_limit, lambda: state_redis(settings), observe=observe,
                   direct=settings.crawl_direct_address)

    def address(self, proxy: str | None) -> str:
        """The name of the address a page load through ``proxy`` (None: none) goes out from."""
        return proxy_label(proxy, self.direct)

    def _limiter(self, proxy: str | None) -> WindowRateLimiter:
        label = self.address(proxy)
        if label not in self._limiters:
            backend = RedisBackend(client=_TransactionalPipelines(self._client()))
            self._limiters[label] = _window_limiter(backend, keys.crawl_rate(label), limit=self.limit,
                                                    window=WINDOW_SECONDS)
        return self._limiters[label]

    def try_acquire(self, proxy: str | None) -> bool:
        """Take a turn now if the window has room under the address's budget (blocking Redis round trips)."""
        address = self.address(proxy)
        limiter = self._limiter(proxy)
        if self.budget is not None:
            limiter.limit = self.budget.now(address).limit
        with limiter.acquire(raise_on_failure=False) as acquired:
            if acquired:
                try:
                    count_load(self._client(), address)
                except redis.RedisError as e:  # the turn is taken: raising would make the caller take another
                    logger.warning("could not count a page load for status and metrics: %s", e)
            return bool(acquired)

    def throttled(self, proxy: str | None) -> int | None:
        """The site answered 429 through ``proxy``: its budget is cut for the fleet (``lib.crawling.budget``).
        Returns the budget now, or None without a limit (CRAWL_RATE_LIMIT=0: nothing to cut)."""
        if self.budget is None:
            return None
        cut = self.budget.throttled(self.address(proxy))
        logger.warning("the site answered 429 via %s: its budget is now %d page loads a minute (of %d)",
                       redact_url(proxy) if proxy else "no proxy", cut, self.limit)
        return cut

    async def wait_for_turn(self, proxy: str | None) -> float:
        """Wait until a page load through ``proxy`` may begin; returns the seconds waited (0: its turn was free).
        With Redis unreachable it keeps waiting (politeness is the promise), for ``patience`` seconds at most:
        then ``NoTurn``."""
        if not self.limit:
            return 0.0
        started = time.monotonic()
        waiter: str | None = None
        for attempt in itertools.count():
            if attempt and time.monotonic() - started >= self.patience:
                await self._unmark(waiter)
                raise NoTurn(f"no turn under the crawl rate limit ({self.limit} pages/min via "
                             f"{redact_url(proxy) if proxy else 'no proxy'}) within {self.patience:g} s")
            try:
                if await asyncio.to_thread(self.try_acquire, proxy):
                    if attempt == 0:
                        return 0.0
                    break
                if waiter is None:
                    waiter = f"{socket.gethostname()}:{os.getpid()}:{next(self._ids)}"
                    logger.info("page load waits for the crawl rate limit (%d pages/min via %s)", self.limit,
                                redact_url(proxy) if proxy else "no proxy")
                await asyncio.to_thread(self._mark_waiting, waiter, proxy, started)
            except redis.RedisError as e:
                logger.warning("crawl rate limit unavailable (%s): waiting before the page load", e)
            await asyncio.sleep(self.poll * random.uniform(0.5, 1.0))  # the pace of tries, not a wait on state
        waited = time.monotonic() - started
        if waiter is not None:
            await self._unmark(waiter)
            if self.observe is not None:
                self.observe(waited)
        return waited

    async def _unmark(self, waiter: str | None) -> None:
        if waiter is None:
            return
        try:
            await asyncio.to_thread(self._client().delete, keys.crawl_rate_waiting(waiter))
        except redis.RedisError:
            pass  # it lapses by itself

    def _mark_waiting(self, waiter: str, proxy: str | None, started: float) -> None:
        since = time.time() - (time.monotonic() - started)
        marker = json.dumps({"waiter": waiter, "proxy": redact_url(proxy) if proxy else "direct", "since": since})
        self._client().set(keys.crawl_rate_waiting(waiter), marker, px=int((self.poll + WAITING_MARKER_GRACE) * 1000))


#: A minute's count of page loads outlives the minute by this long (seconds): status reads the minute before.
LOADS_KEPT = 180


def addresses(settings: Settings) -> list[str]:
    """The names of the addresses the crawlers use: one per proxy of PROXY_URLS, else the direct one."""
    return ([proxy_label(p) for p in settings.proxy_urls]
            or [proxy_label(None, settings.crawl_direct_address)])


def count_load(client: redis.Redis, address: str, at: float | None = None) -> None:
    """One page load began through ``address``: counted in its minute."""
    key = keys.crawl_loads(address, int((time.time() if at is None else at) // 60))
    pipe = client.pipeline(transaction=False)
    pipe.incr(key)
    pipe.expire(key, LOADS_KEPT)
    pipe.execute()


def loads_last_minute(client: redis.Redis, address: str, at: float | None = None) -> int:
    """The page loads that began through ``address`` in the last whole minute, across the fleet."""
    raw = client.get(keys.crawl_loads(address, int((time.time() if at is None else at) // 60) - 1))
    return int(raw) if raw is not None else 0


def waiting(client: redis.Redis) -> list[dict[str, Any]]:
    """The page loads waiting for the crawl rate limit right now, across the fleet, longest waiting first."""
    found = []
    for key in client.scan_iter(match=keys.CRAWL_RATE_WAITING_PATTERN, count=500):
        raw = client.get(key)
        if raw is not None:
            marker = json.loads(raw)
            found.append({**marker, "waiting_s": round(time.time() - marker["since"], 1)})
    return sorted(found, key=lambda w: w["since"])
