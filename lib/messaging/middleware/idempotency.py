"""Runs each message's effect at most once, even when it is delivered twice.

A message's key (the ``idempotency_key`` actor option, else the periodiq
``scheduled_at`` of a periodic message, else the message id) is marked done
only after the actor succeeded, as its own Redis key with its own expiry
(not one shared SET: re-expired on every add, it would never shrink).

Two copies delivered at the same moment race for a claim lock on the key;
the loser is run again shortly and then finds the key done. The claim is a
lease kept alive while the winner runs; a killed worker's claim is taken
over as soon as its holder counts as gone (``leases.HOLDER_TTL``), not
after the whole lease.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

import redis
from dramatiq import Actor, Broker, MessageProxy, Middleware
from dramatiq.middleware import SkipMessage

from lib.core import keys
from lib.core.errors import LockBusy, StateUnavailable, key_of
from lib.core.state_errors import STATE_ERRORS, ride_out
from lib.messaging.middleware.leases import LeaseKeeper

logger = logging.getLogger(__name__)

DONE = b"1"


def message_key(actor: Actor[..., Any], message: MessageProxy) -> str | None:
    """The idempotency key of a message, or None when the actor opted out."""
    option = actor.options.get("idempotency_key")
    if option is False:
        return None
    if option is not None:
        return key_of(option, message, "idempotency_key")
    scheduled_at = message.options.get("scheduled_at")
    if scheduled_at and "periodic" in actor.options:
        # periodiq sends one message per tick per scheduler process: one tick, one run.
        return f"tick:{scheduled_at}"
    return message.message_id


class Idempotency(Middleware):
    """Skips (and acks) a message whose key was already processed."""

    actor_options = {"idempotency_key", "idempotency_ttl"}

    def __init__(self, redis_client: Callable[[], redis.Redis], keeper: LeaseKeeper, *,
                 ttl_ms: int, claim_ttl_ms: int) -> None:
        self.redis_client = redis_client
        self.keeper = keeper
        self.ttl_ms = ttl_ms
        self.claim_ttl_ms = claim_ttl_ms
        self.skipped = 0
        self._claims: dict[str, tuple[str, redis.lock.Lock]] = {}
        self._mutex = threading.Lock()

    def before_process_message(self, broker: Broker, message: MessageProxy) -> None:
        actor = broker.get_actor(message.actor_name)
        key = message_key(actor, message)
        if key is None:
            return
        done_key = keys.idempotency(actor.actor_name, key)
        try:
            self._claim(message, key, done_key)
        except STATE_ERRORS as e:  # a MiddlewareError, so Dramatiq does not run the message unguarded
            raise StateUnavailable(f"idempotency check failed: {e}") from e

    def _claim(self, message: MessageProxy, key: str, done_key: str) -> None:
        client = self.redis_client()
        if client.exists(done_key):
            self._skip(message, key)
        claim = client.lock(f"{done_key}:claim", timeout=self.claim_ttl_ms / 1000, blocking=False,
                            thread_local=False)
        if not self.keeper.acquire(client, claim):  # a dead holder's claim is taken over at once
            raise LockBusy(f"idempotency claim {key}")
        try:
            done = client.exists(done_key)  # the other copy may have finished between our two checks
        except BaseException:
            self.keeper.release(claim)
            raise
        if done:
            self.keeper.release(claim)
            self._skip(message, key)
        self.keeper.hold(claim)
        with self._mutex:
            self._claims[message.message_id] = (done_key, claim)

    def _skip(self, message: MessageProxy, key: str) -> None:
        with self._mutex:
            self.skipped += 1
        logger.info("message %s (%s, key %s) was already processed: skipping", message.message_id,
                    message.actor_name, key)
        raise SkipMessage()

    def after_process_message(self, broker: Broker, message: MessageProxy, *, result: Any = None,
                              exception: BaseException | None = None) -> None:
        with self._mutex:
            claim = self._claims.pop(message.message_id, None)
        if claim is None:
            return
        done_key, lock = claim
        if exception is None:
            actor = broker.get_actor(message.actor_name)
            ttl_ms = actor.options.get("idempotency_ttl", self.ttl_ms)
            # Marked before the claim is released, so a waiting copy always sees it. The effect is applied and the
            # message will be acked: an outage is waited out here for up to half the claim's lease (the claim is
            # still ours meanwhile); a longer one leaves the key unmarked (a copy delivered again would run again,
            # which the actors' own ledgers make harmless).
            try:
                ride_out(lambda: self.redis_client().set(done_key, DONE, px=int(ttl_ms)),
                         patience=self.claim_ttl_ms / 2000)
            except STATE_ERRORS as e:
                logger.warning("message %s (%s) succeeded but could not be marked done: %s", message.message_id,
                               message.actor_name, e)
        self.keeper.release(lock)

    def after_skip_message(self, broker: Broker, message: MessageProxy) -> None:
        with self._mutex:
            claim = self._claims.pop(message.message_id, None)
        if claim is not None:
            self.keeper.release(claim[1])
