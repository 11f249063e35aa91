"""Dramatiq's AsyncIO middleware, with one event loop per worker rather than one per process."""

from __future__ import annotations

from dramatiq import Broker, Worker
from dramatiq.asyncio import EventLoopThread, get_event_loop_thread, set_event_loop_thread
from dramatiq.middleware.asyncio import AsyncIO as _AsyncIO


class AsyncIO(_AsyncIO):
    """Stock AsyncIO keeps a single process-wide loop: a second ``Worker`` in the same process (tests,
    embedded workers) replaced the first one's loop, which then never stopped and kept the process
    from exiting. Here each worker stops the loop it started."""

    def __init__(self) -> None:
        super().__init__()
        self._loops: dict[int, EventLoopThread] = {}

    def before_worker_boot(self, broker: Broker, worker: Worker) -> None:
        loop = EventLoopThread(self.logger)
        loop.start(timeout=1.0)
        self._loops[id(worker)] = loop
        set_event_loop_thread(loop)

    def after_worker_shutdown(self, broker: Broker, worker: Worker) -> None:
        loop = self._loops.pop(id(worker), None)
        if loop is None:
            return
        loop.stop()
        loop.join()
        if get_event_loop_thread() is loop:
            set_event_loop_thread(next(iter(self._loops.values()), None))
