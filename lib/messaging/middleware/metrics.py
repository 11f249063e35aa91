"""Dramatiq's Prometheus middleware, recording our metrics besides its own, in the processes that boot it.

It serves nothing itself: the process runner starts the /metrics server (``lib.operations.metrics``) as a fork
of the Dramatiq command (``--fork-function``), which serves Dramatiq's metrics and ours together.
"""

from __future__ import annotations

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
    def forks(self):
        return []

    def after_process_boot(self, broker):
        super().after_process_boot(broker)
        self.booted = True
        start_recording()

    def after_worker_shutdown(self, broker, worker):
        if self.booted:
            super().after_worker_shutdown(broker, worker)

    def after_nack(self, broker, message):
        if self.booted:
            super().after_nack(broker, message)

    def after_enqueue(self, broker, message, delay):
        if self.booted:
            super().after_enqueue(broker, message, delay)

    def before_delay_message(self, broker, message):
        if self.booted:
            super().before_delay_message(broker, message)

    def before_process_message(self, broker, message):
        if self.booted:
            super().before_process_message(broker, message)

    def after_process_message(self, broker, message, *, result=None, exception=None):
        if self.booted:
            super().after_process_message(broker, message, result=result, exception=exception)

    after_skip_message = after_process_message
