"""Operational actors."""

import logging

import dramatiq

from lib.messaging.queues import MAINTENANCE

logger = logging.getLogger(__name__)


@dramatiq.actor(queue_name=MAINTENANCE, max_retries=0, idempotency_key=False)
def ping(note: str = "") -> None:
    """Logs that a worker is alive; ``animetop enqueue ping '{"note": "hi"}'`` checks the pipes end to end."""
    logger.info("pong %s", note)
