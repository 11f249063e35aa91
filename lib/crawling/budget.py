"""The request budget of each address the crawlers use (a proxy, or ``direct``): ``CRAWL_RATE_LIMIT`` page loads a
minute, lowered when the site answers 429 and raised back while it does not.

The site limits search requests per address: about 60 a minute ran clean from one address and about 76 a minute
drew a 429 within 13 requests (AudricY/mercari_jp_bot's rate-limit probe of 2026-06-28, the source of the
simulator's own limit: docs/concepts/simulator.md); the default budget, 48, is that project's own pace. Where the
site's limit is lower than the budget (another client behind the same address, a stricter limit), a 429 halves
that address's budget for the whole fleet; it then climbs back by ``PROBE_STEP`` a minute up to
``CRAWL_RATE_LIMIT`` (additive increase, multiplicative decrease, as TCP does with a congested link). The 429s of
the page loads already under way when the budget was cut (granted under the old one) do not cut it again: one cut
per ``HOLD`` seconds.

The state is one Redis hash per address (``keys.crawl_budget``): the budget after its last cut and when it was
cut; the budget now is computed from them and the clock, so nothing has to run for it to climb back. The cut is
one script (atomic, one key: a cluster slot). The addresses ever cut are kept in a set, for status to list them.
Clocks are the machines' own (as for the rate limit's window).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import redis

from lib.core import keys

#: The share of the budget a 429 leaves.
CUT = 0.5
#: The budget climbs back by this many page loads a minute every ``PROBE_EVERY`` seconds without a cut.
PROBE_STEP = 1
PROBE_EVERY = 60.0
#: Seconds after a cut during which further 429s do not cut again: the rate limit's window (the page loads
#: granted under the old budget end within it).
HOLD = 61.0

# KEYS[1]: the address's hash; ARGV: budget, now, cut, step, every, hold. Returns the budget after the call.
_CUT_SCRIPT = """
local budget, now = tonumber(ARGV[1]), tonumber(ARGV[2])
local cut, step, every, hold = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local state = redis.call('HMGET', KEYS[1], 'reduced', 'at')
local current = budget
if state[1] then
  local reduced, at = tonumber(state[1]), tonumber(state[2])
  if now - at < hold then return reduced end
  current = math.min(budget, reduced + math.floor((now - at) / every) * step)
end
local reduced = math.max(1, math.floor(current * cut))
redis.call('HSET', KEYS[1], 'reduced', reduced, 'at', tostring(now))
redis.call('EXPIRE', KEYS[1], math.ceil((budget - reduced) / step * every + hold))
return reduced
"""


@dataclass(frozen=True, slots=True)
class AddressBudget:
    """One address's budget now.

    Parameters:
      address: the proxy's label (``lib.crawling.rate_limit.proxy_label``) or ``direct``.
      limit: page loads a minute it may spend now; budget: ``CRAWL_RATE_LIMIT``.
      cut_at: when a 429 last cut it (None: not since it was last back at the budget).
      full_at: when it is back at the budget, climbing as it does (None: it is).
    """

    address: str
    limit: int
    budget: int
    cut_at: float | None = None
    full_at: float | None = None


class RequestBudget:
    """The fleet's budgets, one per address, shared through the application-state Redis.

    Parameters:
      budget: ``CRAWL_RATE_LIMIT``, page loads a minute per address (at least 1).
      client: the application-state Redis client (a function returning it).
      clock: the wall clock (seconds), as the rate limit's window reads it.
    """

    def __init__(self, budget: int, client: Callable[[], redis.Redis], *,
                 clock: Callable[[], float] = time.time) -> None:
        if budget < 1:
            raise ValueError(f"a request budget is at least 1 page load a minute, not {budget}")
        self.budget = budget
        self._client = client
        self._clock = clock
        self._cut: Callable[..., object] | None = None

    def now(self, address: str) -> AddressBudget:
        """The address's budget now: ``CRAWL_RATE_LIMIT`` unless a 429 cut it and it has not climbed back."""
        reduced, at = self._client().hmget(keys.crawl_budget(address), ["reduced", "at"])
        return self._of(address, reduced, at)

    def _of(self, address: str, reduced: bytes | str | None, at: bytes | str | None) -> AddressBudget:
        if reduced is None or at is None:
            return AddressBudget(address, self.budget, self.budget)
        low, since = int(reduced), float(at)
        limit = min(self.budget, low + math.floor(max(0.0, self._clock() - since) / PROBE_EVERY) * PROBE_STEP)
        if limit >= self.budget:
            return AddressBudget(address, self.budget, self.budget)
        return AddressBudget(address, limit, self.budget, since,
                             since + math.ceil((self.budget - low) / PROBE_STEP) * PROBE_EVERY)

    def throttled(self, address: str) -> int:
        """The site answered 429 through ``address``: its budget is cut (once per ``HOLD``); returns the budget
        after it."""
        client = self._client()
        if self._cut is None:
            self._cut = client.register_script(_CUT_SCRIPT)
        reduced = self._cut(keys=[keys.crawl_budget(address)],
                            args=[self.budget, repr(self._clock()), CUT, PROBE_STEP, PROBE_EVERY, HOLD])
        # outside the script: on a cluster the set and the address's hash are in different slots
        client.sadd(keys.CRAWL_BUDGET_ADDRESSES, address)
        return int(str(reduced))

    def all(self, addresses: Iterable[str]) -> list[AddressBudget]:
        """The budgets of these addresses and of every address a 429 has cut (one set read, not a key scan)."""
        cut = {m.decode() if isinstance(m, bytes) else str(m)
               for m in self._client().smembers(keys.CRAWL_BUDGET_ADDRESSES)}
        return [self.now(address) for address in sorted(set(addresses) | cut)]
