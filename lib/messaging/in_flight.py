"""The crawls in flight: IPs with a crawl message enqueued or running, claimed by the schedule's tick when it sends
the crawl and released by the middleware when the message is done (``lib.messaging.middleware.in_flight``), or by
the janitor's sweep when its crawl died unnoticed. Here, beside the messages, so that both can reach it."""

from __future__ import annotations

import logging
from collections.abc import Iterable

import redis

from lib.core import keys

logger = logging.getLogger(__name__)

_CLAIM = """
local claimed = {}
for i = 2, #ARGV do
  if redis.call('SADD', KEYS[1], ARGV[i]) == 1 then
    redis.call('HSET', KEYS[2], ARGV[i], ARGV[1])
    claimed[#claimed + 1] = ARGV[i]
  end
end
return claimed
"""


class InFlight:
    """IPs with a crawl enqueued or running: the SET ``animetop:queue:tasks:pending`` (member ``ip:{id}``)
    and, per member, when it was claimed (HASH ``keys.TASKS_STARTED``, in the same hash slot) so stuck ones can be
    swept."""

    def __init__(self, client: redis.Redis) -> None:
        self.client = client
        self._claim = client.register_script(_CLAIM)

    def claim(self, ip_ids: Iterable[int], now: float) -> set[int]:
        """Mark the IPs in flight; returns those that were not already (atomically, so racing ticks split them)."""
        members = [keys.in_flight_member(i) for i in ip_ids]
        if not members:
            return set()
        claimed = self._claim(keys=[keys.TASKS_PENDING, keys.TASKS_STARTED], args=[now, *members])
        return {int(m.decode().split(":", 1)[1]) for m in claimed}

    def release(self, ip_id: int) -> None:
        member = keys.in_flight_member(ip_id)
        pipe = self.client.pipeline(transaction=True)  # one slot (keys.TASKS_STARTED), so also on a cluster
        pipe.srem(keys.TASKS_PENDING, member)
        pipe.hdel(keys.TASKS_STARTED, member)
        pipe.execute()

    def members(self) -> set[int]:
        return {int(m.decode().split(":", 1)[1]) for m in self.client.smembers(keys.TASKS_PENDING)}

    def sweep(self, now: float, timeout: float) -> list[int]:
        """Release members claimed longer than ``timeout`` ago (their crawl died unnoticed)."""
        started = {m.decode(): float(t) for m, t in self.client.hgetall(keys.TASKS_STARTED).items()}
        stale = [m for m in (x.decode() for x in self.client.smembers(keys.TASKS_PENDING))
                 if now - started.get(m, float("-inf")) > timeout]
        for member in stale:
            ip_id = int(member.split(":", 1)[1])
            logger.warning("IP %s was in flight for over %.0fs: releasing it so it can be crawled again",
                           ip_id, timeout)
            self.release(ip_id)
        return [int(m.split(":", 1)[1]) for m in stale]
