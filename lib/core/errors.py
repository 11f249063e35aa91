"""Exceptions that steer how the middleware treats a failed message."""

from dramatiq import MessageProxy
from dramatiq.errors import Retry
from dramatiq.middleware import MiddlewareError


class BadMessage(MiddlewareError):
    """The message can never succeed (malformed, wrong arguments): dead-letter it at once.

    A ``MiddlewareError`` so that raising it from ``before_process_message``
    reaches the Retries middleware instead of being swallowed by Dramatiq.
    """


class LockBusy(MiddlewareError, Retry):
    """Another worker holds the lock this message needs: run it again shortly.

    Being a ``Retry`` keeps the worker from logging it as a crash; the
    Retries middleware re-enqueues it without spending a retry.
    """

    def __init__(self, name: str) -> None:
        super().__init__(f"lock {name!r} is held by another worker")
        self.name = name


class StateUnavailable(MiddlewareError):
    """Redis could not be asked whether the message may run: retry it later rather than run it unguarded.

    Raised *from* the state client's error, so that ``lib.core.state_errors.is_transient`` tells an outage
    (retried with backoff, without spending the actor's retries) from an error no retry cures.
    """


def key_of(option: object, message: MessageProxy, what: str) -> str:
    """Evaluate a key option (a string, or a callable of the message's args/kwargs)."""
    if not callable(option):
        return str(option)
    try:
        return str(option(*message.args, **message.kwargs))
    except Exception as e:
        raise BadMessage(f"{what} could not be computed from the message: {type(e).__name__}: {e}") from None
