"""Bounded storage (docs/operating/storage.md): what is kept, for how long, and what is rolled up first.

Every window up to ``RETENTION_WINDOW`` hours, ending now or later, reads facts from its previous window and its
7-day heat baseline on: at most ``2 × RETENTION_WINDOW + 7 days`` back. The *horizon* is that reach plus a day's
margin, floored to a UTC day. Pruning removes only what lies wholly before the horizon, so no window the product
answers loses a row it reads; longer windows are refused (``check_window``), never silently undercounted.

Per-listing facts are kept a shorter time, ``RETENTION_DETAIL`` (the *detail horizon*, a UTC midnight, never
before the horizon): a listing last seen before it is dormant, and before its sightings, events and snapshot go
its facts are folded into its days' daily rows (``lib.market.daily.summarize_pruned``: exact counts and
mergeable sketches), which the windows reaching past the detail horizon read (``lib.market.windows``).

Before the horizon:

* hourly rows are rolled up into daily rows (``ip_stats_daily``, kept ``RETENTION_DAILY``; ``lib.market.daily``
  keeps them current for every completed day, and here the days not rolled up yet are), then deleted (on
  MySQL/MariaDB, where they are partitioned by month, whole months are dropped: ``lib.market.partitions``);
* (before the detail horizon) a dormant listing — last seen before it — is summarized into its days' daily rows,
  then its sightings, events, snapshot and segments go;
* a listing still seen keeps its sightings: they are runs already (``models.ListingSighting``), a few rows a
  listing;
* the ledger keeps each IP's first crawl (its baseline), its latest crawl, and its latest crawl before the horizon
  (the crawl before any result still applied: where a late one cuts a run, ``lib.market.facts.store_sightings``);
  search totals keep each IP's latest per search (the supply measure reads it at any age).

The horizons reached are stored (``storage_marks``: ``pruned_before``, the hourly rows', and
``details_pruned_before``, the per-listing facts'): a crawl result older than the detail horizon is skipped, since
the facts it would be derived against may be gone, and no event (or hourly row) before it is derived again.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass
from datetime import timedelta
from typing import Any

import peewee

from lib.core.clock import naive_utc, to_timestamp
from lib.core.db import database, is_mysql, on_conflict_update, write_transaction
from lib.core.settings import Settings
from lib.market.daily import roll_up, summarize_pruned
from lib.market.marks import DETAILS_PRUNED_BEFORE, PRUNED_BEFORE, details_pruned_before, pruned_before
from lib.market.marks import mark as _mark
from lib.market.relists import goods_groups
from lib.market.statistics import HOUR, hour_bucket, tuples
from lib.market.windows import BASELINE
from models import (
    AppliedResult,
    CrawlSearchTotal,
    IpBreakout,
    IpMetadata,
    IpStatsDaily,
    IpStatsHourly,
    ItemSnapshot,
    ListingEvent,
    ListingRelist,
    ListingSegment,
    ListingSighting,
    RelistUndecided,
    SegmentBreakout,
    SegmentDailyFlow,
    SegmentStatsDaily,
    StorageMark,
)

__all__ = ["DETAILS_PRUNED_BEFORE", "PRUNED_BEFORE", "WindowBeyondRetention", "check_segment_window", "check_window",
           "detail_horizon", "details_pruned_before", "horizon", "max_segment_hours", "prune", "pruned_before",
           "segment_horizon", "segments_summarized_from"]

logger = logging.getLogger(__name__)

DAY = 86400
#: Added to a window's reach: clock skew between processes and results that arrive a little late.
MARGIN = timedelta(days=1)
#: The horizon of the last pass that went through every IP: the horizon moves by whole days, so the passes in
#: between (the actor runs hourly) find nothing new and skip the per-IP work.
COMPLETED = "completed_to"
CHUNK = 500
#: The detail horizon before which pruned listings have no segments' summaries (set by the first pass of a version
#: that keeps them: what earlier passes pruned was summarized for the IP alone).
SEGMENTS_SUMMARIZED_FROM = "segments_summarized_from"
#: The segments' daily rows' horizon (``segment_horizon``; RETENTION_WINDOW raised since: the days before it are gone).
SEGMENTS_PRUNED_BEFORE = "segments_pruned_before"


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


def segment_horizon(settings: Settings, now: float) -> float:
    """The UTC midnight before which no segments window up to ``RETENTION_WINDOW``, ending at ``now`` or later,
    reads a segment's daily row: such a window reads from the UTC midnight of its first hour (no previous window,
    no baseline), and segments have no per-day series to keep them ``RETENTION_DAILY`` for."""
    at = now - settings.retention_window - MARGIN.total_seconds()
    return at - at % DAY


def detail_horizon(settings: Settings, now: float) -> float:
    """The UTC midnight before which per-listing facts are pruned (summarized first): ``RETENTION_DETAIL`` back,
    never before ``horizon`` and never inside the item states' lifetime."""
    at = now - max(settings.retention_detail, settings.analyzer_item_ttl_available + MARGIN.total_seconds(),
                   settings.analyzer_item_ttl_sold + MARGIN.total_seconds())
    return max(at - at % DAY, horizon(settings, now))


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


