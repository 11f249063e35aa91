"""Everything animetop relies on inside Dramatiq and periodiq beyond their public API, in one place.

Each name here stands for an internal of a pinned version (setup.cfg: dramatiq 2.2, periodiq 0.14), and
``tests/messaging/test_compat.py`` has a test per internal that fails, naming it, when a release changes it.
The rest of the code base calls these functions and never touches a private name of either library.

What is used, and why:

* ``dramatiq.brokers.redis._RedisConsumer``: the Redis broker's consumer, subclassed to dead-letter
  undecodable messages, heartbeat while all threads are busy and put back messages dropped on a lost
  connection (see ``lib.messaging.broker``). Its ``queued_message_ids`` set is what it has fetched and not
  yet handed out.
* The Redis broker's key layout in its database (queue list, payload hashes, ack sets, dead-letter sets),
  read by the status screen, the dead-letter tool and the consumer above.
* The broker's ``dispatch`` Lua script and its ``do_<command>`` methods (``heartbeat``, ``requeue``,
  ``nack``), and its ``enqueue`` command's arguments: many messages enqueued in one pipelined round trip.
* The RabbitMQ broker's per-thread publishing connection: its ``state`` (a ``threading.local`` holding the
  thread's ``connection``) and its ``connections`` set (what ``close`` closes), so that ``AppRabbitmqBroker`` opens
  that connection with parameters of its own (``lib.messaging.rabbitmq``).
* periodiq's ``Scheduler.send_actors``, wrapped so that a broker outage at a tick does not end the
  ``periodiq`` process.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Iterable
from typing import Any

import pika
import redis
from dramatiq import Message
from dramatiq.brokers.rabbitmq import RabbitmqBroker
from dramatiq.brokers.redis import RedisBroker, _RedisConsumer
from dramatiq.common import current_millis, dq_name, q_name, xq_name
from dramatiq.errors import BrokerConnectionError

logger = logging.getLogger(__name__)

#: The Redis broker's consumer class (private in Dramatiq), the base of ours.
RedisConsumerBase = _RedisConsumer


# -- queue names (dramatiq.common, undocumented) ------------------------------------------------------------

def base_queue_name(queue: str) -> str:
    """The queue a delay or dead-letter queue belongs to (``q`` of ``q.DQ`` and ``q.XQ``)."""
    return q_name(queue)


def delay_queue_name(queue: str) -> str:
    """The queue holding a queue's delayed messages until their time (``q.DQ``)."""
    return dq_name(queue)


def dead_queue_name(queue: str) -> str:
    """The queue holding a queue's dead-lettered messages (``q.XQ``; a RabbitMQ queue of that name too)."""
    return xq_name(queue)


# -- the Redis broker's keys -------------------------------------------------------------------------------

def queue_key(broker: RedisBroker, queue: str) -> str:
    """LIST of the ids of a queue's ready messages."""
    return f"{broker.namespace}:{queue}"


def payloads_key(broker: RedisBroker, queue: str) -> str:
    """HASH id → encoded message of every message of a queue not yet acked (ready or taken)."""
    return f"{broker.namespace}:{queue}.msgs"


def delayed_payloads_key(broker: RedisBroker, queue: str) -> str:
    """HASH of a queue's delayed messages (they live in its delay queue, ``<queue>.DQ``)."""
    return payloads_key(broker, dq_name(queue))


def dead_key(broker: RedisBroker, queue: str) -> str:
    """ZSET id → death time (ms) of a queue's dead-lettered messages (``<queue>.XQ``)."""
    return f"{broker.namespace}:{xq_name(queue)}"


def dead_payloads_key(broker: RedisBroker, queue: str) -> str:
    """HASH id → encoded message of a queue's dead-lettered messages."""
    return f"{dead_key(broker, queue)}.msgs"


def dead_queues_pattern(broker: RedisBroker) -> str:
    """SCAN pattern of every queue's dead-letter set; ``dead_queue_of`` reads the queue back from a key."""
    return f"{broker.namespace}:*{xq_name('')}"


def dead_queue_of(broker: RedisBroker, key: str) -> str:
    return key[len(f"{broker.namespace}:"):-len(xq_name(""))]


def acks_key(broker: RedisBroker, queue: str) -> str:
    """SET of the ids of a queue's messages this broker (this process) has taken and not yet acked."""
    return f"{broker.namespace}:__acks__.{broker.broker_id}.{queue}"


