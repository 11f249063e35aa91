"""The site's limit of search requests per address: a token bucket each (``[rate_limit]`` of
``market_traits.toml``)."""

from __future__ import annotations

import threading

from lib.standins.simulator.traits import RateLimit


class AddressRateLimiter:
    """Answers whether a request from an address at a time is served or draws a 429.

    Parameters:
        limit: the bucket's refill rate and size.
    """

    def __init__(self, limit: RateLimit) -> None:
        self.limit = limit
        self._buckets: dict[str, tuple[float, float]] = {}  # address -> (tokens, at)
        self._lock = threading.Lock()

    def allow(self, address: str, now: float) -> bool:
        """Take one request's token from ``address``'s bucket at ``now`` (seconds); False: none left (a 429)."""
        per_second = self.limit.per_minute / 60
        with self._lock:
            tokens, at = self._buckets.get(address, (self.limit.burst, now))
            tokens = min(self.limit.burst, tokens + max(0.0, now - at) * per_second)
            allowed = tokens >= 1
            self._buckets[address] = (tokens - 1 if allowed else tokens, now)
            return allowed
