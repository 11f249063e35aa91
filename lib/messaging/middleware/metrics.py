"""Dramatiq's Prometheus middleware, recording our metrics besides its own, in the processes that boot it.

It serves nothing itself: the process runner starts the /metrics server (``lib.operations.metrics``) as a fork
of the Dramatiq command (``--fork-function``), which serves Dramatiq's metrics and ours together.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dramatiq import Broker, Message, MessageProxy, Worker
from dramatiq.middleware.prometheus import Prometheus

from lib.core.recorders import start_recording


class Metrics(Prometheus):
    """Dramatiq's Prometheus middleware, without its own exposition server, creating our recorders too.

    Its metrics are created when the process boots (``after_process_boot``, sent by the ``dramatiq`` command
    in each worker process). A process that never boots the broker (a script or a benchmark running a
    ``Worker`` of its own, a command that only enqueues) records nothing, instead of failing in every hook.
    """

    booted = False

    @property
    def forks(self) -> list[Callable[[], int]]:
        return []

    def after_process_boot(self, broker: Broker) -> None:
        Prometheus.after_process_boot(self, broker)
        self.booted = True
        start_recording()

    def after_worker_shutdown(self, broker: Broker, worker: Worker) -> None:
        if self.booted:
            Prometheus.after_worker_shutdown(self, broker, worker)

    def after_nack(self, broker: Broker, message: MessageProxy) -> None:
        if self.booted:
            Prometheus.after_nack(self, broker, message)

    def after_enqueue(self, broker: Broker, message: Message[Any], delay: int | None) -> None:
        if self.booted:
            Prometheus.after_enqueue(self, broker, message, delay)

    def before_delay_message(self, broker: Broker, message: MessageProxy) -> None:
        if self.booted:
            Prometheus.before_delay_message(self, broker, message)

    def before_process_message(self, broker: Broker, message: MessageProxy) -> None:
        if self.booted:
            Prometheus.before_process_message(self, broker, message)

    def after_process_message(self, broker: Broker, message: MessageProxy, *, result: Any = None,
                              exception: BaseException | None = None) -> None:
        if self.booted:
            Prometheus.after_process_message(self, broker, message, result=result, exception=exception)

    after_skip_message = after_process_message
