"""The Dramatiq actors. Importing this package runs the process's start-up (``lib.app.setup``: settings,
logging, database, broker) and declares the actors on that broker.

``dramatiq actors`` and ``periodiq actors`` load it; scripts do
``from actors import crawl_ip; crawl_ip.send(...)``.

Tests follow Dramatiq's testing guidance: the broker is chosen at start-up from the environment
(``BROKER_URL=stub://`` gives Dramatiq's ``StubBroker``), and ``declare_on`` declares these same actors on
a broker a test built with the same start-up code.
"""

from typing import Any

from dramatiq import Actor, Broker

from lib.app import setup

broker = setup()

from .collect import collect_batch, start_due_collections
from .crawl import crawl_ip
from .maintenance import ping, prune_storage, refresh_forecasts, refresh_leaderboards, roll_up_days
from .notify import deliver_alert, notify_alert
from .pipeline import process_result
from .pool import fill_all_pools, fill_pool, mark_used, pool_consumer
from .schedule import schedule_tick

#: Every production actor.
ACTORS: tuple[Actor[..., Any], ...] = (schedule_tick, crawl_ip, process_result, notify_alert, deliver_alert, fill_pool,
                             mark_used, fill_all_pools, collect_batch, start_due_collections, ping,
                             prune_storage, refresh_leaderboards, roll_up_days, refresh_forecasts)


def declare_on(other: Broker) -> None:
    """Declare every actor on ``other`` and make it the broker they send to.

    An actor is bound to one broker (``Actor.broker``); a test builds a fresh broker per test, so the
    production actors move to it rather than being declared again under the same names.
    """
    for actor in ACTORS:
        actor.broker = other
        other.declare_actor(actor)


__all__ = ["ACTORS", "broker", "collect_batch", "crawl_ip", "declare_on", "deliver_alert", "fill_all_pools",
           "fill_pool", "mark_used", "notify_alert", "ping", "pool_consumer", "process_result", "prune_storage",
           "refresh_forecasts", "refresh_leaderboards", "roll_up_days", "schedule_tick", "start_due_collections"]
