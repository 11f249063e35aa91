"""schedule_tick: turns due IPs into crawl tasks (logic in ``lib.scheduling.tick``)."""

import dramatiq

from lib.core.redis_client import state_redis
from lib.scheduling.tick import TICK_ACTOR_OPTIONS, Scheduler
from lib.core.settings import get_settings


@dramatiq.actor(**TICK_ACTOR_OPTIONS)
def schedule_tick() -> None:
    Scheduler(get_settings(), state_redis(), dramatiq.get_broker()).tick()
