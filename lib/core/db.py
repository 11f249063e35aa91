"""The database: a Peewee proxy bound from DATABASE_URL (SQLite or MySQL/MariaDB)."""

from __future__ import annotations

import logging
import operator
import random
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar
from urllib.parse import parse_qs, unquote, urlsplit

import peewee
from playhouse.shortcuts import ReconnectMixin

from lib.core.turns import TurnLock

logger = logging.getLogger(__name__)

T = TypeVar("T")
InsertQuery = TypeVar("InsertQuery", bound=peewee.Insert)

#: MySQL/MariaDB's "Deadlock found when trying to get lock; try restarting transaction": InnoDB rolled the whole
#: transaction back, and running it again is the documented answer.
MYSQL_DEADLOCK = 1213

#: How long a SQLite writer waits for the write lock (its ``busy_timeout``, and the wait in ``write_transaction``'s
#: queue) before it fails with "database is locked".
SQLITE_BUSY_TIMEOUT = 15.0

#: Models bind to this; ``bind_database`` points it at the configured database.
database = peewee.DatabaseProxy()


#: PyMySQL's bounds on a MySQL/MariaDB connection, in seconds, each overridable in DATABASE_URL's query
#: (``?read_timeout=900``): connecting; waiting for an answer (the longest query must fit: a pruning pass or a
#: window's rows at many IPs); sending. Without the last two a server that stops answering without resetting
#: the connection (a frozen host, a network partition) held the thread for good.
MYSQL_TIMEOUTS = {"connect_timeout": 10.0, "read_timeout": 300.0, "write_timeout": 60.0}


class QueuedSqliteDatabase(peewee.SqliteDatabase):
    """SQLite whose writers in this process queue for its write lock (``write_transaction``).

    SQLite does not queue the connections waiting for its write lock: each polls, sleeping up to 100 ms between
    tries, and the lock goes to whoever tries first after it is freed, often the thread that just committed. With a
    worker's threads writing in turn, one of them can miss every release until its busy timeout and fail with
    "database is locked" while the lock was never held for long (four threads each holding it 50 ms at a time: one
    waited 6.5 s). Here a process's writers wait in line for a ``TurnLock`` and each takes SQLite's lock as the one
    before it commits; processes still meet on SQLite's own.

    Parameters:
        database: the file's path.
        busy_timeout: seconds a writer waits, in the queue and then for SQLite's lock, before "database is locked".
        pragmas: set on each connection (``busy_timeout`` is set from the argument).
    """

    def __init__(self, database: str, busy_timeout: float = SQLITE_BUSY_TIMEOUT,
                 pragmas: Mapping[str, Any] | None = None) -> None:
        super().__init__(database, pragmas={**(pragmas or {}), "busy_timeout": int(busy_timeout * 1000)},
                         timeout=busy_timeout)
        self.busy_timeout = busy_timeout
        #: Held by a thread from before its ``BEGIN IMMEDIATE`` until its commit or rollback, and then handed to
        #: the writer that has waited longest; re-entrant, as a write transaction nested in another is a savepoint.
        self.writers = TurnLock()


