"""Dramatiq's RabbitMQ broker, with publishing connections that cannot miss their heartbeats.

Dramatiq's ``RabbitmqBroker`` publishes (``enqueue``, queue declarations, queue counts) on a pika
``BlockingConnection`` per thread, kept open for the thread's next use. pika services a ``BlockingConnection``'s
heartbeats only while its own thread calls into pika (a publish, ``process_data_events``, ``sleep``): a consumer
thread, which opens one to declare its queue and then only uses it for a delayed message come due, a worker thread
that idles between messages or waits on the state store through a Redis failover, a scheduler that publishes once a
minute, a dashboard thread, leave theirs silent. RabbitMQ then closes it ("missed heartbeats from client", an error in
its log), and the thread's next use meets ``StreamLostError``. Consumers are another matter: each consumer thread
reads its own connection every ``worker_timeout`` (a second), so those keep their heartbeats.

So the per-thread publishing connections negotiate no heartbeat (pika's ``heartbeat=0``) and leave the detection of a
vanished server to TCP (pika's ``tcp_options``): keepalive probes find a dead peer of an idle connection within about a
minute, and ``TCP_USER_TIMEOUT`` fails a publish whose data the server stops acknowledging within a minute, about what
RabbitMQ's default 60 s heartbeat gave. Either error reaches Dramatiq's ``enqueue``, which opens a new connection and
publishes again. The consumers' connections keep the heartbeat the URL asks for (``?heartbeat=N``), or the server's.
"""

from __future__ import annotations

import copy
from typing import Any

import pika
from dramatiq.brokers.rabbitmq import RabbitmqBroker

from lib.messaging import compat

#: TCP options of a publishing connection: idle for 30 s, it is probed every 10 s, and given up after 3 probes
#: unanswered; data sent and not acknowledged for 60 s fails it.
PUBLISHER_TCP_OPTIONS = {"TCP_KEEPIDLE": 30, "TCP_KEEPINTVL": 10, "TCP_KEEPCNT": 3, "TCP_USER_TIMEOUT": 60_000}


def publisher_parameters(parameters: pika.ConnectionParameters) -> pika.ConnectionParameters:
    """``parameters`` for a publishing connection: no heartbeat, TCP keepalive (options the URL sets win)."""
    publisher = copy.deepcopy(parameters)
    publisher.heartbeat = 0
    publisher.tcp_options = {**PUBLISHER_TCP_OPTIONS, **(parameters.tcp_options or {})}
    return publisher


class AppRabbitmqBroker(RabbitmqBroker):
    """``RabbitmqBroker`` whose per-thread publishing connections negotiate no heartbeat (see the module's
    docstring); its consumers' connections are Dramatiq's, with the heartbeat of the URL or the server.

    Parameters:
      **kwargs: ``RabbitmqBroker``'s (``url``, ``middleware``, ``confirm_delivery``, …).
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if isinstance(self.parameters, list):
            self.publisher_parameters: pika.ConnectionParameters | list[pika.ConnectionParameters] = [
                publisher_parameters(p) for p in self.parameters]
        else:
            self.publisher_parameters = publisher_parameters(self.parameters)

    @property
    def connection(self) -> pika.BlockingConnection:
        """The calling thread's publishing connection (Dramatiq's ``connection``, opened with
        ``publisher_parameters``)."""
        connection = compat.thread_connection(self)
        if connection is None:
            connection = pika.BlockingConnection(parameters=self.publisher_parameters)
            compat.set_thread_connection(self, connection)
        return connection

    @connection.deleter
    def connection(self) -> None:
        RabbitmqBroker.connection.fdel(self)  # type: ignore[attr-defined]  # Dramatiq's: closes channel and connection
