"""Queue counts on RabbitMQ (``lib.messaging.queue_stats``) when the connection they use was lost: RabbitMQ behind a
proxy the test cuts (``tests.helpers.TcpProxy``), so the connection meets a real reset."""

from __future__ import annotations

import logging
import uuid
from urllib.parse import urlsplit, urlunsplit

import dramatiq
import pika.exceptions
import pytest
from dramatiq.errors import ConnectionClosed

from lib.messaging import compat
from lib.messaging.queue_stats import queue_counts, queue_depth
from lib.messaging.rabbitmq import AppRabbitmqBroker

from ..conftest import RABBITMQ_URL, need_rabbitmq
from ..helpers import TcpProxy

pytestmark = pytest.mark.rabbitmq


@pytest.fixture
def proxied():
    """A broker on RabbitMQ through a proxy, a queue of its own holding one message, and the proxy."""
    need_rabbitmq()
    parts = urlsplit(RABBITMQ_URL)
    proxy = TcpProxy(parts.hostname or "127.0.0.1", parts.port or 5672)
    netloc = f"{parts.username}:{parts.password}@127.0.0.1:{proxy.port}"
    broker = AppRabbitmqBroker(url=urlunsplit(parts._replace(netloc=netloc)), middleware=[], confirm_delivery=True)
    queue = f"counted_{uuid.uuid4().hex[:8]}"
    broker.declare_queue(queue)
    broker.enqueue(dramatiq.Message(queue_name=queue, actor_name="counted", args=(), kwargs={}, options={}))
    yield broker, queue, proxy
    proxy.restore()
    del broker.connection
    for name in (queue, compat.delay_queue_name(queue), compat.dead_queue_name(queue)):
        broker.channel.queue_delete(name)
    broker.close()
    proxy.close()


def records(caplog, level: int) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= level]


def test_a_count_on_a_lost_connection_counts_again_on_a_new_one_with_one_warning(proxied, caplog):
    broker, queue, proxy = proxied
    assert queue_depth(broker, queue) == 1
    lost = broker.connection
    proxy.cut()  # RabbitMQ gone from under the connection, as when it closed it
    proxy.restore()
    caplog.set_level(logging.WARNING)
    assert queue_depth(broker, queue) == 1
    [warning] = records(caplog, logging.WARNING)
    assert "the broker connection was lost" in warning and queue in warning, warning
    assert broker.connection is not lost and broker.connection.is_open
    caplog.clear()
    assert queue_counts(broker, queue) == {"ready": 1, "delayed": 0, "dead": 0}
    assert records(caplog, logging.WARNING) == []  # on the new connection


def test_a_count_that_cannot_reconnect_raises_dramatiqs_connection_closed(proxied, caplog):
    broker, queue, proxy = proxied
    assert queue_depth(broker, queue) == 1
    proxy.cut()  # and it stays down: the new connection is refused too
    caplog.set_level(logging.WARNING)
    with pytest.raises(ConnectionClosed) as raised:
        queue_depth(broker, queue)
    assert isinstance(raised.value.__cause__, pika.exceptions.AMQPConnectionError)
    assert len(records(caplog, logging.WARNING)) == 1 and records(caplog, logging.ERROR) == []


def test_refused_credentials_are_not_taken_for_a_lost_connection(caplog):
    need_rabbitmq()
    parts = urlsplit(RABBITMQ_URL)
    broker = AppRabbitmqBroker(url=urlunsplit(parts._replace(path="/animetop-no-such-vhost")), middleware=[])
    caplog.set_level(logging.WARNING)
    with pytest.raises(pika.exceptions.ProbableAccessDeniedError):
        queue_depth(broker, "anything")
    assert records(caplog, logging.WARNING) == []
    broker.close()
