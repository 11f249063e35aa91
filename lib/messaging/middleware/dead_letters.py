"""Records why each message was dead-lettered, where the dead-letter tool finds it."""

from __future__ import annotations

import logging

from dramatiq import Broker, MessageProxy, Middleware

from lib.core.log_filters import BAD_INPUT
from lib.messaging.dead_letters import ReasonStore

logger = logging.getLogger(__name__)


def describe(exception: BaseException | None) -> str:
    if exception is None:
        return "failed without an exception"
    return f"{type(exception).__name__}: {exception}"[:2000]


class DeadLetterReasons(Middleware):
    """On every nack (a message going to the dead-letter queue), log and store the reason.

    Stored before the nack, so whoever sees the dead letter also sees why.
    """

    def __init__(self, reasons: ReasonStore) -> None:
        self.reasons = reasons

    def before_nack(self, broker: Broker, message: MessageProxy) -> None:
        exception = getattr(message, "_exception", None)
        reason = describe(exception)
        # Bad input is expected and its event line says why; a message that failed its retries is an error.
        log = logger.debug if isinstance(exception, BAD_INPUT) else logger.error
        log("dead-lettered message %s (%s on %s): %s", message.message_id, message.actor_name, message.queue_name,
            reason)
        try:
            self.reasons.record(message.message_id, reason)
        except Exception as e:  # the message is safe in the DLQ either way
            logger.warning("could not store the dead-letter reason of %s: %s", message.message_id, e)
