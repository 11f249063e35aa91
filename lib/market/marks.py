"""The horizons storage was pruned to (``storage_marks``; docs/operating/storage.md), read by the pruning
(``lib.market.retention``), by result processing (the floor below which nothing is derived again) and by the
window measures (where the daily summaries of pruned listings begin)."""

from __future__ import annotations

import peewee

from models import StorageMark

#: The hourly rows', ledger's and search totals' horizon.
PRUNED_BEFORE = "pruned_before"
#: The per-listing facts' (detail) horizon.
DETAILS_PRUNED_BEFORE = "details_pruned_before"


def mark(name: str) -> float | None:
    """A stored mark's value (Unix seconds), None when never set."""
    try:
        row = StorageMark.get_or_none(StorageMark.name == name)
    except (peewee.OperationalError, peewee.ProgrammingError) as e:
        # a database from before this table (``animetop db init`` not run since the upgrade) was never pruned
        if StorageMark._meta.table_name in str(e):
            return None
        raise
    return None if row is None else float(row.value)


def pruned_before() -> float | None:
    """The horizon the hourly rows, ledger and search totals were pruned to (None: never pruned)."""
    return mark(PRUNED_BEFORE)


def details_pruned_before() -> float | None:
    """The detail horizon the per-listing facts were pruned to (None: never pruned); a database pruned before
    the two horizons were told apart has only ``pruned_before``."""
    marks = [m for m in (mark(PRUNED_BEFORE), mark(DETAILS_PRUNED_BEFORE)) if m is not None]
    return max(marks) if marks else None
