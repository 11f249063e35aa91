"""What a command says, in one line, when a service it needs is not there.

An unreachable database, broker or Redis, or a database whose tables were never created, is the operator's
to fix, not a bug: the command prints one line naming what it could not reach (credentials redacted) or
what to run, instead of the hundred lines of traceback that end in the driver's exception.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from urllib.parse import urlsplit

import peewee
import redis.exceptions
from dramatiq.errors import BrokerConnectionError

from lib.core.redaction import redact_text, redact_url
from lib.core.settings import Settings

#: Exit status of a command that could not reach a service (as Dramatiq's for a broker it cannot reach).
EXIT_UNAVAILABLE = 3

#: "no such table: ip_metadata" (SQLite), "Table 'animetop.ip_metadata' doesn't exist" (MySQL/MariaDB).
_MISSING_TABLE = re.compile(r"no such table: (\w+)|Table '(?:[^'.]+\.)?(\w+)' doesn't exist")


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _reason(exc: BaseException) -> str:
    args = exc.args
    # pymysql's errors are (code, message); pika's and redis-py's carry the reason as their text
    text = str(args[1]) if len(args) == 2 and isinstance(args[0], int) else str(exc) or type(exc).__name__
    return redact_text(text.strip().rstrip("."))


def _innermost(exc: BaseException) -> BaseException:
    """pika nests the socket's error in the arguments of its own (AMQPConnectionError(AMQPConnector…Error(
    ConnectionRefusedError(111, …)))): the innermost one says what happened."""
    nested = [*exc.args, getattr(exc, "exception", None), *getattr(exc, "exceptions", ())]
    for inner in nested:
        if isinstance(inner, BaseException):
            return _innermost(inner)
    return exc


def _is_amqp_connection_error(exc: BaseException) -> bool:
    try:
        from pika.exceptions import AMQPConnectionError
    except ImportError:
        return False
    return isinstance(exc, AMQPConnectionError)


def _redis_url_named(exc: BaseException, settings: Settings) -> str:
    """The Redis URL the error is about: the broker's when its address is the one quoted, else the state one."""
    broker = settings.broker_url_resolved
    if urlsplit(broker).scheme.startswith(("redis", "rediss", "unix")) and broker != settings.state_redis_url:
        where = urlsplit(broker)
        address = where.path if where.scheme == "unix" else f"{where.hostname}:{where.port or 6379}"
        state = urlsplit(settings.state_redis_url)
        state_address = state.path if state.scheme == "unix" else f"{state.hostname}:{state.port or 6379}"
        if address != state_address and address in str(exc):
            return broker
    return settings.state_redis_url


def explain(exc: BaseException, settings: Settings | None) -> str | None:
    """One line for an error an operator fixes outside the code, or None for anything else."""
    for error in _chain(exc):
        if isinstance(error, peewee.DatabaseError | peewee.InterfaceError):
            missing = _MISSING_TABLE.search(str(error))
            database = redact_url(settings.database_url_resolved) if settings else "the database"
            if missing:
                return (f"the database {database} has no table {missing.group(1) or missing.group(2)}: "
                        f"run `animetop db init`")
            if isinstance(error, peewee.OperationalError | peewee.InterfaceError):
                return f"cannot reach the database {database}: {_reason(error)}"
            return None
        if isinstance(error, BrokerConnectionError) or _is_amqp_connection_error(error):
            broker = redact_url(settings.broker_url_resolved) if settings else "the broker"
            cause = _innermost(next((e for e in _chain(error) if _is_amqp_connection_error(e)), error))
            reason = cause.strerror if isinstance(cause, OSError) and cause.strerror else _reason(cause)
            return f"cannot reach the broker {broker}: {reason}"
        if isinstance(error, redis.exceptions.ConnectionError | redis.exceptions.TimeoutError):
            if settings is None:
                return f"cannot reach Redis: {_reason(error)}"
            url = _redis_url_named(error, settings)
            what = "the broker" if url == settings.broker_url_resolved else "Redis"
            return f"cannot reach {what} {redact_url(url)}: {_reason(error)}"
    return None
