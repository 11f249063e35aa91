"""Builds the Dramatiq broker from BROKER_URL, with the middleware every actor runs under."""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import urlsplit

import dramatiq
import redis
from dramatiq import Broker, MessageProxy, Middleware
from dramatiq.brokers.redis import RedisBroker
from dramatiq.brokers.stub import StubBroker
from dramatiq.errors import ConnectionClosed, DecodeError
from dramatiq.middleware import AgeLimit, Callbacks, CurrentMessage, Pipelines, ShutdownNotifications, TimeLimit
from periodiq import PeriodiqMiddleware

from lib.core import keys
from lib.core.errors import BadMessage
from lib.core.redaction import redact_url
from lib.core.redis_client import connect, ensure_redis_server, serves_a_cluster, state_redis
from lib.core.settings import BROKER_NOT_CLUSTER, Settings, SettingsError
from lib.messaging import compat
from lib.messaging.dead_letters import ReasonStore, decode_or_none
from lib.messaging.encoder import MsgpackEncoder
from lib.messaging.middleware import (
    ArgumentCheck,
    DatabaseConnections,
    DeadLetterReasons,
    Idempotency,
    InFlightRelease,
    LeaseKeeper,
    Locks,
    Retries,
)
from lib.messaging.middleware.browser import BrowserShutdown
from lib.messaging.middleware.dead_letters import describe
from lib.messaging.middleware.event_log import EventLog
from lib.messaging.middleware.event_loop import AsyncIO
from lib.messaging.middleware.memory import ReleaseMemory
from lib.messaging.middleware.metrics import Metrics
from lib.messaging.rabbitmq import AppRabbitmqBroker

logger = logging.getLogger(__name__)

#: Broker-side Redis keys are prefixed with this (in the broker's own database).
NAMESPACE = keys.BROKER_NAMESPACE

#: How late a periodiq tick may start before the worker skips it as stale.
PERIODIC_SKIP_DELAY = 50
#: How long periodiq keeps trying to send a tick while the broker is unreachable (then it skips that one).
PERIODIC_SEND_PATIENCE = 30.0


def _ms(seconds: float) -> int:
    return int(seconds * 1000)