def acks_pattern(broker: RedisBroker, queue: str) -> str:
    """SCAN pattern of the ack sets of every broker (every worker process) for a queue."""
    return f"{broker.namespace}:__acks__.*.{queue}"


# -- the broker's dispatch script --------------------------------------------------------------------------

def heartbeat(broker: RedisBroker, queue: str) -> None:
    """Tell the broker this process is alive (what a consumer does on each fetch)."""
    broker.do_heartbeat(queue)


def requeue(broker: RedisBroker, queue: str, *message_ids: str) -> None:
    """Put taken messages back at the front of their queue."""
    broker.do_requeue(queue, *message_ids)


def nack(broker: RedisBroker, queue: str, message_id: str) -> None:
    """Move a taken message to its queue's dead letters."""
    broker.do_nack(queue, message_id)


def forget_fetched(consumer: _RedisConsumer, message_id: str) -> None:
    """Drop a message from what the consumer has fetched and not handed out (it will never hand it out)."""
    consumer.queued_message_ids.discard(message_id)


def enqueue_pipelined(broker: RedisBroker, messages: Iterable[Message[Any]]) -> list[Message[Any]]:
    """Enqueue many messages in one round trip: ``RedisBroker.enqueue`` for each, its script calls pipelined.

    Returns the messages as enqueued (with their Redis ids), after the broker's enqueue hooks ran for each.
    """
    dispatch = broker.scripts["dispatch"]
    pipe = broker.client.pipeline(transaction=False)
    sent = []
    for message in messages:
        broker.declare_queue(message.queue_name)
        message = message.copy(options={"redis_message_id": str(uuid.uuid4())})
        broker.emit_before("enqueue", message, None)
        args = ["enqueue", current_millis(), message.queue_name, broker.broker_id, broker.heartbeat_timeout,
                broker.dead_message_ttl, 0, broker._max_unpack_size(),
                message.options["redis_message_id"], message.encode()]
        dispatch(keys=[broker.namespace], args=args, client=pipe)
        sent.append(message)
    pipe.execute()
    for message in sent:
        broker.emit_after("enqueue", message, None)
    return sent


# -- the RabbitMQ broker's per-thread connection ------------------------------------------------------------

def thread_connection(broker: RabbitmqBroker) -> pika.BlockingConnection | None:
    """The calling thread's publishing connection, or None before its first use (or after ``del broker.connection``)."""
    return getattr(broker.state, "connection", None)


def set_thread_connection(broker: RabbitmqBroker, connection: pika.BlockingConnection) -> None:
    """Make ``connection`` the calling thread's publishing connection, closed with the broker."""
    broker.state.connection = connection
    broker.connections.add(connection)


# -- periodiq ----------------------------------------------------------------------------------------------

#: The exceptions that mean "the broker cannot be reached right now".
BROKER_UNREACHABLE = (redis.ConnectionError, redis.TimeoutError, BrokerConnectionError)


def ride_out_broker_outages_in_periodiq(patience: float, retry_every: float = 1.0,
                                        sleep: Callable[[float], None] = time.sleep) -> None:
    """periodiq sends the periodic messages from its main loop, and the first send that fails (Redis
    restarting at that minute) ends the ``periodiq`` command, so the scheduler process type is restarted.
    Wrapped here, a send that cannot reach the broker is tried again every ``retry_every`` seconds for
    ``patience`` seconds, then that minute's message is skipped with an error (the next minute sends the
    next one). Idempotent: wrapping twice changes nothing."""
    from periodiq import Scheduler

    original = Scheduler.send_actors
    if getattr(original, "rides_out_broker_outages", False):
        return

    def send_actors(self: Scheduler, actors: list[Any], now: Any) -> None:
        for actor in actors:
            deadline = time.monotonic() + patience
            while True:
                try:
                    original(self, [actor], now)
                    break
                except BROKER_UNREACHABLE as e:
                    if time.monotonic() >= deadline:
                        logger.error("could not send %s of %s, the broker was unreachable for %.0fs: skipped (%s)",
                                     actor.actor_name, now, patience, e)
                        break
                    logger.warning("could not send %s of %s, the broker is unreachable; trying again (%s)",
                                   actor.actor_name, now, e)
                    sleep(retry_every)

    send_actors.rides_out_broker_outages = True  # type: ignore[attr-defined]  # the marker of the wrapper
    Scheduler.send_actors = send_actors
