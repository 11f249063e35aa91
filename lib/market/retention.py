"""Bounded storage (README "Storage and retention"): what is kept, for how long, and what is rolled up first.

Every window up to ``RETENTION_WINDOW`` hours, ending now or later, reads facts from its previous window and its
7-day heat baseline on: at most ``2 × RETENTION_WINDOW + 7 days`` back. The *horizon* is that reach plus a day's
margin, floored to a UTC day. Pruning removes only what lies wholly before the horizon, so no window the product
answers loses a row it reads; longer windows are refused (``check_window``), never silently undercounted.

Before the horizon:

* hourly rows are rolled up into daily rows (``ip_stats_daily``, kept ``RETENTION_DAILY``; ``lib.market.daily``
  keeps them current for every completed day, and here the days not rolled up yet are), then deleted (on
  MySQL/MariaDB, where they are partitioned by month, whole months are dropped: ``lib.market.partitions``);
* a listing last seen before the horizon is dormant: its sightings, events and snapshot go;
* a listing still seen keeps, of its sightings before the horizon, the ones its events depend on (the first and
  last of each run of one status, the first carrying the site's created time): the rest say nothing new;
* the ledger keeps each IP's first crawl (its baseline) and latest crawl; search totals keep each IP's latest
  per search (the supply measure reads it at any age).

The horizon reached is stored (``storage_marks.pruned_before``): a crawl result older than it is skipped, since
the facts it would be derived against may be gone, and no event before it is ever derived again.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import asdict, dataclass
from datetime import timedelta
from typing import Any

import peewee

from lib.core.clock import naive_utc, to_timestamp
from lib.core.db import database, is_mysql, on_conflict_update, write_transaction
from lib.core.settings import Settings
from lib.market.daily import roll_up
from lib.market.statistics import HOUR, hour_bucket, tuples
from lib.market.windows import BASELINE
from models import (
    AppliedResult,
    CrawlSearchTotal,
    IpMetadata,
    IpStatsDaily,
    IpStatsHourly,
    ItemSnapshot,
    ListingEvent,
    ListingSighting,
    StorageMark,
)

logger = logging.getLogger(__name__)

DAY = 86400
#: Added to a window's reach: clock skew between processes and results that arrive a little late.
MARGIN = timedelta(days=1)
PRUNED_BEFORE = "pruned_before"
#: The horizon of the last pass that went through every IP: the horizon moves by whole days, so the passes in
#: between (the actor runs hourly) find nothing new and skip the per-IP work.
COMPLETED = "completed_to"
CHUNK = 500


class WindowBeyondRetention(ValueError):
    """A window reaches further back than the stored facts answer exactly."""


def max_window_hours(settings: Settings) -> int:
    return int(settings.retention_window // HOUR)


def horizon(settings: Settings, now: float) -> float:
    """The UTC midnight before which no window up to ``RETENTION_WINDOW``, ending at ``now`` or later, reads
    anything, and no item state (``ANALYZER_ITEM_TTL_*``) is still alive."""
    reach = 2 * settings.retention_window + (BASELINE + MARGIN).total_seconds()
    reach = max(reach, max(settings.analyzer_item_ttl_available, settings.analyzer_item_ttl_sold)
                + MARGIN.total_seconds())
    at = now - reach
    return at - at % DAY


def pruned_before() -> float | None:
    """The horizon the storage was pruned to (None: never pruned)."""
    return _mark(PRUNED_BEFORE)


def _mark(name: str) -> float | None:
    try:
        row = StorageMark.get_or_none(StorageMark.name == name)
    except (peewee.OperationalError, peewee.ProgrammingError) as e:
        # a database from before this table (``animetop db init`` not run since the upgrade) was never pruned
        if StorageMark._meta.table_name in str(e):
            return None
        raise
    return None if row is None else float(row.value)


def window_reach(hours: int, now: float) -> float:
    """The earliest time a window of ``hours`` ending at ``now`` reads (its previous window's heat baseline)."""
    since = to_timestamp(hour_bucket(now)) or 0.0
    return since - (2 * hours - 1) * HOUR - BASELINE.total_seconds()


def check_window(hours: int, settings: Settings, now: float, floor: float | None = None) -> None:
    """Refuse a window the stored facts do not answer exactly: longer than ``RETENTION_WINDOW``, or reaching
    before what was pruned (``floor``, when given)."""
    longest = max_window_hours(settings)
    if hours > longest:
        raise WindowBeyondRetention(
            f"a {hours} h window is longer than the {longest} h the stored facts answer exactly "
            f"(RETENTION_WINDOW); ask for at most {longest} h")
    if floor is not None and window_reach(hours, now) < floor:
        raise WindowBeyondRetention(
            f"a {hours} h window reads facts from before {naive_utc(floor):%Y-%m-%d %H:%M} UTC, which were pruned "
            f"(RETENTION_WINDOW was raised since); ask for a shorter window")


@dataclass
class PruneReport:
    """What one pruning pass removed (or, dry, would remove)."""

    horizon: float
    days_rolled_up: int = 0
    hourly_rows: int = 0
    partitions_dropped: int = 0
    dormant_listings: int = 0
    sightings: int = 0
    events: int = 0
    snapshots: int = 0
    ledger_rows: int = 0
    search_totals: int = 0
    daily_rows: int = 0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self) | {"horizon_utc": f"{naive_utc(self.horizon):%Y-%m-%d %H:%M}"}


def _set_mark(value: float, name: str = PRUNED_BEFORE) -> None:
    """Move a mark forward (never back: what is gone stays gone)."""
    current = _mark(name)
    if current is not None and current >= value:
        return
    on_conflict_update(StorageMark.insert(name=name, value=value), [StorageMark.name],
                       preserve=[StorageMark.value]).execute()