def max_segment_hours(settings: Settings) -> int:
    """The longest window segments are answered for: ``RETENTION_WINDOW``, as an IP's (past the detail horizon
    from their daily summaries, ``segment_stats_daily``)."""
    return max_window_hours(settings)


def check_segment_window(hours: int, settings: Settings, now: float, floor: float | None = None,
                         summarized_from: float | None = None) -> None:
    """Refuse a segments window the stored facts do not answer: longer than ``RETENTION_WINDOW``, reaching before
    the hourly rows pruned to (``floor``), or whose measures start (at the UTC midnight of its first hour, past the
    detail horizon) before ``summarized_from``: the detail horizon of the first pruning pass that kept segments'
    summaries (``segments_summarized_from``; listings pruned before it were summarized for the IP alone)."""
    longest = max_window_hours(settings)
    if hours > longest:
        raise WindowBeyondRetention(
            f"a {hours} h window is longer than the {longest} h the stored facts answer exactly "
            f"(RETENTION_WINDOW); ask for at most {longest} h")
    since = (to_timestamp(hour_bucket(now)) or 0.0) - (hours - 1) * HOUR
    if floor is not None and since < floor:
        raise WindowBeyondRetention(
            f"a {hours} h window of segments starts before {naive_utc(floor):%Y-%m-%d %H:%M} UTC, which was pruned "
            f"(RETENTION_WINDOW was raised since); ask for a shorter window")
    starts = since - since % DAY
    if summarized_from is not None and starts < summarized_from:
        raise WindowBeyondRetention(
            f"a {hours} h window of segments starts before {naive_utc(summarized_from):%Y-%m-%d %H:%M} UTC, where "
            f"the segments' daily summaries begin (listings pruned before a version that kept them, or days past "
            f"RETENTION_WINDOW then, have none); ask for a shorter window")


def segments_summarized_from() -> float | None:
    """Where the segments' daily summaries begin (None: wherever the IPs' do): after what the first pass keeping
    them found pruned, and after what their own horizon pruned since."""
    marks = [m for m in (_mark(SEGMENTS_SUMMARIZED_FROM), _mark(SEGMENTS_PRUNED_BEFORE)) if m is not None]
    return max(marks) if marks else None


@dataclass
class PruneReport:
    """What one pruning pass removed (or, dry, would remove)."""

    horizon: float
    detail_horizon: float = 0.0
    days_rolled_up: int = 0
    days_summarized: int = 0
    hourly_rows: int = 0
    partitions_dropped: int = 0
    dormant_listings: int = 0
    sightings: int = 0
    events: int = 0
    snapshots: int = 0
    segments: int = 0
    ledger_rows: int = 0
    search_totals: int = 0
    daily_rows: int = 0
    segment_daily_rows: int = 0
    segment_flow_rows: int = 0
    breakouts: int = 0

    def as_dict(self) -> dict[str, Any]:  # the report as printed (JSON) and logged
        return asdict(self) | {"horizon_utc": f"{naive_utc(self.horizon):%Y-%m-%d %H:%M}",
                               "detail_horizon_utc": f"{naive_utc(self.detail_horizon):%Y-%m-%d %H:%M}"}


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
    detail = detail_horizon(settings, now)
    report = PruneReport(horizon=limit, detail_horizon=detail)
    if not dry_run:
        with write_transaction():
            if _mark(SEGMENTS_SUMMARIZED_FROM) is None:  # the first pass summarizing segments: from here on
                _set_mark(details_pruned_before() or 0.0, SEGMENTS_SUMMARIZED_FROM)
            _set_mark(limit)
            _set_mark(detail, DETAILS_PRUNED_BEFORE)
    drop_partitions = is_mysql() and partitions.partitioned()
    done = _mark(COMPLETED)
    ips = [] if done is not None and done >= detail and not dry_run else \
        [ip_id for (ip_id,) in tuples(IpMetadata.select(IpMetadata.id).order_by(IpMetadata.id))]
    for ip_id in ips:
        with write_transaction() if not dry_run else database.atomic() as txn:
            _prune_ip(ip_id, limit, detail, report, delete_hourly=not drop_partitions)
            if dry_run:
                txn.rollback()
    if drop_partitions and not dry_run:
        report.partitions_dropped = len(partitions.drop_before(naive_utc(limit)))
        partitions.ensure_future(now)
    if not dry_run:
        with write_transaction():
            _set_mark(detail, COMPLETED)
    oldest = naive_utc(now - settings.retention_daily)
    oldest_segment = max(segment_horizon(settings, now), now - settings.retention_daily)
    if dry_run:
        report.daily_rows = IpStatsDaily.select().where(IpStatsDaily.day < oldest).count()
        report.segment_daily_rows = SegmentStatsDaily.select().where(
            SegmentStatsDaily.day < naive_utc(oldest_segment)).count()
        report.segment_flow_rows = SegmentDailyFlow.select().where(SegmentDailyFlow.day < oldest).count()
        report.breakouts = (IpBreakout.select().where(IpBreakout.day < oldest).count()
                            + SegmentBreakout.select().where(SegmentBreakout.day < oldest).count())
    else:
        with write_transaction():
            _set_mark(oldest_segment, SEGMENTS_PRUNED_BEFORE)
        report.daily_rows = IpStatsDaily.delete().where(IpStatsDaily.day < oldest).execute()
        report.segment_daily_rows = SegmentStatsDaily.delete().where(
            SegmentStatsDaily.day < naive_utc(oldest_segment)).execute()
        # the segments' daily rows and the breakouts found on the days (lib.forecast.breakouts) go with the days' rows
        report.segment_flow_rows = SegmentDailyFlow.delete().where(SegmentDailyFlow.day < oldest).execute()
        report.breakouts = (IpBreakout.delete().where(IpBreakout.day < oldest).execute()
                            + SegmentBreakout.delete().where(SegmentBreakout.day < oldest).execute())
    logger.info("storage pruned to %s UTC%s: %s", f"{naive_utc(limit):%Y-%m-%d}", " (dry run)" if dry_run else "",
                report.as_dict())
    return report