class ReconnectingMySQLDatabase(ReconnectMixin, peewee.MySQLDatabase):  # type: ignore[misc]  # playhouse: no types
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
        return QueuedSqliteDatabase(
            path,
            pragmas={
                "journal_mode": "wal",  # readers do not block the writer
                "synchronous": "normal",
                "foreign_keys": 1,
            },
        )
    if parts.scheme == "mysql":
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        # PyMySQL's arguments, passed on through the untyped **kwargs of Peewee's signature
        timeouts: dict[str, Any] = {name: _seconds(query, name, default) for name, default in MYSQL_TIMEOUTS.items()}
        return ReconnectingMySQLDatabase(
            unquote(parts.path.lstrip("/")),
            host=parts.hostname or "127.0.0.1",
            port=parts.port or 3306,
            user=unquote(parts.username or "root"),
            password=unquote(parts.password or ""),
            charset=query.get("charset", "utf8mb4"),
            **timeouts,
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


def on_conflict_update(query: InsertQuery, conflict_target: Sequence[Any], *, preserve: Sequence[Any] | None = None,
                       update: Mapping[Any, Any] | None = None) -> InsertQuery:
    """An insert that updates the existing row instead: ON CONFLICT (…) DO UPDATE on SQLite,
    ON DUPLICATE KEY UPDATE on MySQL (which takes no conflict target)."""
    if is_mysql():
        return query.on_conflict(preserve=preserve, update=update)
    return query.on_conflict(conflict_target=conflict_target, preserve=preserve, update=update)


#: What an insert does with a row whose unique key is taken: fail, skip the row, or update the existing row's
#: ``preserve`` columns to the row's values.
Conflict = Literal["error", "ignore", "update"]


def insert_rows(model: type[peewee.Model], rows: Sequence[Mapping[str, Any]], *, conflict: Conflict = "error",
                target: Sequence[peewee.Field] = (), preserve: Sequence[peewee.Field] = ()) -> None:
    """Insert ``rows`` (maps of field name to plain value, like ``Model.insert_many``'s: a field a row leaves out
    takes its default, else NULL if it is nullable) as one prepared statement the DB-API cursor runs for every row
    (``executemany``), all of them or none. ``conflict="update"``: ON CONFLICT (``target``) DO UPDATE on SQLite,
    ON DUPLICATE KEY UPDATE on MySQL/MariaDB, setting the ``preserve`` columns to the inserted row's.

    The same rows as Peewee's ``insert_many(…).execute()``, without building them into SQL: Peewee makes a node
    per value and renders the whole statement on every call, the larger part of writing a crawl result's rows
    (docs/benchmarks.md, ``process_result``). Here the statement is rendered by Peewee once per model, columns and
    conflict clause (cached), and each value only goes through its field's ``db_value``. SQLite steps the
    prepared statement once per row; PyMySQL folds an INSERT's executemany into multi-row statements of up to
    about 1 MB itself."""
    if not rows:
        return
    names = tuple(rows[0])
    if conflict != "update" and (target or preserve):
        raise ValueError("insert_rows: target and preserve are for conflict='update'")
    if conflict == "update" and not preserve:
        raise ValueError("insert_rows: conflict='update' needs the columns to update (preserve)")
    db = database.obj
    sql, fields = _insert_statement(db.__class__, model, names, conflict, tuple(f.name for f in target),
                                    tuple(f.name for f in preserve))
    params = _rows_values(model, names, fields, rows)
    if db.in_transaction():
        _executemany(db, sql, params)
    else:  # one executemany may be several statements (PyMySQL): a transaction keeps them all or none
        with db.atomic():
            _executemany(db, sql, params)


#: What Peewee wraps each query in: the driver's errors raised as Peewee's (IntegrityError, OperationalError, …),
#: which callers catch (``retrying_deadlocks``). A module attribute its type stubs leave out.
_PEEWEE_ERRORS = vars(peewee)["__exception_wrapper__"]


def _executemany(db: peewee.Database, sql: str, params: list[tuple[Any, ...]]) -> None:
    with _PEEWEE_ERRORS:
        cursor = db.cursor()
        try:
            cursor.executemany(sql, params)
        finally:
            cursor.close()


@lru_cache(maxsize=256)
def _insert_statement(dialect: type[peewee.Database], model: type[peewee.Model], names: tuple[str, ...],
                      conflict: Conflict, target: tuple[str, ...],
                      preserve: tuple[str, ...]) -> tuple[str, tuple[tuple[peewee.Field, Any, bool], ...]]:
    """The single-row INSERT of ``insert_rows`` in the bound database's dialect (``dialect`` keys the cache) and
    its columns: (field, default, nullable) in the statement's order, the rows' fields then the defaulted ones.
    Keyed by names: a Peewee field's ``==`` builds an expression, never a bool."""
    meta = model._meta
    unknown = [name for name in names + target + preserve if name not in meta.fields]
    if unknown:
        raise ValueError(f"insert_rows: {model.__name__} has no field {unknown[0]!r}")
    defaulted = [f for f in meta.sorted_fields if f.name not in names and f in meta.defaults]
    fields = [meta.fields[name] for name in names] + defaulted
    query = model.insert_many([tuple(None for _ in fields)], fields=fields)
    if conflict == "ignore":
        query = query.on_conflict_ignore()
    elif conflict == "update":
        query = on_conflict_update(query, [meta.fields[n] for n in target],
                                   preserve=[meta.fields[n] for n in preserve])
    sql, params = query.sql()
    if len(params) != len(fields):  # every value a parameter, nothing else: the statement takes any row
        raise AssertionError(f"insert_rows: {len(params)} parameters for {len(fields)} columns in {sql!r}")
    return sql, tuple((f, meta.defaults.get(f), f.null) for f in fields)


def _rows_values(model: type[peewee.Model], names: tuple[str, ...],
                 fields: tuple[tuple[peewee.Field, Any, bool], ...],
                 rows: Sequence[Mapping[str, Any]]) -> list[tuple[Any, ...]]:
    """The rows' values in the statement's order, as ``_row_values`` makes them: each row's columns taken in one
    step and only the values that are not of their plain column's own type converted (a 1,000-row result's
    writes spent about 2 ms a thousand rows value by value). A row that leaves a column out, and statements with
    defaulted columns, go value by value."""
    if len(fields) != len(names):
        return [_row_values(model, fields, row) for row in rows]
    take = operator.itemgetter(*names)
    checks: list[tuple[int, type | None, Callable[[Any], Any]]] = [
        (i, _PLAIN.get(type(field)), field.db_value) for i, (field, _, _) in enumerate(fields)]
    out = []
    for row in rows:
        try:
            taken = take(row)
        except KeyError:
            out.append(_row_values(model, fields, row))
            continue
        values = list(taken) if len(names) > 1 else [taken]
        for i, plain, db_value in checks:
            if type(values[i]) is not plain:  # None too: its field's db_value says what NULL is
                values[i] = db_value(values[i])
        out.append(tuple(values))
    return out


def _row_values(model: type[peewee.Model], fields: tuple[tuple[peewee.Field, Any, bool], ...],
                row: Mapping[str, Any]) -> tuple[Any, ...]:
    values = []
    for field, default, nullable in fields:
        try:
            value = row[field.name]
        except KeyError:
            if default is not None:
                value = default() if callable(default) else default
            elif nullable:
                value = None
            else:
                raise ValueError(f"insert_rows: a row of {model.__name__} has no {field.name}") from None
        if value is None or type(value) is not _PLAIN.get(type(field)):
            value = field.db_value(value)
        values.append(value)
    return tuple(values)


#: Field classes that pass a value of their own type through unchanged, both ways (their ``adapt`` is int, float
#: or str): ``insert_rows`` skips ``db_value`` for such a value, and ``select_tuples`` ``python_value`` for such a
#: column (the drivers return these columns as that type). Exact classes: a subclass may convert (a listing id's
#: bytes, a coded column, FixedCharField's strip).
_PLAIN: dict[type[peewee.Field], type] = {
    peewee.AutoField: int, peewee.BigAutoField: int, peewee.IntegerField: int, peewee.BigIntegerField: int,
    peewee.SmallIntegerField: int, peewee.FloatField: float, peewee.DoubleField: float, peewee.CharField: str,
    peewee.TextField: str,
}


def select_tuples(query: Any) -> list[tuple[Any, ...]]:
    """A select's rows as tuples, like ``list(query.tuples())``, read straight off the DB-API cursor: only the
    columns whose field converts what is stored (a listing id's bytes, a date on SQLite, a decimal) go through its
    ``python_value``. Peewee's row layer calls a converter per value and builds each row in Python, most of the
    cost of reading a few thousand rows (docs/benchmarks.md, ``process_result``). A query selecting anything but
    plain columns and uncoerced functions (``fn.X(…).coerce(False)``, which Peewee does not convert either) is read
    through Peewee."""
    selected = getattr(query, "_returning", None)
    if not selected or not all(isinstance(node, peewee.Field) or _uncoerced(node) for node in selected):
        return list(query.tuples())
    converters: list[tuple[int, Callable[[Any], Any]]] = [(i, node.python_value) for i, node in enumerate(selected)
                  if isinstance(node, peewee.Field) and type(node) not in _PLAIN]
    rows = database.execute(query).fetchall()
    if not converters:
        return [tuple(row) for row in rows]
    out = []
    for row in rows:
        values = list(row)
        for i, convert in converters:
            values[i] = convert(values[i])
        out.append(tuple(values))
    return out


class ParameterList(peewee.Value):
    """The list of an IN: ``Model.field.in_(ParameterList(values))`` is ``field.in_(values)``, each value converted
    by the field's ``db_value`` and sent as a parameter, but rendered in one step: Peewee makes a node per value
    of a plain list and renders each on its own, about a millisecond per 500 (a result's reads take its listings
    500 at a time). Values that are SQL nodes, and a query printed with its values inline, render as Peewee
    renders them."""

    def __init__(self, values: Iterable[Any]) -> None:  # not Value's: it makes the node per value
        self.value = list(values)
        self.converter = None
        self.multi = True
        self.values = self.value  # a multi Value's items: an empty list makes Peewee's IN the constant false

    def __sql__(self, ctx: Any) -> Any:
        state = ctx.state
        values: list[Any] = self.value
        if state.value_literals or any(isinstance(v, peewee.Node) for v in values):
            return ctx.sql(peewee.Value(values))
        convert = state.converter
        params = [convert(v) for v in values] if convert else values
        if any(isinstance(v, (peewee.Node, type)) for v in params):  # a converter made SQL (or a model) of it
            return ctx.sql(peewee.Value(values))
        ctx.literal("(" + ", ".join([state.param or "?"] * len(params)) + ")")
        ctx._values.extend(params)
        return ctx


def _uncoerced(node: Any) -> bool:
    """A function Peewee reads as the database returns it (``fn.X(…).coerce(False)``)."""
    return isinstance(node, peewee.Function) and getattr(node, "_coerce", True) is False


class Transaction(Protocol):
    """What a ``with`` of ``write_transaction`` (or of Peewee's ``atomic``) gives."""

    def commit(self) -> None: ...

    def rollback(self) -> None: ...


def write_transaction() -> AbstractContextManager[Transaction]:
    """A transaction that will write. On SQLite it takes the write lock up front (BEGIN IMMEDIATE): a
    deferred transaction that reads first and then writes gets "database is locked" at once, without
    waiting, when another writer got there in between. The process's writers queue for it
    (``QueuedSqliteDatabase``)."""
    if isinstance(database.obj, QueuedSqliteDatabase):
        return _queued_write(database.obj)
    if isinstance(database.obj, peewee.SqliteDatabase):
        return database.atomic("IMMEDIATE")
    return database.atomic()


@contextmanager
def _queued_write(db: QueuedSqliteDatabase) -> Iterator[Transaction]:
    if not db.writers.acquire(timeout=db.busy_timeout):
        # what SQLite raises when its own wait runs out, so callers meet one error either way
        raise peewee.OperationalError(f"database is locked (this process's writers queued {db.busy_timeout:g} s)")
    try:
        with db.atomic("IMMEDIATE") as transaction:
            yield transaction
    finally:
        db.writers.release()


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


def execute_statement(*parts: str | peewee.Node) -> None:
    """Run a statement built by Peewee's context on the bound database (DDL Peewee has no builder for): ``str``
    parts are constant SQL, the others nodes (``peewee.Entity`` names, ``peewee.Value`` parameters)."""
    ctx = database.get_sql_context()
    for part in parts:
        if isinstance(part, str):
            ctx.literal(part)
        else:
            ctx.sql(part)
    database.execute(ctx)
