"""schedule_tick: turns due IPs into crawl tasks (logic in ``lib.schedule_tick``)."""

import dramatiq
from periodiq import cron

from lib.queues import SCHEDULER
from lib.redis_state import state_redis
from lib.schedule_tick import Scheduler, TICK_ACTOR
from lib.settings import get_settings


@dramatiq.actor(actor_name=TICK_ACTOR, queue_name=SCHEDULER, periodic=cron("* * * * *"),
                lock_key=TICK_ACTOR, on_lock_busy="skip", max_retries=2, time_limit=120_000)
def schedule_tick() -> None:
    """One tick; only one runs at a time across every process (a busy lock means one is running: skip)."""
    Scheduler(get_settings(), state_redis(), dramatiq.get_broker()).tick()
