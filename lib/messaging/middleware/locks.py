"""Distributed locks around actor runs, kept alive while they run (docs/concepts/architecture.md, Locks)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

import redis
from dramatiq import Broker, MessageProxy, Middleware
from dramatiq.middleware import SkipMessage

from lib.core import keys
from lib.core.errors import LockBusy, StateUnavailable, key_of
from lib.core.state_errors import STATE_ERRORS
from lib.messaging.middleware.leases import LeaseKeeper

logger = logging.getLogger(__name__)


class Locks(Middleware):
    """Runs an actor only while holding the Redis lock its ``lock_key`` names.

    Actor options:
      lock_key: a string, or a callable of the message's args/kwargs returning one.
      lock_ttl: the lease in milliseconds; kept alive while the actor runs.
      on_lock_busy: "retry" (default) runs the message again shortly; "skip" acks it.
    """

    actor_options = {"lock_key", "lock_ttl", "on_lock_busy"}

    def __init__(self, redis_client: Callable[[], redis.Redis], keeper: LeaseKeeper, *, default_ttl_ms: int) -> None:
        self.redis_client = redis_client
        self.keeper = keeper
        self.default_ttl_ms = default_ttl_ms
        self._held: dict[str, redis.lock.Lock] = {}
        self._mutex = threading.Lock()

    def before_process_message(self, broker: Broker, message: MessageProxy) -> None:
        actor = broker.get_actor(message.actor_name)
        lock_key = actor.options.get("lock_key")
        if lock_key is None:
            return
        name = key_of(lock_key, message, "lock_key")
        ttl_ms = actor.options.get("lock_ttl", self.default_ttl_ms)
        lock = self.redis_client().lock(
            keys.lock(name), timeout=ttl_ms / 1000, blocking=False, thread_local=False)
        try:
            acquired = self.keeper.acquire(self.redis_client(), lock)  # a dead holder's lock is taken over
        except STATE_ERRORS as e:  # a MiddlewareError, so Dramatiq does not run the message unguarded
            raise StateUnavailable(f"could not take lock {name!r}: {e}") from e
        if not acquired:
            if actor.options.get("on_lock_busy", "retry") == "skip":
                logger.info("lock %r busy: skipping message %s", name, message.message_id)
                raise SkipMessage()
            raise LockBusy(name)
        self.keeper.hold(lock)
        with self._mutex:
            self._held[message.message_id] = lock

    def _release(self, message: MessageProxy) -> None:
        with self._mutex:
            lock = self._held.pop(message.message_id, None)
        if lock is not None:
            self.keeper.release(lock)

    def after_process_message(self, broker: Broker, message: MessageProxy, *, result: Any = None,
                              exception: BaseException | None = None) -> None:
        self._release(message)

    def after_skip_message(self, broker: Broker, message: MessageProxy) -> None:
        self._release(message)
