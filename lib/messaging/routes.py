"""Where each actor listens (its name and queue), one place.

The actors in ``actors/`` are declared through these routes, and send to each other through their actor
objects. Code that cannot import the actors (``lib/`` sits below ``actors/``) or that talks to actors in
other processes (the scheduler's crawl tasks, the pool consumer of another application, tests driving real
process types) addresses them through a route, never through a name string of its own.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import dramatiq
from dramatiq import Message

from lib.messaging.queues import COLLECT, CRAWL, MAINTENANCE, NOTIFY, PIPELINE, POOL, SCHEDULER

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Route:
    """An actor's address.

    Parameters:
      actor_name: The name the actor is declared under (what a message carries).
      queue_name: The queue it consumes.
    """

    actor_name: str
    queue_name: str

    def declare(self, **options: Any) -> Callable[[F], dramatiq.Actor[Any, Any]]:
        """``dramatiq.actor`` with this route's name and queue, and ``options``."""
        return dramatiq.actor(actor_name=self.actor_name, queue_name=self.queue_name, **options)

    def message(self, **kwargs: Any) -> Message[Any]:
        """A message to this actor with keyword arguments (no options: the broker adds its own)."""
        return Message(queue_name=self.queue_name, actor_name=self.actor_name, args=(), kwargs=kwargs, options={})


SCHEDULE_TICK = Route("schedule_tick", SCHEDULER)
CRAWL_IP = Route("crawl_ip", CRAWL)
PROCESS_RESULT = Route("process_result", PIPELINE)
NOTIFY_ALERT = Route("notify_alert", NOTIFY)
DELIVER_ALERT = Route("deliver_alert", NOTIFY)
FILL_POOL = Route("fill_pool", POOL)
MARK_USED = Route("mark_used", POOL)
FILL_ALL_POOLS = Route("fill_all_pools", POOL)
COLLECT_BATCH = Route("collect_batch", COLLECT)
START_DUE_COLLECTIONS = Route("start_due_collections", COLLECT)
PING = Route("ping", MAINTENANCE)
PRUNE_STORAGE = Route("prune_storage", MAINTENANCE)
REFRESH_LEADERBOARDS = Route("refresh_leaderboards", MAINTENANCE)
ROLL_UP_DAYS = Route("roll_up_days", MAINTENANCE)
REFRESH_FORECASTS = Route("refresh_forecasts", MAINTENANCE)

#: Every production actor's route (a test checks each is declared, on its queue, by ``actors``).
ALL_ROUTES = (SCHEDULE_TICK, CRAWL_IP, PROCESS_RESULT, NOTIFY_ALERT, DELIVER_ALERT, FILL_POOL, MARK_USED,
              FILL_ALL_POOLS, COLLECT_BATCH, START_DUE_COLLECTIONS, PING, PRUNE_STORAGE, REFRESH_LEADERBOARDS,
              ROLL_UP_DAYS, REFRESH_FORECASTS)
