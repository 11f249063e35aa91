"""Logging filters that keep expected events out of ERROR: a grep for ERROR must find real errors only."""

from __future__ import annotations

import logging

from dramatiq.errors import ActorNotFound

from lib.core.errors import BadMessage
from lib.core.state_errors import is_transient

#: Bad input: a message that can never run (wrong arguments, bad data, an actor this app does not have).
BAD_INPUT = (BadMessage, ActorNotFound)


class BadMessageTraceback(logging.Filter):
    """Drops Dramatiq's "Failed to process message … with unhandled exception" traceback when the exception is
    bad input (``BAD_INPUT``): it is dead-lettered at once and the event line (``outcome=failed error="…"``)
    already says why, in one line. Dramatiq's ``throws`` option cannot do it for a ``BadMessage`` raised by a
    middleware (the argument check), which Dramatiq reports before it looks the actor up.

    Also when the exception is a transient state error (``lib.core.state_errors``): the Retries middleware, which
    runs after this line is written, decides what it is (riding out an outage: the event line at INFO; a periodic
    tick left to the next one: one WARNING; an outage longer than STATE_OUTAGE_TOLERANCE: an ERROR line) and
    says so itself."""

    def filter(self, record: logging.LogRecord) -> bool:
        exception = record.exc_info[1] if record.exc_info else None
        return not (exception is not None and (isinstance(exception, BAD_INPUT) or is_transient(exception)))


class SkippedMessage(logging.Filter):
    """Drops Dramatiq's "Message … was skipped." WARNING: a skip is the idempotency or lock middleware doing its
    job (a periodic tick sent by two schedulers, a redelivered message already applied), and the event line
    (``outcome=skipped``) records it at INFO."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).endswith("was skipped.")


class WorkerKilled(logging.Filter):
    """Dramatiq's main process reports a worker process that died (SIGKILLed by the OOM killer or a person) at
    CRITICAL, then stops so that the process runner restarts it with fresh workers, and the broker delivers the
    dead worker's messages again: a recovery the system is built for, so a WARNING, one line."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno > logging.WARNING and "exited unexpectedly" in str(record.msg):
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True


def install_in_dramatiq_main() -> None:
    """In the ``dramatiq`` command's main process (``lib.operations.leash``), before Dramatiq sets it up."""
    main = logging.getLogger("dramatiq.MainProcess")
    if not any(isinstance(f, WorkerKilled) for f in main.filters):
        main.addFilter(WorkerKilled())


def install() -> None:
    """Attach the filters to the loggers that emit those records (idempotent)."""
    worker = logging.getLogger("dramatiq.worker.WorkerThread")
    for kind in (BadMessageTraceback, SkippedMessage):
        if not any(isinstance(f, kind) for f in worker.filters):
            worker.addFilter(kind())
