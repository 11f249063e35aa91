"""Operational actors."""

import logging

from periodiq import cron

from lib.core.clock import get_clock
from lib.core.settings import get_settings
from lib.market.retention import prune
from lib.messaging.routes import PING, PRUNE_STORAGE

logger = logging.getLogger(__name__)


@PING.declare(max_retries=0, idempotency_key=False)
def ping(note: str = "") -> None:
    """Logs that a worker is alive; ``animetop enqueue ping '{"note": "hi"}'`` checks the pipes end to end."""
    logger.info("pong %s", note)


# Hourly (periodiq), at minute 17 to stay clear of the top of the hour. One pass at a time across all
# processes (busy: skip). Each IP is pruned in its own transaction, so a kill mid-pass loses nothing: the next
# pass carries on. README "Storage and retention".
@PRUNE_STORAGE.declare(periodic=cron("17 * * * *"), lock_key=PRUNE_STORAGE.actor_name, on_lock_busy="skip",
                       max_retries=1, time_limit=3_600_000)
def prune_storage() -> None:
    """Prune the stored facts to the retention horizon (``lib.market.retention``), if RETENTION_PRUNE."""
    settings = get_settings()
    if not settings.retention_prune:
        logger.info("prune_storage: RETENTION_PRUNE is false; nothing pruned")
        return
    prune(settings, get_clock().now())
