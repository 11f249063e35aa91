"""The horizons storage was pruned to (``storage_marks``; docs/operating/storage.md), read by the pruning
(``lib.market.retention``), by result processing (the floor below which nothing is derived again) and by the
window measures (where the daily summaries of pruned listings begin)."""

from __future__ import annotations

import sqlite3

import peewee
import pymysql

from models import StorageMark

#: The hourly rows', ledger's and search totals' horizon.
PRUNED_BEFORE = "pruned_before"
#: The per-listing facts' (detail) horizon.
DETAILS_PRUNED_BEFORE = "details_pruned_before"


#: MySQL's and MariaDB's error code for a table that does not exist (``ER_NO_SUCH_TABLE``).
MYSQL_NO_SUCH_TABLE = 1146


def mark(name: str) -> float | None:
    """A stored mark's value (Unix seconds), None when never set."""
    try:
        row = StorageMark.get_or_none(StorageMark.name == name)
    except (peewee.OperationalError, peewee.ProgrammingError) as e:
        # a database from before this table (``animetop db init`` not run since the upgrade) was never pruned
        if _no_marks_table(e):
            return None
        raise
    return None if row is None else float(row.value)


def _no_marks_table(error: peewee.DatabaseError) -> bool:
    """Whether ``error`` (peewee's, the driver's own as its ``orig``) says the marks table is missing: MySQL's
    error code, or for SQLite (whose code for a missing table is its code for any SQL error) the schema."""
    cause = getattr(error, "orig", None)
    if isinstance(cause, pymysql.MySQLError):
        return bool(cause.args) and cause.args[0] == MYSQL_NO_SUCH_TABLE
    if isinstance(cause, sqlite3.Error):
        return not StorageMark.table_exists()  # type: ignore[no-untyped-call]  # peewee leaves it unannotated
    return False


def pruned_before() -> float | None:
    """The horizon the hourly rows, ledger and search totals were pruned to (None: never pruned)."""
    return mark(PRUNED_BEFORE)


def details_pruned_before() -> float | None:
    """The detail horizon the per-listing facts were pruned to (None: never pruned); a database pruned before
    the two horizons were told apart has only ``pruned_before``."""
    marks = [m for m in (mark(PRUNED_BEFORE), mark(DETAILS_PRUNED_BEFORE)) if m is not None]
    return max(marks) if marks else None
