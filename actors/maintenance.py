"""Operational actors."""

import logging

from periodiq import cron

from lib.core.clock import get_clock
from lib.core.redis_client import state_redis
from lib.core.settings import get_settings
from lib.forecast.refresh import refresh as refresh_forecast_rows
from lib.market.daily import roll_up_pending
from lib.market.read_side import ReadSide
from lib.market.retention import prune
from lib.messaging.routes import PING, PRUNE_STORAGE, REFRESH_FORECASTS, REFRESH_LEADERBOARDS, ROLL_UP_DAYS

from .notify import notify_alert

logger = logging.getLogger(__name__)


@PING.declare(max_retries=0, idempotency_key=False)
def ping(note: str = "") -> None:
    """Logs that a worker is alive; ``animetop enqueue ping '{"note": "hi"}'`` checks the pipes end to end."""
    logger.info("pong %s", note)


# Hourly (periodiq), at minute 17 to stay clear of the top of the hour. One pass at a time across all
# processes (busy: skip). Each IP is pruned in its own transaction, so a kill mid-pass loses nothing: the next
# pass carries on. docs/operating/storage.md.
@PRUNE_STORAGE.declare(periodic=cron("17 * * * *"), lock_key=PRUNE_STORAGE.actor_name, on_lock_busy="skip",
                       max_retries=1, time_limit=3_600_000)
def prune_storage() -> None:
    """Prune the stored facts to the retention horizon (``lib.market.retention``), if RETENTION_PRUNE."""
    settings = get_settings()
    if not settings.retention_prune:
        logger.info("prune_storage: RETENTION_PRUNE is false; nothing pruned")
        return
    prune(settings, get_clock().now())


# Hourly (periodiq), at minute 7: a completed UTC day is rolled up within the hour after midnight, and a past day
# a late result changed within the hour after it (the per-day series computes such days from the hourly rows
# meanwhile). One pass at a time across all processes (busy: skip); each IP in its own transaction, so a kill
# mid-pass loses nothing. docs/operating/storage.md.
@ROLL_UP_DAYS.declare(periodic=cron("7 * * * *"), lock_key=ROLL_UP_DAYS.actor_name, on_lock_busy="skip",
                      max_retries=1, time_limit=3_600_000)
def roll_up_days() -> None:
    """Roll up the completed days whose hourly rows changed into daily rows (``lib.market.daily``)."""
    roll_up_pending(get_clock().now())


# Hourly (periodiq), at minute 37: after the rollup at minute 7 has written the day that closed. One pass at a time
# across all processes (busy: skip); each batch of IPs in its own transaction, so a kill mid-pass loses nothing.
# docs/concepts/forecasts.md.
@REFRESH_FORECASTS.declare(periodic=cron("37 * * * *"), lock_key=REFRESH_FORECASTS.actor_name,
                           on_lock_busy="skip", max_retries=1, time_limit=3_600_000)
def refresh_forecasts() -> None:
    """Refit the forecasts of the IPs whose daily rows changed (``lib.forecast.refresh``), and send out the alerts
    of the breakouts it found, as ``process_result`` sends its own."""
    done = refresh_forecast_rows(get_clock().now())
    if done.alerts and get_settings().notify_webhook_urls:
        for alert_id in done.alerts:
            notify_alert.send(alert_id)


# Every minute (periodiq); one run at a time across all processes (busy: skip, the running one does the work).
# Results mark their IPs' window rows pending; this recomputes those rows (work in proportion to the IPs whose
# data changed, and to those whose facts leave a window at the hour), then keeps the dashboard's boards cached
# ahead of their CACHE_TTL so a viewer finds them warm. docs/concepts/market-data.md.
@REFRESH_LEADERBOARDS.declare(periodic=cron("* * * * *"), lock_key=REFRESH_LEADERBOARDS.actor_name,
                              on_lock_busy="skip", max_retries=0, time_limit=1_800_000)
def refresh_leaderboards() -> None:
    """Recompute the precomputed windows' rows that results or the hour changed (``lib.market.window_rows``),
    then the common windows' leaderboards that are missing or past half their CACHE_TTL (read from those rows),
    then their segments boards (the What sells page) likewise, within RETENTION_DETAIL."""
    side = ReadSide(get_settings(), state_redis(), get_clock())
    side.update_rows()
    done = side.refresh_common()
    if done:
        logger.info("refresh_leaderboards: recomputed the %s h windows", ", ".join(map(str, done)))
    boards = side.refresh_segment_boards()
    if boards:
        logger.info("refresh_leaderboards: recomputed the segments boards %s",
                    ", ".join(f"{by} {hours} h" for by, hours in boards))
