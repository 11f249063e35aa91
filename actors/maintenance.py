"""Operational actors."""

import logging

from lib.messaging.routes import PING

logger = logging.getLogger(__name__)


@PING.declare(max_retries=0, idempotency_key=False)
def ping(note: str = "") -> None:
    """Logs that a worker is alive; ``animetop enqueue ping '{"note": "hi"}'`` checks the pipes end to end."""
    logger.info("pong %s", note)
