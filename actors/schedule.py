"""schedule_tick: turns due IPs into crawl tasks (logic in ``lib.schedule_tick``)."""

import dramatiq

from lib.redis_state import state_redis
from lib.schedule_tick import TICK_ACTOR_OPTIONS, Scheduler
from lib.settings import get_settings


@dramatiq.actor(**TICK_ACTOR_OPTIONS)
def schedule_tick() -> None:
    Scheduler(get_settings(), state_redis(), dramatiq.get_broker()).tick()