class _Consumer(compat.RedisConsumerBase):
    """Dramatiq's Redis consumer, plus what it lacks.

    * An undecodable payload makes the stock consumer raise and restart,
      leaving the message unacked forever; here it goes to the dead-letter
      queue with its reason, and the consumer carries on.
    * A worker whose threads are all busy stops fetching and so stops
      heartbeating; with a short heartbeat timeout its in-flight messages
      would be handed to another worker. Here it heartbeats regardless. A
      heartbeat that fails is skipped: the fetch that follows reports a lost
      connection, and only once the messages already fetched are handed out.
    * Redis restarted under a running worker: on a connection error
      Dramatiq's consumer thread drops the delayed messages it holds in
      memory (and a consumer dropped with messages fetched but not handed
      out loses those), while their ids stay in this worker's ack set, so
      neither this live worker nor another would ever run them. A new
      consumer first puts back every message of its queue that this broker
      took and that no thread of it holds any more.

    Dramatiq's methods are called through its class rather than ``super()``: they are unannotated, and
    mypy's ``untyped_calls_exclude`` (pyproject.toml) recognises them only by that name.
    """

    broker: AppRedisBroker

    def __init__(self, broker: AppRedisBroker, queue_name: str, prefetch: int, timeout: int) -> None:
        compat.RedisConsumerBase.__init__(self, broker, queue_name, prefetch, timeout)
        self._beat_every = broker.heartbeat_timeout / 4000
        self._last_beat = 0.0
        self._orphans_requeued = False

    def __next__(self) -> MessageProxy | None:
        if not self._orphans_requeued:
            try:
                self._requeue_orphans()
            except (redis.ConnectionError, redis.TimeoutError) as e:
                raise ConnectionClosed(e) from None
            self._orphans_requeued = True
        now = time.monotonic()
        if now - self._last_beat >= self._beat_every:
            try:
                compat.heartbeat(self.broker, self.queue_name)
                self._last_beat = now
            except (redis.ConnectionError, redis.TimeoutError) as e:
                logger.debug("heartbeat on %s failed: %s", self.queue_name, e)
        try:
            message: MessageProxy | None = compat.RedisConsumerBase.__next__(self)
        except DecodeError as e:
            self._dead_letter_undecodable(e)
            return None
        if message is not None:
            if not _is_redis_id(message.options.get("redis_message_id")):
                self._dead_letter_without_id(message)
                return None
            self.broker.handed_out(self.queue_name).add(message.options["redis_message_id"])
        return message

    def _requeue_orphans(self) -> None:
        """Put back the messages of this queue in this broker's ack set that no thread holds (see above)."""
        taken = {rid.decode() for rid in self.broker.client.smembers(compat.acks_key(self.broker, self.queue_name))}
        held = self.broker.handed_out(self.queue_name)
        if compat.delay_queue_name(self.queue_name) == self.queue_name:
            held.clear()  # a delay queue's messages are held by its consumer thread alone, which dropped them
        orphans = sorted(taken - held)
        if orphans:
            compat.requeue(self.broker, self.queue_name, *orphans)
            logger.warning("put back %d message(s) of %s this worker had taken but no longer holds "
                           "(dropped on a lost Redis connection)", len(orphans), self.queue_name)

    def _finished(self, message: MessageProxy) -> None:
        self.broker.handed_out(self.queue_name).discard(message.options.get("redis_message_id"))

    def ack(self, message: MessageProxy) -> None:
        try:
            compat.RedisConsumerBase.ack(self, message)
        finally:
            self._finished(message)

    def nack(self, message: MessageProxy) -> None:
        try:
            compat.RedisConsumerBase.nack(self, message)
        finally:
            self._finished(message)

    def requeue(self, messages: Iterable[MessageProxy]) -> None:
        # Dramatiq's consumer thread closes its consumer on errors and catches only Dramatiq's connection
        # errors there: a raw redis error while Redis is down would end the thread, and its queue with it.
        messages = list(messages)
        try:
            compat.RedisConsumerBase.requeue(self, messages)
        except (redis.ConnectionError, redis.TimeoutError) as e:
            raise ConnectionClosed(e) from None
        for message in messages:
            self._finished(message)

    def _dead_letter_undecodable(self, error: DecodeError) -> None:
        reason = f"undecodable message: {describe(error.error)}"
        client = self.broker.client
        acks = compat.acks_key(self.broker, self.queue_name)
        payloads = compat.payloads_key(self.broker, self.queue_name)
        try:
            for rid in client.smembers(acks):
                if client.hget(payloads, rid) == error.data:
                    self.broker.reasons.record(rid.decode(), reason)
                    compat.nack(self.broker, self.queue_name, rid.decode())
                    logger.warning("dead-lettered message %s on %s: %s", rid.decode(), self.queue_name, reason)
                    return
        except redis.ConnectionError as e:
            raise ConnectionClosed(e) from None
        logger.error("undecodable message on %s could not be found to dead-letter: %s", self.queue_name, reason)

    def _dead_letter_without_id(self, message: MessageProxy) -> None:
        """A message whose options lack the id of its Redis entry (a producer other than Dramatiq's enqueue
        wrote it) could never be acked, nacked or put back: it would stay taken for good, and be run again each
        time its worker restarts. Found by its message id among the taken ones and dead-lettered at once."""
        compat.forget_fetched(self, message.message_id)
        reason = describe(BadMessage(
            f"not a message of this broker: its options carry no Redis id "
            f"(redis_message_id={message.options.get('redis_message_id')!r:.60})"))
        client = self.broker.client
        acks = compat.acks_key(self.broker, self.queue_name)
        payloads = compat.payloads_key(self.broker, self.queue_name)
        try:
            for rid in client.smembers(acks):
                raw = client.hget(payloads, rid)
                if raw is None or message.message_id.encode() not in raw:
                    continue
                found = decode_or_none(raw)
                if (found is not None and found.message_id == message.message_id
                        and not _is_redis_id(found.options.get("redis_message_id"))):
                    self.broker.reasons.record(message.message_id, reason)
                    compat.nack(self.broker, self.queue_name, rid.decode())
                    logger.warning("dead-lettered message %s (%s on %s): %s", message.message_id, message.actor_name,
                                 self.queue_name, reason)
                    return
        except redis.ConnectionError as e:
            raise ConnectionClosed(e) from None
        logger.error("message %s on %s could not be found to dead-letter: %s", message.message_id, self.queue_name,
                     reason)


def _is_redis_id(value: object) -> bool:
    """Whether a message's ``redis_message_id`` option looks like one the broker gave (a UUID)."""
    if not isinstance(value, str) or len(value) != 36:
        return False
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


