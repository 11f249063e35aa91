"""The dead-letter queues of both brokers: list, show, requeue and purge.

Dramatiq moves a message that failed for good to ``<queue>.XQ`` but ships
no tool to look at it or send it back. ``DeadLetters.for_broker`` gives the
one that fits the broker in use; the reason each message died is stored
apart (``ReasonStore``), because the Redis broker keeps the payload as it
was enqueued, before its last failure.
"""

from __future__ import annotations

import builtins
import datetime
import hashlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import redis
from dramatiq import Broker
from dramatiq.brokers.rabbitmq import RabbitmqBroker
from dramatiq.brokers.redis import RedisBroker
from dramatiq.errors import DecodeError
from dramatiq.message import Message

from lib.core import keys
from lib.core.redaction import redact_text
from lib.messaging import compat

#: Options that belong to a message's failed life, dropped when it is requeued.
FAILURE_OPTIONS = ("retries", "traceback", "requeue_timestamp", "lock_waits", "eta", "redis_message_id")


class ReasonStore:
    """Why a message was dead-lettered: one key per message, expiring with the DLQ entry."""

    def __init__(self, redis_client: Callable[[], redis.Redis], ttl_ms: int) -> None:
        self.redis_client = redis_client
        self.ttl_ms = ttl_ms

    def record(self, message_id: str, reason: str) -> None:
        """Store the reason, credentials in any URL it quotes redacted (status and the dead-letter tool show it)."""
        self.redis_client().set(keys.dead_letter_reason(message_id), redact_text(reason), px=self.ttl_ms)

    def get(self, message_id: str) -> str | None:
        value = self.redis_client().get(keys.dead_letter_reason(message_id))
        return value.decode() if value is not None else None

    def forget(self, message_id: str) -> None:
        self.redis_client().delete(keys.dead_letter_reason(message_id))


@dataclass
class DeadLetter:
    """One dead-lettered message as stored by the broker."""

    id: str  # the broker's id for the stored entry
    queue: str
    raw: bytes = field(repr=False)
    dead_at: float | None = None
    message: Message[Any] | None = None
    reason: str | None = None

    @property
    def message_id(self) -> str:
        return self.message.message_id if self.message else self.id

    @property
    def actor(self) -> str:
        return self.message.actor_name if self.message else "?"

    @property
    def retries(self) -> int:
        return int(self.message.options.get("retries", 0)) if self.message else 0

    def matches(self, ident: str) -> bool:
        return ident in (self.id, self.message_id)

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "message_id": self.message_id,
            "queue": self.queue,
            "actor": self.actor,
            "retries": self.retries,
            "dead_at": self.dead_at,
            "reason": self.reason or ("undecodable payload" if self.message is None else None),
            "args": _redacted(list(self.message.args)) if self.message else None,
            "kwargs": _redacted(self.message.kwargs) if self.message else None,
            "size": len(self.raw),
        }


