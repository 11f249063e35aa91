"""The database: a Peewee proxy bound from DATABASE_URL (SQLite or MySQL/MariaDB)."""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar
from urllib.parse import parse_qs, unquote, urlsplit

import peewee
from playhouse.shortcuts import ReconnectMixin

logger = logging.getLogger(__name__)

T = TypeVar("T")

#: MySQL/MariaDB's "Deadlock found when trying to get lock; try restarting transaction": InnoDB rolled the whole
#: transaction back, and running it again is the documented answer.
MYSQL_DEADLOCK = 1213

#: Models bind to this; ``bind_database`` points it at the configured database.
database = peewee.DatabaseProxy()


#: PyMySQL's bounds on a MySQL/MariaDB connection, in seconds, each overridable in DATABASE_URL's query
#: (``?read_timeout=900``): connecting; waiting for an answer (the longest query must fit: a pruning pass or a
#: window's rows at many IPs); sending. Without the last two a server that stops answering without resetting
#: the connection (a frozen host, a network partition) held the thread for good.
MYSQL_TIMEOUTS = {"connect_timeout": 10.0, "read_timeout": 300.0, "write_timeout": 60.0}


class ReconnectingMySQLDatabase(ReconnectMixin, peewee.MySQLDatabase):
    """Reconnects once when MySQL dropped the connection (restart, wait_timeout)."""


def open_database(url: str) -> peewee.Database:
    """A database object for ``sqlite:///path`` or ``mysql://user:pass@host:port/db``."""
    parts = urlsplit(url)
    if parts.scheme == "sqlite":
        path = unquote(parts.path)
        if path.startswith("//"):  # sqlite:////abs/path
            path = path[1:]
        elif path.startswith("/") and parts.netloc == "":
            path = path  # sqlite:///abs/path
        if path not in (":memory:", "/:memory:"):
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        return peewee.SqliteDatabase(
            path,
            pragmas={
                "journal_mode": "wal",  # readers do not block the writer
                "synchronous": "normal",
                "busy_timeout": 15000,
                "foreign_keys": 1,
            },
            timeout=15,
        )
    if parts.scheme == "mysql":
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        return ReconnectingMySQLDatabase(
            unquote(parts.path.lstrip("/")),
            host=parts.hostname or "127.0.0.1",
            port=parts.port or 3306,
            user=unquote(parts.username or "root"),
            password=unquote(parts.password or ""),
            charset=query.get("charset", "utf8mb4"),
            **{name: _seconds(query, name, default)  # type: ignore[arg-type]
               for name, default in MYSQL_TIMEOUTS.items()},
        )
    raise ValueError(f"unsupported database URL scheme {parts.scheme!r}")


def _seconds(query: dict[str, str], name: str, default: float) -> float:
    try:
        value = float(query.get(name, default))
    except ValueError:
        value = -1
    if value <= 0:
        raise ValueError(f"DATABASE_URL: {name}={query[name]!r} is not a positive number of seconds")
    return value


def bind_database(url: str) -> peewee.Database:
    """Point the proxy at ``url`` (closing any previous binding) and return the database."""
    if database.obj is not None and not database.is_closed():
        database.close()
    db = open_database(url)
    database.initialize(db)
    return db


def is_mysql() -> bool:
    """Whether the bound database is MySQL/MariaDB (upserts are spelled differently there)."""
    return isinstance(database.obj, peewee.MySQLDatabase)


def on_conflict_update(query, conflict_target: list, *, preserve: list | None = None, update: dict | None = None):
    """An insert that updates the existing row instead: ON CONFLICT (…) DO UPDATE on SQLite,
    ON DUPLICATE KEY UPDATE on MySQL (which takes no conflict target)."""
    if is_mysql():
        return query.on_conflict(preserve=preserve, update=update)
    return query.on_conflict(conflict_target=conflict_target, preserve=preserve, update=update)


def write_transaction():
    """A transaction that will write. On SQLite it takes the write lock up front (BEGIN IMMEDIATE): a
    deferred transaction that reads first and then writes gets "database is locked" at once, without
    waiting, when another writer got there in between."""
    if isinstance(database.obj, peewee.SqliteDatabase):
        return database.atomic("IMMEDIATE")
    return database.atomic()


def retrying_deadlocks(work: Callable[[], T], attempts: int = 5) -> T:
    """``work()`` (a whole transaction, or a statement on its own), run again after a short random pause when
    MySQL/MariaDB chose it as a deadlock's victim (it was rolled back whole, so nothing is half-applied); the
    last attempt's error is raised. Two writers that lock the same rows in different orders (a range claimed
    through an index, ids updated through the primary key) can meet so under load."""
    for attempt in range(1, attempts + 1):
        try:
            return work()
        except peewee.OperationalError as e:
            if not e.args or e.args[0] != MYSQL_DEADLOCK or attempt == attempts:
                raise
            logger.info("deadlock (attempt %d of %d): running the transaction again", attempt, attempts)
            time.sleep(random.uniform(0.01, 0.05) * attempt)
    raise AssertionError("unreachable")
