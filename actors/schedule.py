"""schedule_tick: turns due IPs into crawl tasks (logic in ``lib.scheduling.tick``)."""

from periodiq import cron

from lib.core.redis_client import state_redis
from lib.core.settings import get_settings
from lib.messaging.routes import SCHEDULE_TICK
from lib.scheduling.tick import Scheduler


# Fired every minute by periodiq. The lock lets one tick run at a time across all processes (busy: one is
# running, skip), and the idempotency middleware keys periodic messages by their tick time, so two periodiq
# processes sending the same minute's tick run it once.
@SCHEDULE_TICK.declare(periodic=cron("* * * * *"), lock_key=SCHEDULE_TICK.actor_name, on_lock_busy="skip",
                       max_retries=2, time_limit=120_000)
def schedule_tick() -> None:
    Scheduler(get_settings(), state_redis(), schedule_tick.broker).tick()
