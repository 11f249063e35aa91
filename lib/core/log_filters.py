"""Logging filters that keep expected events out of ERROR: a grep for ERROR must find real errors only."""

from __future__ import annotations

import logging

from dramatiq.errors import ActorNotFound

from lib.core.errors import BadMessage

#: Bad input: a message that can never run (wrong arguments, bad data, an actor this app does not have).
BAD_INPUT = (BadMessage, ActorNotFound)


class BadMessageTraceback(logging.Filter):
    """Drops Dramatiq's "Failed to process message … with unhandled exception" traceback when the exception is
    bad input (``BAD_INPUT``): it is dead-lettered at once and the event line (``outcome=failed error="…"``)
    already says why, in one line. Dramatiq's ``throws`` option cannot do it for a ``BadMessage`` raised by a
    middleware (the argument check), which Dramatiq reports before it looks the actor up."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and isinstance(record.exc_info[1], BAD_INPUT))


def install() -> None:
    """Attach the filters to the loggers that emit those records (idempotent)."""
    worker = logging.getLogger("dramatiq.worker.WorkerThread")
    if not any(isinstance(f, BadMessageTraceback) for f in worker.filters):
        worker.addFilter(BadMessageTraceback())