def prune(settings: Settings, now: float, *, dry_run: bool = False) -> PruneReport:
    """One pruning pass to ``horizon(settings, now)``, one transaction per IP. The mark is stored first, so a
    result older than the horizon is skipped from then on rather than applied against facts being removed."""
    from lib.market import partitions

    limit = horizon(settings, now)
    report = PruneReport(horizon=limit)
    if not dry_run:
        with write_transaction():
            _set_mark(limit)
    drop_partitions = is_mysql() and partitions.partitioned()
    done = _mark(COMPLETED)
    ips = [] if done is not None and done >= limit and not dry_run else \
        [ip_id for (ip_id,) in tuples(IpMetadata.select(IpMetadata.id).order_by(IpMetadata.id))]
    for ip_id in ips:
        with write_transaction() if not dry_run else database.atomic() as txn:
            _prune_ip(ip_id, limit, report, delete_hourly=not drop_partitions)
            if dry_run:
                txn.rollback()
    if drop_partitions and not dry_run:
        report.partitions_dropped = len(partitions.drop_before(naive_utc(limit)))
        partitions.ensure_future(now)
    if not dry_run:
        with write_transaction():
            _set_mark(limit, COMPLETED)
    daily = IpStatsDaily.delete().where(IpStatsDaily.day < naive_utc(now - settings.retention_daily))
    if dry_run:
        report.daily_rows = IpStatsDaily.select().where(IpStatsDaily.day < naive_utc(now - settings.retention_daily)
                                                        ).count()
    else:
        report.daily_rows = daily.execute()
    logger.info("storage pruned to %s UTC%s: %s", f"{naive_utc(limit):%Y-%m-%d}", " (dry run)" if dry_run else "",
                report.as_dict())
    return report


def _prune_ip(ip_id: int, limit: float, report: PruneReport, *, delete_hourly: bool) -> None:
    before = naive_utc(limit)
    report.days_rolled_up += roll_up(ip_id, before)
    if delete_hourly:
        report.hourly_rows += IpStatsHourly.delete().where((IpStatsHourly.ip_id == ip_id)
                                                           & (IpStatsHourly.hour_bucket < before)).execute()
    dormant = [sid for (sid,) in tuples(
        ListingSighting.select(ListingSighting.source_id).where(ListingSighting.ip_id == ip_id)
        .group_by(ListingSighting.source_id).having(peewee.fn.MAX(ListingSighting.crawled_at) < limit))]
    report.dormant_listings += len(dormant)
    for start in range(0, len(dormant), CHUNK):
        chunk = dormant[start:start + CHUNK]
        report.sightings += ListingSighting.delete().where((ListingSighting.ip_id == ip_id)
                                                           & ListingSighting.source_id.in_(chunk)).execute()
        report.events += ListingEvent.delete().where((ListingEvent.ip_id == ip_id)
                                                     & ListingEvent.source_id.in_(chunk)).execute()
        report.snapshots += ItemSnapshot.delete().where((ItemSnapshot.ip_id == ip_id)
                                                        & ItemSnapshot.source_id.in_(chunk)).execute()
    redundant = redundant_sightings(ip_id, limit)
    for start in range(0, len(redundant), CHUNK):
        report.sightings += ListingSighting.delete().where(
            ListingSighting.id.in_(redundant[start:start + CHUNK])).execute()
    crawled = AppliedResult.crawled_at
    first, last = (AppliedResult.select(peewee.fn.MIN(crawled), peewee.fn.MAX(crawled))
                   .where(AppliedResult.ip_id == ip_id).scalar(as_tuple=True))
    if first is not None:
        report.ledger_rows += AppliedResult.delete().where(
            (AppliedResult.ip_id == ip_id) & (AppliedResult.crawled_at < limit)
            & (AppliedResult.crawled_at != first) & (AppliedResult.crawled_at != last)).execute()
    for status, latest in tuples(CrawlSearchTotal.select(CrawlSearchTotal.status,
                                                         peewee.fn.MAX(CrawlSearchTotal.crawled_at))
                                 .where(CrawlSearchTotal.ip_id == ip_id).group_by(CrawlSearchTotal.status)):
        report.search_totals += CrawlSearchTotal.delete().where(
            (CrawlSearchTotal.ip_id == ip_id) & (CrawlSearchTotal.status == status)
            & (CrawlSearchTotal.crawled_at < min(limit, latest))).execute()


def redundant_sightings(ip_id: int, limit: float) -> list[int]:
    """Ids of sightings before ``limit`` that no event depends on: inside a run of one status of a listing
    (neither its first nor its last sighting), and not the first carrying the site's created time. An event
    reads only the first sighting, the first with a created time, and the two sightings around each change of
    status (``lib.market.facts.derive_events``); no sighting is ever added before ``limit`` again."""
    rows = tuples(ListingSighting.select(ListingSighting.id, ListingSighting.source_id, ListingSighting.status,
                                         ListingSighting.created)
                  .where((ListingSighting.ip_id == ip_id) & (ListingSighting.crawled_at < limit))
                  .order_by(ListingSighting.source_id, ListingSighting.crawled_at))
    by_listing: dict[str, list[tuple[int, str, float | None]]] = defaultdict(list)
    for row_id, sid, status, created in rows:
        by_listing[sid].append((row_id, status, created))
    redundant = []
    for seen in by_listing.values():
        first_created = next((k for k, (_, _, created) in enumerate(seen) if created is not None), None)
        for k in range(1, len(seen) - 1):
            if seen[k - 1][1] == seen[k][1] == seen[k + 1][1] and k != first_created:
                redundant.append(seen[k][0])
    return redundant
