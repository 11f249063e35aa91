"""The RabbitMQ broker's publishing connections (``lib.messaging.rabbitmq``) on a real RabbitMQ: one left idle
for longer than the heartbeat timeout is still open, where Dramatiq's own is closed by RabbitMQ."""

from __future__ import annotations

import logging
import time
import uuid

import pika.exceptions
import pytest
from dramatiq.brokers.rabbitmq import RabbitmqBroker

from lib.messaging import compat
from lib.messaging.queue_stats import queue_counts
from lib.messaging.rabbitmq import AppRabbitmqBroker, publisher_parameters

from ..conftest import RABBITMQ_URL, need_rabbitmq

pytestmark = pytest.mark.rabbitmq

#: The heartbeat timeout the URL asks for: RabbitMQ closes a connection silent for two to three of them.
HEARTBEAT = 1


def test_publisher_parameters_turn_the_heartbeat_off_and_tcp_keepalive_on():
    url = pika.URLParameters("amqp://guest:guest@127.0.0.1:5672/v?heartbeat=10&tcp_options={'TCP_KEEPIDLE':5}")
    publisher = publisher_parameters(url)
    assert (publisher.heartbeat, url.heartbeat) == (0, 10)
    assert publisher.tcp_options == {"TCP_KEEPIDLE": 5, "TCP_KEEPINTVL": 10, "TCP_KEEPCNT": 3,
                                     "TCP_USER_TIMEOUT": 60_000}
    assert (publisher.host, publisher.virtual_host, publisher.credentials) == (url.host, "v", url.credentials)


def test_a_publishing_connection_idle_past_the_heartbeat_timeout_stays_open(caplog):
    need_rabbitmq()
    url = f"{RABBITMQ_URL}?heartbeat={HEARTBEAT}"
    queue = f"idle_{uuid.uuid4().hex[:8]}"
    ours, dramatiqs = AppRabbitmqBroker(url=url, middleware=[]), RabbitmqBroker(url=url, middleware=[])
    try:
        for broker in (ours, dramatiqs):
            assert broker.get_queue_message_counts(queue) == (0, 0, 0)
        connection = ours.connection
        # the thread makes no call into pika for 4 heartbeat timeouts: the situation under test, not a wait
        time.sleep(4 * HEARTBEAT)
        with pytest.raises(pika.exceptions.StreamLostError):  # Dramatiq's own: RabbitMQ closed it, heartbeats missed
            dramatiqs.get_queue_message_counts(queue)
        caplog.set_level(logging.WARNING)
        assert queue_counts(ours, queue) == {"ready": 0, "delayed": 0, "dead": 0}
        assert compat.thread_connection(ours) is connection and connection.is_open
        assert caplog.records == []  # counted on the same connection, no loss met
    finally:
        for name in (queue, compat.delay_queue_name(queue), compat.dead_queue_name(queue)):
            ours.channel.queue_delete(name)
        ours.close()
        dramatiqs.close()
