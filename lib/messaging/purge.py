"""Emptying the application's queues on RabbitMQ, for a run that must start on a fresh broker (a load
benchmark's scale, the production-profile tests). A Redis broker needs none of this: its queues live in a
Redis database that is flushed with the state."""

from __future__ import annotations

import pika
import pika.exceptions

from lib.messaging.compat import dead_queue_name, delay_queue_name
from lib.messaging.queues import ALL_QUEUES


def purge_rabbitmq_queues(parameters: pika.connection.Parameters) -> None:
    """Purge every application queue with its delay (``.DQ``) and dead-letter (``.XQ``) queue; a queue never
    declared is skipped."""
    connection = pika.BlockingConnection(parameters)
    try:
        for queue in ALL_QUEUES:
            for name in (queue, delay_queue_name(queue), dead_queue_name(queue)):
                channel = connection.channel()
                try:
                    channel.queue_purge(name)
                except pika.exceptions.ChannelClosedByBroker:
                    pass  # never declared (RabbitMQ closes the channel on an unknown queue)
                finally:
                    if channel.is_open:
                        channel.close()
    finally:
        connection.close()
