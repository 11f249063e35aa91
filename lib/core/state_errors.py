"""Which errors of the application-state Redis are transient: the one classification the state client, the
middleware (idempotency, locks, Retries) and the log filters use.

A transient error is one that a short outage of the state causes and that the same command, sent again a little
later, gets past: a server restarting (connection refused or reset, a time-out, ``LOADING`` while it reads its
append-only file) or a Redis Cluster failing over or resharding (``CLUSTERDOWN``, ``TRYAGAIN``, a slot no node
serves, ``MOVED``/``ASK`` redirections the client could not follow to the end, a write to a master that was just
demoted). Errors that no retry cures are not transient: a wrong password or missing permission (redis-py's
``AuthenticationError``/``AuthorizationError`` are kinds of ``ConnectionError``), a script whose keys span slots,
a wrong type. An exception raised *from* a transient one (``raise StateUnavailable(...) from e``) is transient too.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from redis import exceptions as rx

T = TypeVar("T")

#: Errors a state outage shorter than STATE_OUTAGE_TOLERANCE causes (see the module's docstring).
TRANSIENT: tuple[type[BaseException], ...] = (
    rx.ConnectionError,  # refused, reset, LOADING (BusyLoadingError), the pool momentarily exhausted
    rx.TimeoutError,
    rx.ClusterDownError,  # CLUSTERDOWN, MASTERDOWN
    rx.TryAgainError,  # TRYAGAIN: a multi-key command on a slot being migrated
    rx.AskError,  # ASK and MOVED (a subclass), left over when the client's redirections ran out
    rx.SlotNotCoveredError,  # no master serves the slot yet (not a RedisError in redis-py)
    rx.ReadOnlyError,  # a write reached a master that was just demoted to a replica
)
#: Kinds of the errors above that no retry cures.
NEVER_TRANSIENT: tuple[type[BaseException], ...] = (rx.AuthenticationError, rx.AuthorizationError)

#: Errors the state client may raise at all, transient or not (SlotNotCoveredError is no RedisError).
STATE_ERRORS: tuple[type[BaseException], ...] = (rx.RedisError, rx.RedisClusterException)

#: In-place patience: how long a call waits for the state at most (``ride_out``), backing off from 50 ms to 1 s;
#: about what the standalone client's own retries wait (``lib.core.redis_client``).
CLIENT_PATIENCE = 2.5
_FIRST_DELAY, _MAX_DELAY = 0.05, 1.0


def is_transient(exception: BaseException | None) -> bool:
    """Whether ``exception``, or one it was raised from, is a transient state error."""
    seen = 0
    while exception is not None and seen < 10:  # a chain of causes is short; the bound guards against a cycle
        if isinstance(exception, TRANSIENT) and not isinstance(exception, NEVER_TRANSIENT):
            return True
        exception = exception.__cause__
        seen += 1
    return False


def ride_out(operation: Callable[[], T], *, patience: float = CLIENT_PATIENCE) -> T:
    """``operation()``, called again with exponential backoff while it fails with a transient state error, for
    ``patience`` seconds at most; then (or at once, for any other error) its last error is raised."""
    deadline = time.monotonic() + patience
    delay = _FIRST_DELAY
    while True:
        try:
            return operation()
        except Exception as e:
            if not is_transient(e) or time.monotonic() + delay > deadline:
                raise
        time.sleep(delay)  # backoff between attempts of a bounded loop
        delay = min(delay * 2, _MAX_DELAY)
