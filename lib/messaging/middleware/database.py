"""One database connection per worker thread, closed when the thread stops."""

from __future__ import annotations

from dramatiq import Broker, Middleware
from dramatiq.worker import ConsumerThread, WorkerThread

from lib.core.db import database


class DatabaseConnections(Middleware):
    """Peewee opens a connection per thread on first use; this closes it at thread shutdown."""

    def before_worker_thread_shutdown(self, broker: Broker, thread: WorkerThread) -> None:
        self._close()

    def _close(self) -> None:
        if database.obj is not None and not database.is_closed():
            database.close()

    def before_consumer_thread_shutdown(self, broker: Broker, thread: ConsumerThread) -> None:
        self._close()
