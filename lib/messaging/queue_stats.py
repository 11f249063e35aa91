"""How many messages wait in each queue, on any of the brokers, and a broker to ask that with.

Apart from ``lib.messaging.broker`` (which builds the app's broker with its middleware, the metrics one among
them), so that the status screen and the /metrics exposition can count without building that broker.

On RabbitMQ a count is a request on the calling thread's connection, which RabbitMQ or the network may have closed
since its last use (``schedule_tick`` counts the crawl queue once a minute). A count that finds its connection lost
counts again once on a new one, with a WARNING line; a second loss is Dramatiq's ``ConnectionClosed``.
"""

from __future__ import annotations

import logging
from urllib.parse import urlsplit

import pika.exceptions
from dramatiq import Broker
from dramatiq.brokers.rabbitmq import RabbitmqBroker
from dramatiq.brokers.redis import RedisBroker
from dramatiq.brokers.stub import StubBroker
from dramatiq.errors import BrokerConnectionError, ConnectionClosed

from lib.core import keys
from lib.core.redis_client import connect, ensure_redis_server
from lib.core.settings import Settings
from lib.messaging import compat
from lib.messaging.rabbitmq import AppRabbitmqBroker

logger = logging.getLogger(__name__)

#: A RabbitMQ connection lost under a request: closed by the server or the network (pika's ``StreamLostError``,
#: ``ConnectionClosed``…), a channel left closed with it, or Dramatiq's own connection errors.
LOST_CONNECTION: tuple[type[BaseException], ...] = (
    pika.exceptions.AMQPConnectionError, pika.exceptions.ChannelWrongStateError, BrokerConnectionError)
#: Kinds of the errors above that a new connection does not cure: refused credentials or virtual host.
NOT_LOST: tuple[type[BaseException], ...] = (
    pika.exceptions.ProbableAuthenticationError, pika.exceptions.ProbableAccessDeniedError,
    pika.exceptions.AuthenticationError)


def counting_broker(settings: Settings) -> Broker:
    """A broker on BROKER_URL with no middleware, only to count messages (the /metrics fork has no broker of
    its own: Dramatiq forks it from the main process, which never imports the actors)."""
    url = settings.broker_url_resolved
    scheme = urlsplit(url).scheme
    if scheme in ("amqp", "amqps"):
        return AppRabbitmqBroker(url=url, middleware=[])
    if scheme == "stub":
        return StubBroker(middleware=[])
    ensure_redis_server(settings)
    return RedisBroker(client=connect(url), namespace=keys.BROKER_NAMESPACE, middleware=[])


def queue_counts(broker: Broker, queue: str) -> dict[str, int]:
    """Ready, delayed and dead-lettered messages of a queue (and, on Redis, those taken by a worker)."""
    if isinstance(broker, RedisBroker):
        client = broker.client
        # each consumer keeps the messages it took, until it acks them, in a set of its own
        taken_sets = client.scan_iter(compat.acks_pattern(broker, queue), count=1000)
        running = sum(int(client.scard(key)) for key in taken_sets)
        return {"ready": int(client.llen(compat.queue_key(broker, queue))),
                "delayed": int(client.hlen(compat.delayed_payloads_key(broker, queue))),
                "dead": int(client.zcard(compat.dead_key(broker, queue))), "running": running}
    if isinstance(broker, StubBroker):
        return {"ready": _stub_depth(broker, queue), "delayed": _stub_depth(broker, compat.delay_queue_name(queue)),
                "dead": len(broker.dead_letters_by_queue.get(queue, []))}
    if isinstance(broker, RabbitmqBroker):
        ready, delayed, dead = rabbitmq_counts(broker, queue)
        return {"ready": ready, "delayed": delayed, "dead": dead}
    raise TypeError(f"cannot count the queues of {type(broker).__name__}")


def queue_depth(broker: Broker, queue_name: str) -> int:
    """Messages waiting in a queue (not counting delayed or in-flight ones)."""
    if isinstance(broker, RedisBroker):
        return int(broker.client.llen(compat.queue_key(broker, queue_name)))
    if isinstance(broker, RabbitmqBroker):
        return rabbitmq_counts(broker, queue_name)[0]
    if isinstance(broker, StubBroker):
        return _stub_depth(broker, queue_name)
    raise TypeError(f"cannot measure queues of {type(broker).__name__}")


def rabbitmq_counts(broker: RabbitmqBroker, queue: str) -> tuple[int, int, int]:
    """Ready, delayed and dead-lettered messages of a RabbitMQ queue, counted again once on a new connection when
    the calling thread's connection turns out lost (see the module's docstring)."""
    try:
        return _counts(broker, queue)
    except LOST_CONNECTION as e:
        if isinstance(e, NOT_LOST):
            raise
        logger.warning("the broker connection was lost (%s: %s); counting %s again on a new one",
                       type(e).__name__, e, queue)
        del broker.connection  # Dramatiq's: drops the thread's channel and connection, the next request opens new ones
    try:
        return _counts(broker, queue)
    except LOST_CONNECTION as e:
        if isinstance(e, NOT_LOST):
            raise
        del broker.connection  # so that the next count starts on a new one
        if isinstance(e, BrokerConnectionError):
            raise
        raise ConnectionClosed(e) from e


def _counts(broker: RabbitmqBroker, queue: str) -> tuple[int, int, int]:
    ready, delayed, dead = broker.get_queue_message_counts(queue)
    return int(ready), int(delayed), int(dead)


def _stub_depth(broker: StubBroker, queue_name: str) -> int:
    queue = broker.queues.get(queue_name)
    return queue.qsize() if queue is not None else 0