def _redacted(value: Any) -> Any:
    """Arguments as shown to people: credentials in any URL in them redacted (requeue sends the stored payload)."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, (list, tuple)):
        return [_redacted(v) for v in value]
    if isinstance(value, dict):
        return {k: _redacted(v) for k, v in value.items()}
    return value


def decode_or_none(raw: bytes) -> Message[Any] | None:
    try:
        return Message.decode(raw)
    except DecodeError:
        return None


def fresh_copy(message: Message[Any]) -> Message[Any]:
    """The message as if never tried: same id and arguments, retry counters reset."""
    options = {k: v for k, v in message.options.items() if k not in FAILURE_OPTIONS}
    return Message(
        queue_name=compat.base_queue_name(message.queue_name),
        actor_name=message.actor_name,
        args=message.args,
        kwargs=message.kwargs,
        options=options,
        message_id=message.message_id,
        message_timestamp=message.message_timestamp,
    )


def _wanted(letter: DeadLetter, idents: list[str] | None) -> bool:
    return idents is None or any(letter.matches(i) for i in idents)


class NotRequeueable(ValueError):
    """A dead letter that cannot be sent back (its payload does not decode)."""


class DeadLetters:
    """Common operations; subclasses know where their broker keeps dead letters."""

    def __init__(self, broker: Broker, reasons: ReasonStore) -> None:
        self.broker = broker
        self.reasons = reasons

    @staticmethod
    def for_broker(broker: Broker, reasons: ReasonStore) -> DeadLetters:
        if isinstance(broker, RedisBroker):
            return RedisDeadLetters(broker, reasons)
        if isinstance(broker, RabbitmqBroker):
            return RabbitmqDeadLetters(broker, reasons)
        raise TypeError(f"no dead-letter support for {type(broker).__name__}")

    def _annotate(self, letter: DeadLetter) -> DeadLetter:
        letter.message = decode_or_none(letter.raw)
        letter.reason = self.reasons.get(letter.message_id) or self.reasons.get(letter.id)
        return letter

    def list(self, queue: str | None = None) -> list[DeadLetter]:
        return [self._annotate(letter) for letter in self._entries(queue)]

    def get(self, ident: str) -> DeadLetter | None:
        for letter in self.list():
            if letter.matches(ident):
                return letter
        return None

    def select(self, idents: builtins.list[str] | None, queue: str | None = None) -> builtins.list[DeadLetter]:
        """The dead letters a requeue or purge of the same arguments would affect (a dry run)."""
        return [letter for letter in self.list(queue) if _wanted(letter, idents)]

    def requeue(self, idents: builtins.list[str] | None, queue: str | None = None) -> builtins.list[DeadLetter]:
        """Send back the named dead letters (all of ``queue``, or all, when ``idents`` is None)."""
        def send(letter: DeadLetter) -> None:
            if letter.message is None:
                raise NotRequeueable(f"{letter.id}: payload does not decode; purge it instead")
            self.broker.enqueue(fresh_copy(letter.message))
            self.reasons.forget(letter.message_id)

        return self._remove(queue, lambda letter: _wanted(letter, idents), send)

    def discard(self, idents: builtins.list[str] | None, queue: str | None = None) -> builtins.list[DeadLetter]:
        """Delete the named dead letters (all of ``queue``, or all, when ``idents`` is None) for good, saying
        which (``purge`` deletes whole queues and only counts them)."""
        return self._remove(queue, lambda letter: _wanted(letter, idents),
                            lambda letter: self.reasons.forget(letter.message_id))

    # broker specific
    def queues(self) -> builtins.list[str]:
        raise NotImplementedError

    def _entries(self, queue: str | None) -> Iterator[DeadLetter]:
        raise NotImplementedError

    def _remove(self, queue: str | None, wanted: Callable[[DeadLetter], bool],
                before: Callable[[DeadLetter], None]) -> builtins.list[DeadLetter]:
        """Remove each wanted dead letter, calling ``before(letter)`` first (so a crash between the two repeats
        ``before``, never loses the letter)."""
        raise NotImplementedError

    def purge(self, queue: str | None = None) -> int:
        raise NotImplementedError


class RedisDeadLetters(DeadLetters):
    """``<ns>:<queue>.XQ`` (ids by death time) and ``<ns>:<queue>.XQ.msgs`` (payloads)."""

    broker: RedisBroker

    @property
    def _client(self) -> redis.Redis:
        return self.broker.client

    def queues(self) -> builtins.list[str]:
        found = set(self.broker.get_declared_queues())
        for key in self._client.scan_iter(match=compat.dead_queues_pattern(self.broker), count=500):
            found.add(compat.dead_queue_of(self.broker, key.decode()))
        return sorted(found)

    def _entries(self, queue: str | None) -> Iterator[DeadLetter]:
        for name in [queue] if queue else self.queues():
            xq = compat.dead_key(self.broker, name)
            for rid, score in self._client.zrange(xq, 0, -1, withscores=True):
                raw = self._client.hget(compat.dead_payloads_key(self.broker, name), rid)
                if raw is not None:
                    yield DeadLetter(id=rid.decode(), queue=name, raw=raw, dead_at=score / 1000)

    def _remove(self, queue: str | None, wanted: Callable[[DeadLetter], bool],
                before: Callable[[DeadLetter], None]) -> builtins.list[DeadLetter]:
        done = []
        for letter in self.list(queue):
            if not wanted(letter):
                continue
            before(letter)  # enqueue first: a crash in between duplicates, never loses
            pipe = self._client.pipeline()
            pipe.zrem(compat.dead_key(self.broker, letter.queue), letter.id)
            pipe.hdel(compat.dead_payloads_key(self.broker, letter.queue), letter.id)
            pipe.execute()
            done.append(letter)
        return done

    def purge(self, queue: str | None = None) -> int:
        count = 0
        for name in [queue] if queue else self.queues():
            for letter in self.list(name):
                self.reasons.forget(letter.message_id)
                count += 1
            self._client.delete(compat.dead_key(self.broker, name), compat.dead_payloads_key(self.broker, name))
        return count


def _death_time(properties: object) -> float | None:
    """When RabbitMQ dead-lettered the message: the newest ``time`` of its ``x-death`` header (RabbitMQ adds it
    when it moves a rejected message to the dead-letter queue; pika decodes it as a UTC datetime). Dramatiq
    publishes without a ``timestamp`` property, which is read only as a fallback."""
    headers = getattr(properties, "headers", None) or {}
    times = []
    for death in headers.get("x-death") or []:
        when = death.get("time") if isinstance(death, dict) else None
        if isinstance(when, datetime.datetime):
            times.append((when if when.tzinfo else when.replace(tzinfo=datetime.timezone.utc)).timestamp())
        elif isinstance(when, int | float):
            times.append(float(when))
    if times:
        return max(times)
    timestamp = getattr(properties, "timestamp", None)
    return float(timestamp) if timestamp else None


class RabbitmqDeadLetters(DeadLetters):
    """The ``<queue>.XQ`` queues of RabbitMQ, read by fetching without acking."""

    broker: RabbitmqBroker

    def queues(self) -> builtins.list[str]:
        return sorted(q for q in self.broker.get_declared_queues())

    def _channel(self) -> tuple[Any, Any]:
        import pika

        parameters = self.broker.parameters
        connection = pika.BlockingConnection(parameters[0] if isinstance(parameters, list) else parameters)
        return connection, connection.channel()

    def _drain(self, queue: str) -> Iterator[tuple[Any, int, DeadLetter]]:
        """Yield (channel, delivery_tag, DeadLetter) for every message; unacked ones return on close."""
        import pika

        connection, channel = self._channel()
        try:
            try:
                channel.queue_declare(compat.dead_queue_name(queue), passive=True)
            except pika.exceptions.ChannelClosedByBroker:
                return
            while True:
                method, properties, body = channel.basic_get(compat.dead_queue_name(queue), auto_ack=False)
                if method is None:
                    break
                message = decode_or_none(body)
                ident = message.message_id if message else hashlib.sha1(body).hexdigest()[:16]
                yield channel, method.delivery_tag, DeadLetter(id=ident, queue=queue, raw=body,
                                                               dead_at=_death_time(properties))
        finally:
            if connection.is_open:
                connection.close()  # unacked messages go back to the dead-letter queue

    def _entries(self, queue: str | None) -> Iterator[DeadLetter]:
        for name in [queue] if queue else self.queues():
            letters = [letter for _, _, letter in self._drain(name)]
            yield from letters

    def _remove(self, queue: str | None, wanted: Callable[[DeadLetter], bool],
                before: Callable[[DeadLetter], None]) -> builtins.list[DeadLetter]:
        done = []
        for name in [queue] if queue else self.queues():
            for channel, tag, letter in self._drain(name):
                self._annotate(letter)
                if wanted(letter):
                    before(letter)
                    channel.basic_ack(tag)
                    done.append(letter)
        return done

    def purge(self, queue: str | None = None) -> int:
        count = 0
        for name in [queue] if queue else self.queues():
            for channel, tag, letter in self._drain(name):
                self._annotate(letter)
                self.reasons.forget(letter.message_id)
                channel.basic_ack(tag)
                count += 1
        return count