class AppRedisBroker(RedisBroker):
    """RedisBroker with the consumer above."""

    reasons: ReasonStore

    def __init__(self, **kwargs: Any) -> None:
        RedisBroker.__init__(self, **kwargs)  # through the class: see _Consumer
        self._handed_out: dict[str, set[str]] = {}
        self._handed_out_lock = threading.Lock()

    @property
    def consumer_class(self) -> type[_Consumer]:
        return _Consumer

    def handed_out(self, queue_name: str) -> set[str]:
        """Redis ids of the messages of a queue its consumers handed to this process and not yet acked,
        nacked or put back (set operations are atomic under the GIL; the lock guards creation)."""
        with self._handed_out_lock:
            return self._handed_out.setdefault(queue_name, set())


def build_middleware(settings: Settings,
                     redis_client: Callable[[], redis.Redis]) -> tuple[list[Middleware], ReasonStore]:
    keeper = LeaseKeeper(redis_client)
    reasons = ReasonStore(redis_client, ttl_ms=_ms(settings.dead_message_ttl))
    middleware: list[Middleware] = [
        # first, so its "after" hook runs last and sees what Retries decided
        EventLog(),
        ReleaseMemory(),  # next to last after a message: what the others' hooks freed goes back too
        Metrics(),
        AgeLimit(),
        TimeLimit(time_limit=_ms(settings.actor_time_limit)),
        ShutdownNotifications(),
        Callbacks(),
        Pipelines(),
        CurrentMessage(),
        PeriodiqMiddleware(skip_delay=PERIODIC_SKIP_DELAY),
        ArgumentCheck(),
        Idempotency(redis_client, keeper, ttl_ms=_ms(settings.idempotency_ttl), claim_ttl_ms=_ms(settings.lock_ttl)),
        Locks(redis_client, keeper, default_ttl_ms=_ms(settings.lock_ttl)),
        Retries(
            max_retries=settings.max_retries,
            min_backoff=_ms(settings.retry_min_backoff),
            max_backoff=_ms(settings.retry_max_backoff),
            lock_busy_delay_ms=_ms(settings.lock_busy_retry_delay),
            max_lock_waits=settings.lock_busy_max_waits,
            outage_tolerance_ms=_ms(settings.state_outage_tolerance),
        ),
        DeadLetterReasons(reasons),
        InFlightRelease(redis_client),
        DatabaseConnections(),
        AsyncIO(),
        BrowserShutdown(),  # after AsyncIO: its after-shutdown hook runs first, while the loop still runs
    ]
    return middleware, reasons


def build_broker(settings: Settings, *, namespace: str = NAMESPACE) -> Broker:
    """The broker BROKER_URL names, with msgpack encoding and the app's middleware.

    Also installs the msgpack encoder process-wide (Dramatiq's encoder is global), and makes periodiq's
    scheduler loop ride out a broker outage (see ``compat.ride_out_broker_outages_in_periodiq``).
    """
    dramatiq.set_encoder(MsgpackEncoder(max_bytes=settings.message_max_bytes))
    compat.ride_out_broker_outages_in_periodiq(PERIODIC_SEND_PATIENCE)
    url = settings.broker_url_resolved

    def redis_client() -> redis.Redis:
        return state_redis(settings)

    middleware, reasons = build_middleware(settings, redis_client)
    scheme = urlsplit(url).scheme
    broker: Broker
    if scheme in ("amqp", "amqps"):
        # its publishing connections cannot miss heartbeats (see lib.messaging.rabbitmq)
        broker = AppRabbitmqBroker(url=url, middleware=middleware, confirm_delivery=True)
    elif scheme == "stub":  # Dramatiq's testing guidance: tests choose the in-memory broker at start-up
        broker = StubBroker(middleware=middleware)
    else:
        ensure_redis_server(settings)
        client = connect(url)
        if serves_a_cluster(url):
            raise SettingsError("BROKER_URL", f"{redact_url(url)} is a node of a Redis Cluster. {BROKER_NOT_CLUSTER}")
        broker = AppRedisBroker(
            client=client,
            middleware=middleware,
            namespace=namespace,
            heartbeat_timeout=_ms(settings.broker_heartbeat_timeout),
            maintenance_chance=settings.broker_maintenance_chance,
            dead_message_ttl=_ms(settings.dead_message_ttl),
        )
    broker.reasons = reasons  # type: ignore[union-attr]  # every broker built here carries its dead-letter reasons
    return broker


def enqueue_many(broker: Broker, messages: list[dramatiq.Message[Any]]) -> None:
    """Enqueue many messages at once: one pipelined round trip on the Redis broker.

    The scheduler pushes up to a whole batch of crawl tasks per tick; one
    round trip each would make the tick's cost a multiple of the floor.
    """
    if not isinstance(broker, RedisBroker):
        for message in messages:
            broker.enqueue(message)
        return
    compat.enqueue_pipelined(broker, messages)
