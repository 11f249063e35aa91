"""Monthly partitions of the hourly rows on MySQL/MariaDB (docs/operating/storage.md).

``ip_stats_hourly`` is partitioned by ``RANGE COLUMNS(hour_bucket)``, one partition per UTC month (``p202611``
holds November 2026) and ``pmax`` for anything later, so pruning drops whole months instead of deleting rows
one by one. MySQL wants the partitioning column in every unique key, so the primary key becomes
``(id, hour_bucket)`` (``id`` stays unique: it is auto-incremented). ``animetop db init`` partitions the table
(existing rows are kept); pruning and ``animetop db partitions`` add the coming months and drop old ones.
SQLite has no partitions: there the rows are deleted.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime

import peewee

from lib.core.clock import naive_utc
from lib.core.db import database, execute_statement, is_mysql
from models import IpStatsHourly

logger = logging.getLogger(__name__)

TABLE = IpStatsHourly._meta.table_name
#: Months of partitions kept ready ahead of now.
AHEAD = 3


@dataclass(frozen=True)
class Partition:
    name: str
    until: datetime | None  # exclusive upper bound; None: MAXVALUE
    rows: int  # the server's estimate (information_schema)


def month_start(value: datetime) -> datetime:
    return value.replace(day=1, hour=0, minute=0, second=0, microsecond=0)


def next_month(value: datetime) -> datetime:
    return month_start(value.replace(year=value.year + 1, month=1) if value.month == 12
                       else value.replace(month=value.month + 1, day=1))


def _name(month: datetime) -> str:
    return f"p{month:%Y%m}"


def _definitions(months: list[datetime]) -> list[str | peewee.Node]:
    """``PARTITION pYYYYMM VALUES LESS THAN ('next month'), …, PARTITION pmax VALUES LESS THAN (MAXVALUE)``."""
    parts: list[str | peewee.Node] = []
    for month in months:
        parts += ["PARTITION ", peewee.Entity(_name(month)), " VALUES LESS THAN (",
                  peewee.Value(f"{next_month(month):%Y-%m-%d}"), "), "]
    return [*parts, "PARTITION pmax VALUES LESS THAN (MAXVALUE)"]


def list_partitions() -> list[Partition]:
    """The hourly table's partitions, oldest first (empty on SQLite or before ``db init`` partitioned it)."""
    if not is_mysql():
        return []
    info = peewee.Table("PARTITIONS", schema="information_schema")
    rows = (info.select(info.c.PARTITION_NAME, info.c.PARTITION_DESCRIPTION, info.c.TABLE_ROWS)
            .where((info.c.TABLE_SCHEMA == database.database) & (info.c.TABLE_NAME == TABLE)
                   & info.c.PARTITION_NAME.is_null(False))
            .order_by(info.c.PARTITION_ORDINAL_POSITION).bind(database).tuples())
    found = []
    for name, description, count in rows:
        until = None if description is None or "MAXVALUE" in str(description).upper() else \
            datetime.strptime(str(description).strip("'")[:10], "%Y-%m-%d")
        found.append(Partition(str(name), until, int(count or 0)))
    return found


def partitioned() -> bool:
    return bool(list_partitions())


def ensure_partitioned(now: float) -> bool:
    """Partition the hourly table by month if it is not yet (MySQL only); True when it did."""
    if not is_mysql() or partitioned():
        return False
    oldest = IpStatsHourly.select(peewee.fn.MIN(IpStatsHourly.hour_bucket)).scalar()
    first = month_start(min(oldest, naive_utc(now)) if oldest is not None else naive_utc(now))
    months: list[datetime] = []
    month = first
    while len(months) < 240 and month <= _ahead(now):
        months.append(month)
        month = next_month(month)
    execute_statement("ALTER TABLE ", peewee.Entity(TABLE), " DROP PRIMARY KEY, ADD PRIMARY KEY (id, hour_bucket)")
    execute_statement("ALTER TABLE ", peewee.Entity(TABLE), " PARTITION BY RANGE COLUMNS(hour_bucket) (",
         *_definitions(months), ")")
    logger.info("%s: partitioned by month from %s", TABLE, f"{first:%Y-%m}")
    return True


def _ahead(now: float) -> datetime:
    month = month_start(naive_utc(now))
    for _ in range(AHEAD):
        month = next_month(month)
    return month


def ensure_future(now: float) -> list[str]:
    """Split months off ``pmax`` until the coming ``AHEAD`` months have their own partitions; their names."""
    parts = list_partitions()
    bounded = [p.until for p in parts if p.until is not None]
    if not parts or not bounded:
        return []
    month, added = max(bounded), []
    while month <= _ahead(now):
        added.append(month)
        month = next_month(month)
    if added:
        execute_statement("ALTER TABLE ", peewee.Entity(TABLE), " REORGANIZE PARTITION pmax INTO (",
                          *_definitions(added), ")")
    return [_name(m) for m in added]


def drop_before(limit: datetime) -> list[str]:
    """Drop the partitions holding only hours before ``limit`` (their upper bound at or before it); their names.
    The caller rolls their rows up first (``lib.market.retention.roll_up``)."""
    doomed = [p.name for p in list_partitions() if p.until is not None and p.until <= limit]
    if doomed:
        names: list[str | peewee.Node] = []
        for name in doomed:
            names += [", "] if names else []
            names.append(peewee.Entity(name))
        execute_statement("ALTER TABLE ", peewee.Entity(TABLE), " DROP PARTITION ", *names)
        logger.info("%s: dropped partitions %s (before %s)", TABLE, ", ".join(doomed), f"{limit:%Y-%m-%d}")
    return doomed