def _prune_ip(ip_id: int, limit: float, detail: float, report: PruneReport, *, delete_hourly: bool) -> None:
    before = naive_utc(limit)
    # every day before the detail horizon gets its row before listings are summarized into it: no result changes
    # those days again (they are before the floor), so the row is final
    report.days_rolled_up += roll_up(ip_id, naive_utc(detail))
    if delete_hourly:
        report.hourly_rows += IpStatsHourly.delete().where((IpStatsHourly.ip_id == ip_id)
                                                           & (IpStatsHourly.hour_bucket < before)).execute()
    dormant = [sid for (sid,) in tuples(
        ListingSighting.select(ListingSighting.source_id).where(ListingSighting.ip_id == ip_id)
        .group_by(ListingSighting.source_id).having(peewee.fn.MAX(ListingSighting.last_seen) < detail))]
    # a relisted goods' events are derived from all its listings (lib/market/relists.py): pruned together, once all
    # of them are dormant
    groups = goods_groups(ip_id, dormant)
    quiet = set(dormant)
    dormant = sorted({sid for members in groups.values() if quiet.issuperset(members) for sid in members})
    report.dormant_listings += len(dormant)
    for start in range(0, len(dormant), CHUNK):
        chunk = dormant[start:start + CHUNK]
        report.days_summarized += summarize_pruned(ip_id, chunk)
        report.sightings += ListingSighting.delete().where((ListingSighting.ip_id == ip_id)
                                                           & ListingSighting.source_id.in_(chunk)).execute()
        report.events += ListingEvent.delete().where((ListingEvent.ip_id == ip_id)
                                                     & ListingEvent.source_id.in_(chunk)).execute()
        report.snapshots += ItemSnapshot.delete().where((ItemSnapshot.ip_id == ip_id)
                                                        & ItemSnapshot.source_id.in_(chunk)).execute()
        report.segments += ListingSegment.delete().where((ListingSegment.ip_id == ip_id)
                                                         & ListingSegment.source_id.in_(chunk)).execute()
        ListingRelist.delete().where((ListingRelist.ip_id == ip_id) & ListingRelist.source_id.in_(chunk)).execute()
        RelistUndecided.delete().where((RelistUndecided.ip_id == ip_id)
                                       & RelistUndecided.source_id.in_(chunk)).execute()
    crawled = AppliedResult.crawled_at
    first, last = (AppliedResult.select(peewee.fn.MIN(crawled), peewee.fn.MAX(crawled))
                   .where(AppliedResult.ip_id == ip_id).scalar(as_tuple=True))
    before_limit = AppliedResult.select(peewee.fn.MAX(crawled)).where((AppliedResult.ip_id == ip_id)
                                                                       & (crawled < limit)).scalar()
    if first is not None and before_limit is not None:
        report.ledger_rows += AppliedResult.delete().where(
            (AppliedResult.ip_id == ip_id) & (AppliedResult.crawled_at < limit) & (AppliedResult.crawled_at != first)
            & (AppliedResult.crawled_at != last) & (AppliedResult.crawled_at != before_limit)).execute()
    for status, latest in tuples(CrawlSearchTotal.select(CrawlSearchTotal.status,
                                                         peewee.fn.MAX(CrawlSearchTotal.crawled_at))
                                 .where(CrawlSearchTotal.ip_id == ip_id).group_by(CrawlSearchTotal.status)):
        report.search_totals += CrawlSearchTotal.delete().where(
            (CrawlSearchTotal.ip_id == ip_id) & (CrawlSearchTotal.status == status)
            & (CrawlSearchTotal.crawled_at < min(limit, latest))).execute()
