"""Releases an IP's in-flight marker when its crawl is over, whichever way it ended."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import redis
from dramatiq import Broker, MessageProxy, Middleware

from lib.core.errors import key_of
from lib.messaging.in_flight import InFlight

logger = logging.getLogger(__name__)


class InFlightRelease(Middleware):
    """Actor option ``releases_in_flight``: a callable of the message's arguments giving the IP id whose
    marker to release when the message succeeded, failed for good or was dead-lettered. A message that
    will be retried keeps its marker, so the scheduler does not send a second crawl meanwhile."""

    actor_options = {"releases_in_flight"}

    def __init__(self, redis_client: Callable[[], redis.Redis]) -> None:
        self.redis_client = redis_client

    def _release(self, broker: Broker, message: MessageProxy) -> None:
        try:
            actor = broker.get_actor(message.actor_name)
        except Exception:
            return
        option = actor.options.get("releases_in_flight")
        if option is None:
            return
        try:
            ip_id = int(key_of(option, message, "releases_in_flight"))
            InFlight(self.redis_client()).release(ip_id)
        except Exception as e:  # the janitor sweep releases it after JANITOR_TIMEOUT
            logger.warning("could not release in-flight marker of message %s: %s", message.message_id, e)

    def after_process_message(self, broker: Broker, message: MessageProxy, *, result: Any = None,
                              exception: BaseException | None = None) -> None:
        if exception is None or message.failed:
            self._release(broker, message)

    def after_skip_message(self, broker: Broker, message: MessageProxy) -> None:
        self._release(broker, message)

    def after_nack(self, broker: Broker, message: MessageProxy) -> None:
        self._release(broker, message)
