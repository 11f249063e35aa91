"""Daily rows (docs/operating/storage.md): each IP's completed UTC days rolled up from their hourly rows and
sales into ``ip_stats_daily``, kept current as late results change past days, and the per-day series read from
them.

A day's row: ``hours``, the tracked hours (hourly rows) of the day; ``inflow`` and ``outflow``, their sums; and
over the day's sales with a real price the sample count, mean, median, quartiles and range (docs/concepts/measures.md,
definition 4, by day). Flows are in event time, so a late result can change a past day: every write of hourly rows marks
their days pending (``IpDayPending``, in the same transaction), and the rollup recomputes the pending days, dropping
their marks in its own transaction. The per-day series reads the daily rows, and computes from the hourly rows
only the days that have none yet or are pending (today, a day a result just changed): the same values either way.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime, timedelta
from functools import partial
from typing import Any, cast

from lib.core.clock import naive_utc, to_timestamp
from lib.core.db import is_mysql, on_conflict_update, retrying_deadlocks, write_transaction
from lib.market import summaries
from lib.market.statistics import day_of, hour_bucket, hour_start, hour_values, mark_pending, tuples
from lib.market.summaries import Sketch, decode_counts, encode_counts
from models import (
    IpDailyChanged,
    IpDayPending,
    IpMetadata,
    IpStatsDaily,
    IpStatsHourly,
    ItemSnapshot,
    ListingEvent,
    ListingSegment,
    SegmentDailyFlow,
    SegmentStatsDaily,
    StorageMark,
)

logger = logging.getLogger(__name__)

__all__ = ["compute_days", "day_of", "day_series", "mark_daily_changed", "mark_pending", "roll_up", "roll_up_pending",
           "summarize_pruned"]

ONE_DAY = timedelta(days=1)
#: The storage mark set once every IP's days before it were rolled up (the first pass after an upgrade rolls up
#: the days of hourly rows written before days were marked pending).
BACKFILLED = "daily_backfilled_to"
#: The storage mark set once every IP's daily rows had their segments' rows (``segment_daily_flows``): the first
#: pass after an upgrade writes those of the days rolled up before, from what the storage still holds of them.
SEGMENTS_BACKFILLED = "segment_days_backfilled_to"
_VALUES = ("hours", "inflow", "outflow", "sample_count", "avg_price", "min_price", "max_price", "median_price",
           "p25_price", "p75_price")


def compute_days(ip_id: int, first: datetime, last: datetime,
                 only: set[datetime] | None = None) -> dict[datetime, dict[str, Any]]:  # rows: column → value
    """The daily rows (values by day) of the IP's days from ``first`` to ``last`` (UTC midnights) that have
    hourly rows, or of the days in ``only`` among them: the one computation of a day's row (module docstring)."""
    end = last + ONE_DAY
    days: dict[datetime, list[int]] = defaultdict(lambda: [0, 0, 0])
    for bucket, inflow, outflow in tuples(
            IpStatsHourly.select(IpStatsHourly.hour_bucket, IpStatsHourly.inflow, IpStatsHourly.outflow)
            .where((IpStatsHourly.ip_id == ip_id) & (IpStatsHourly.hour_bucket >= first)
                   & (IpStatsHourly.hour_bucket < end))):
        day = day_of(bucket)
        if only is None or day in only:
            counts = days[day]
            counts[0] += 1
            counts[1] += inflow
            counts[2] += outflow
    if not days:
        return {}
    prices: dict[datetime, list[int]] = defaultdict(list)
    for at, price in tuples(ListingEvent.select(ListingEvent.event_at, ListingEvent.price).where(
            (ListingEvent.ip_id == ip_id) & (ListingEvent.kind == "sold") & ListingEvent.price.is_null(False)
            & (ListingEvent.event_at >= hour_start(min(days)))
            & (ListingEvent.event_at < hour_start(max(days) + ONE_DAY)))):
        prices[day_of(hour_bucket(at))].append(price)
    rows = {}
    for day, (hours, inflow, outflow) in sorted(days.items()):
        values = hour_values(inflow, outflow, prices.get(day, []))
        values.pop("liquidity_index")
        rows[day] = {"hours": hours, **values}
    return rows


def _pending(ip_id: int, before: datetime) -> set[datetime]:
    """The IP's pending days before ``before``. On MySQL/MariaDB their marks are locked first thing in the
    transaction: a result marking one of them again waits for this transaction, and one that marked it before
    has committed its hours before the reads that follow (they see it); SQLite's write transaction already
    excludes every other writer."""
    query = IpDayPending.select(IpDayPending.day).where((IpDayPending.ip_id == ip_id) & (IpDayPending.day < before))
    if is_mysql():
        query = query.for_update()
    return {d for (d,) in tuples(query)}


def roll_up(ip_id: int, before: datetime, *, missing: bool = True) -> int:
    """(Re)compute the IP's daily rows before ``before`` (a UTC midnight) that are pending, and with ``missing``
    also the days that have hourly rows and no daily row yet; then drop those days' marks. Run it inside a write
    transaction. Returns the number of days rolled up."""
    pending = _pending(ip_id, before)
    days = set(pending)
    if missing:
        hourly = {day_of(b) for (b,) in tuples(IpStatsHourly.select(IpStatsHourly.hour_bucket).where(
            (IpStatsHourly.ip_id == ip_id) & (IpStatsHourly.hour_bucket < before)))}
        done = {d for (d,) in tuples(IpStatsDaily.select(IpStatsDaily.day).where(
            (IpStatsDaily.ip_id == ip_id) & (IpStatsDaily.day < before)))}
        days |= hourly - done
    if not days:
        return 0
    rows = compute_days(ip_id, min(days), max(days), days)
    stored = [{"ip_id": ip_id, "day": day, **values} for day, values in rows.items()]
    for start in range(0, len(stored), 200):
        on_conflict_update(IpStatsDaily.insert_many(stored[start:start + 200]),
                           [IpStatsDaily.ip_id, IpStatsDaily.day],
                           preserve=[getattr(IpStatsDaily, name) for name in _VALUES]).execute()
    if rows:
        _write_segment_days(ip_id, set(rows))
    if pending:
        IpDayPending.delete().where((IpDayPending.ip_id == ip_id) & IpDayPending.day.in_(sorted(pending))).execute()
    if rows:
        mark_daily_changed(ip_id)
    return len(rows)


def compute_segment_days(ip_id: int, days: set[datetime]) -> dict[tuple[str, str, datetime], dict[str, Any]]:
    """Each segment's daily row (``segment_daily_flows``: values by kind, key and day) of the IP's ``days``: the
    segment's listings created and sold on the day and its sold-price median, the stored events' and those a
    pruning pass summarized (``segment_stats_daily``) together, as the segments windows count them
    (docs/concepts/measures.md "Segments"). A segment without a listing created or sold on a day has no row."""
    if not days:
        return {}
    counts: dict[tuple[str, str, datetime], tuple[list[int], list[int]]] = defaultdict(lambda: ([0, 0], []))
    in_segment = ((ListingSegment.ip_id == ListingEvent.ip_id) & (ListingSegment.source_id == ListingEvent.source_id))
    for kind, key, event, at, price in tuples(
            ListingEvent.select(ListingSegment.kind, ListingSegment.key, ListingEvent.kind, ListingEvent.event_at,
                                ListingEvent.price)
            .join(ListingSegment, on=in_segment)
            .where((ListingEvent.ip_id == ip_id) & (ListingEvent.event_at >= hour_start(min(days)))
                   & (ListingEvent.event_at < hour_start(max(days) + ONE_DAY)))):
        day = day_of(naive_utc(at))
        if day in days:
            flows, prices = counts[kind, key, day]
            flows[0 if event == "created" else 1] += 1
            if event != "created" and price is not None:
                prices.append(price)
    pruned: dict[tuple[str, str, datetime], tuple[int, int, str | None]] = {
        (kind, key, day): (created or 0, sales or 0, sketch) for kind, key, day, created, sales, sketch in tuples(
            SegmentStatsDaily.select(SegmentStatsDaily.kind, SegmentStatsDaily.key, SegmentStatsDaily.day,
                                     SegmentStatsDaily.pruned_created, SegmentStatsDaily.pruned_sales,
                                     SegmentStatsDaily.pruned_prices)
            .where((SegmentStatsDaily.ip_id == ip_id) & SegmentStatsDaily.day.in_(sorted(days))))}
    rows = {}
    for segment in sorted(set(counts) | set(pruned)):
        (created, sold), prices = counts[segment] if segment in counts else ([0, 0], [])
        pruned_created, pruned_sales, sketch = pruned.get(segment, (0, 0, None))
        median: float | None
        if sketch:  # prices summarized: the median of the sketch with the stored ones added (its accuracy)
            merged = Sketch.decode(summaries.PRICE_ACCURACY, sketch).update(prices)
            samples, median = merged.count, merged.quantile(0.5)
        else:
            samples = len(prices)
            median = None if not prices else float(hour_values(0, 0, prices)["median_price"])
        if created + sold + pruned_created + pruned_sales:
            rows[segment] = {"inflow": created + pruned_created, "outflow": sold + pruned_sales,
                             "sample_count": samples, "median_price": median}
    return rows


def _backfill_segment_days(today: datetime) -> None:
    """Once (``SEGMENTS_BACKFILLED``): the segments' daily rows of every day already rolled up, one transaction per
    IP, each IP marked changed for its forecasts. A day whose listings are gone from the storage (past the segments'
    summaries) gets none: the segments' histories start at an IP's first day with a segment row
    (``lib.forecast.series``). A pass stopped midway (its time limit, a kill) is taken up by the next: an IP that
    has segment rows already is passed over."""
    if StorageMark.get_or_none(StorageMark.name == SEGMENTS_BACKFILLED) is not None:
        return
    done = {i for (i,) in tuples(SegmentDailyFlow.select(SegmentDailyFlow.ip_id).distinct())}
    ips = [i for (i,) in tuples(IpStatsDaily.select(IpStatsDaily.ip_id).where(IpStatsDaily.day < today)
                                .distinct().order_by(IpStatsDaily.ip_id)) if i not in done]
    for ip_id in ips:
        with write_transaction():
            days = {d for (d,) in tuples(IpStatsDaily.select(IpStatsDaily.day).where(
                (IpStatsDaily.ip_id == ip_id) & (IpStatsDaily.day < today)))}
            _write_segment_days(ip_id, days)
            mark_daily_changed(ip_id)
    with write_transaction():
        on_conflict_update(StorageMark.insert(name=SEGMENTS_BACKFILLED, value=to_timestamp(today)),
                           [StorageMark.name], preserve=[StorageMark.value]).execute()
    if ips:
        logger.info("daily rollup: the segments' daily rows of %d IP(s) written", len(ips))


def _write_segment_days(ip_id: int, days: set[datetime]) -> None:
    """Replace the IP's segments' daily rows of ``days`` (``compute_segment_days``)."""
    rows = [{"ip_id": ip_id, "kind": kind, "key": key, "day": day, **values}
            for (kind, key, day), values in compute_segment_days(ip_id, days).items()]
    SegmentDailyFlow.delete().where((SegmentDailyFlow.ip_id == ip_id)
                                    & SegmentDailyFlow.day.in_(sorted(days))).execute()
    for start in range(0, len(rows), 200):
        SegmentDailyFlow.insert_many(rows[start:start + 200]).execute()


def mark_resegmented(ip_ids: Iterable[int], since: datetime) -> int:
    """Mark pending the IPs' rolled-up days from ``since`` (a UTC midnight) on: their listings' segments were derived
    again (``lib.segments.stored.reapply``), so the next rollup recomputes those days' segment rows from the listings
    kept, and the forecasts refit what changed. Days before ``since`` keep the segments they had: their listings
    are no longer kept (``RETENTION_DETAIL``). Returns the days marked."""
    ids = sorted(set(ip_ids))
    if not ids:
        return 0
    by_ip: dict[int, list[datetime]] = defaultdict(list)
    with write_transaction():
        for ip_id, day in tuples(IpStatsDaily.select(IpStatsDaily.ip_id, IpStatsDaily.day)
                                 .where(IpStatsDaily.ip_id.in_(ids) & (IpStatsDaily.day >= since))):
            by_ip[ip_id].append(day)
        for ip_id, days in by_ip.items():
            mark_pending(ip_id, days)
    return sum(len(days) for days in by_ip.values())


def mark_daily_changed(ip_id: int) -> None:
    """Mark the IP's daily rows changed (in the caller's transaction): the forecasts' refit follows these marks
    (docs/concepts/forecasts.md). Marked again, its version goes up, so a refit that read the mark before drops it
    only if it is still the version it read."""
    on_conflict_update(IpDailyChanged.insert(ip_id=ip_id, version=1), [IpDailyChanged.ip_id],
                       update={IpDailyChanged.version: IpDailyChanged.version + 1}).execute()


def _roll_up_one(ip_id: int, today: datetime, missing: bool) -> int:
    """One IP's pending days rolled up, in a transaction of its own: a result marking the IP's days while this holds
    their marks can make MySQL/MariaDB roll one of them back as a deadlock's victim, and then it is run again."""
    with write_transaction():
        return roll_up(ip_id, today, missing=missing)


def roll_up_pending(now: float) -> int:
    """The periodic rollup (``roll_up_days``): every IP's completed days (before today, UTC) that are pending, one
    transaction per IP; the first pass after an upgrade also rolls up the days missing a daily row. Idempotent,
    and two passes at once are safe (``_pending``). Returns the number of days rolled up."""
    today = day_of(naive_utc(now))
    _backfill_segment_days(today)
    backfilled = StorageMark.get_or_none(StorageMark.name == BACKFILLED)
    if backfilled is None:
        ips = [i for (i,) in tuples(IpMetadata.select(IpMetadata.id).order_by(IpMetadata.id))]
    else:
        ips = [i for (i,) in tuples(IpDayPending.select(IpDayPending.ip_id).where(IpDayPending.day < today)
                                    .distinct().order_by(IpDayPending.ip_id))]
    done = 0
    for ip_id in ips:
        done += retrying_deadlocks(partial(_roll_up_one, ip_id, today, backfilled is None))
    if backfilled is None:
        with write_transaction():
            on_conflict_update(StorageMark.insert(name=BACKFILLED, value=to_timestamp(today)), [StorageMark.name],
                               preserve=[StorageMark.value]).execute()
    if done:
        logger.info("daily rollup: %d day(s) of %d IP(s) rolled up", done, len(ips))
    return done


def day_series(ip_id: int, first: datetime, last: datetime,
               floor: datetime | None = None) -> list[dict[str, Any]]:  # daily rows as read: column → value
    """The IP's per-day rows from ``first`` to ``last`` (UTC midnights), oldest first, each with its ``day``:
    the stored daily rows, except the days that are pending or have none yet (today, the days before the first
    rollup), computed from the hourly rows the same way. ``floor``: the day the hourly rows start (pruned before
    it; None: never pruned): a stored day before it is read as it is."""
    query = (IpStatsDaily.select(IpStatsDaily.day, *[getattr(IpStatsDaily, n) for n in _VALUES])
             .where((IpStatsDaily.ip_id == ip_id) & (IpStatsDaily.day >= first) & (IpStatsDaily.day <= last)))
    # the database's rows, column → value
    stored: dict[datetime, dict[str, Any]] = {r["day"]: r for r in cast(Iterable[dict[str, Any]], query.dicts())}
    fresh_from = max(first, floor) if floor is not None else first
    if StorageMark.get_or_none(StorageMark.name == BACKFILLED) is None:
        fresh = compute_days(ip_id, fresh_from, last)  # nothing rolled up yet: every day from the hourly rows
        stale = {d for d in stored if d >= fresh_from}
    else:
        stale = {d for (d,) in tuples(IpDayPending.select(IpDayPending.day).where(
            (IpDayPending.ip_id == ip_id) & (IpDayPending.day >= fresh_from) & (IpDayPending.day <= last)))}
        stale |= {d for d in (last, last - ONE_DAY) if d >= fresh_from and d not in stored}
        fresh = compute_days(ip_id, min(stale), max(stale), stale) if stale else {}
    rows = {d: r for d, r in stored.items() if d not in stale}
    rows.update({d: {"day": d, **values} for d, values in fresh.items()})
    return [rows[d] for d in sorted(rows)]


def first_day(last: datetime, days: int) -> datetime:
    return last - (days - 1) * ONE_DAY



#: The daily row's columns summarizing pruned listings (docs/operating/storage.md), and their sketches'
#: accuracy and floor.
PRUNED_SKETCHES = {"pruned_sold_times": (summaries.DURATION_ACCURACY, summaries.SECOND),
                   "pruned_censored": (summaries.DURATION_ACCURACY, summaries.SECOND),
                   "pruned_prices": (summaries.PRICE_ACCURACY, summaries.SECOND),
                   "pruned_cuts": (summaries.CUT_ACCURACY, summaries.MILLIONTH)}
PRUNED_COUNTS = ("pruned_created", "pruned_cut_samples")


class _PrunedDay:
    def __init__(self) -> None:
        self.counts = dict.fromkeys(PRUNED_COUNTS, 0)
        self.sales = 0  # every sale of the day, with a price or not (a segment's outflow; the IP's is hourly)
        self.sold_by: dict[int, int] = {}
        self.sketches = {name: Sketch(acc, floor) for name, (acc, floor) in PRUNED_SKETCHES.items()}

    def merge_row(self, row: dict[str, Any]) -> None:  # a daily row as read: column → value
        for name in PRUNED_COUNTS:
            self.counts[name] += row[name] or 0
        for k, c in decode_counts(row["pruned_sold_by"]).items():
            self.sold_by[k] = self.sold_by.get(k, 0) + c
        for name, (acc, floor) in PRUNED_SKETCHES.items():
            self.sketches[name].merge(Sketch.decode(acc, row[name], floor))

    def values(self) -> dict[str, Any]:  # the columns to write
        return {**self.counts, "pruned_sold_by": encode_counts(self.sold_by) or None,
                **{name: sketch.encode() or None for name, sketch in self.sketches.items()}}


def summarize_pruned(ip_id: int, source_ids: list[str]) -> int:
    """Fold the facts of these listings, about to be pruned, into their days' rows (docs/operating/storage.md): by
    creation day the count, the first sales by day after it and the times to sell or censoring times (as the window
    measures define them: a listing pruned is no longer seen, so it is censored at its last sighting), by sale day the
    real prices and price cuts. Run in the transaction that deletes the listings: each listing is summarized exactly
    once (on MySQL/MariaDB its events are locked first, so a second pass at once waits and then finds them gone).
    Returns the number of days written."""
    if not source_ids:
        return 0
    facts = _pruned_facts(ip_id, source_ids)
    days = _fold(*facts)
    if not days:
        return 0
    _summarize_segments(ip_id, source_ids, facts)
    columns = [getattr(IpStatsDaily, name) for name in (*PRUNED_COUNTS, "pruned_sold_by", *PRUNED_SKETCHES)]
    stored = IpStatsDaily.select(IpStatsDaily.day, *columns).where(
        (IpStatsDaily.ip_id == ip_id) & IpStatsDaily.day.in_(sorted(days)))
    if is_mysql():
        stored = stored.for_update()
    for row in cast(Iterable[dict[str, Any]], stored.dicts()):  # the database's rows
        days[row["day"]].merge_row(row)
    rows = [{"ip_id": ip_id, "day": day, **summary.values()} for day, summary in sorted(days.items())]
    for start in range(0, len(rows), 200):
        on_conflict_update(IpStatsDaily.insert_many(rows[start:start + 200]), [IpStatsDaily.ip_id, IpStatsDaily.day],
                           preserve=columns).execute()
    return len(rows)


_Facts = tuple[dict[str, float], dict[str, float], list[tuple[str, float, int | None, int | None]], dict[str, float]]


def _pruned_facts(ip_id: int, source_ids: list[str]) -> _Facts:
    """The listings' created times, first sale times, sales (listing, time, price, listed price) and last
    sightings."""
    events = (ListingEvent.select(ListingEvent.source_id, ListingEvent.kind, ListingEvent.occurrence,
                                  ListingEvent.event_at, ListingEvent.price, ListingEvent.listed_price)
              .where((ListingEvent.ip_id == ip_id) & ListingEvent.source_id.in_(source_ids)))
    if is_mysql():
        events = events.for_update()
    created: dict[str, float] = {}
    first_sale: dict[str, float] = {}
    sales: list[tuple[str, float, int | None, int | None]] = []
    for sid, kind, occurrence, at, price, listed in tuples(events):
        if kind == "created":
            created[sid] = at
        else:
            sales.append((sid, at, price, listed))
            if occurrence == 0:
                first_sale[sid] = at
    last_seen = dict(tuples(ItemSnapshot.select(ItemSnapshot.source_id, ItemSnapshot.last_seen).where(
        (ItemSnapshot.ip_id == ip_id) & ItemSnapshot.source_id.in_(list(created))))) if created else {}
    return created, first_sale, sales, last_seen


def _fold(created: dict[str, float], first_sale: dict[str, float],
          sales: list[tuple[str, float, int | None, int | None]],
          last_seen: dict[str, float]) -> dict[datetime, _PrunedDay]:
    days: dict[datetime, _PrunedDay] = defaultdict(_PrunedDay)
    for sid, at in created.items():
        day = days[day_of(naive_utc(at))]
        day.counts["pruned_created"] += 1
        sold = first_sale.get(sid)
        if sold is not None:
            offset = (day_of(naive_utc(sold)) - day_of(naive_utc(at))).days
            day.sold_by[offset] = day.sold_by.get(offset, 0) + 1
            day.sketches["pruned_sold_times"].add(max(sold - at, 0.0))
        else:
            seen = last_seen.get(sid)
            day.sketches["pruned_censored"].add(max((seen if seen is not None else at) - at, 0.0))
    for _, at, price, listed in sales:
        day = days[day_of(naive_utc(at))]
        day.sales += 1
        if price is None:
            continue
        day.sketches["pruned_prices"].add(price)
        if listed:
            day.counts["pruned_cut_samples"] += 1
            if price < listed:
                day.sketches["pruned_cuts"].add((listed - price) / listed)
    return days


def _summarize_segments(ip_id: int, source_ids: list[str], facts: _Facts) -> None:
    """Fold the pruned listings' facts into their segments' days (``segment_stats_daily``): ``_fold`` of each
    segment's listings (``listing_segments``, read before they go), with each day's sales. A listing in two
    segments counts in both, as in the windows."""
    created, first_sale, sales, last_seen = facts
    members: dict[tuple[str, str], set[str]] = defaultdict(set)
    for kind, key, sid in tuples(ListingSegment.select(ListingSegment.kind, ListingSegment.key,
                                                       ListingSegment.source_id)
                                 .where((ListingSegment.ip_id == ip_id)
                                        & ListingSegment.source_id.in_(source_ids))):
        members[kind, key].add(sid)
    rows = []
    columns = [getattr(SegmentStatsDaily, name) for name in (*PRUNED_COUNTS, "pruned_sales", "pruned_sold_by",
                                                             *PRUNED_SKETCHES)]
    for (kind, key), sids in sorted(members.items()):
        days = _fold({s: at for s, at in created.items() if s in sids},
                     {s: at for s, at in first_sale.items() if s in sids},
                     [sale for sale in sales if sale[0] in sids], last_seen)
        stored = SegmentStatsDaily.select(SegmentStatsDaily.day, *columns).where(
            (SegmentStatsDaily.ip_id == ip_id) & (SegmentStatsDaily.kind == kind) & (SegmentStatsDaily.key == key)
            & SegmentStatsDaily.day.in_(sorted(days)))
        if is_mysql():
            stored = stored.for_update()
        for row in cast(Iterable[dict[str, Any]], stored.dicts()):  # the database's rows
            days[row["day"]].merge_row(row)
            days[row["day"]].sales += row["pruned_sales"] or 0
        rows += [{"ip_id": ip_id, "kind": kind, "key": key, "day": day, **summary.values(),
                  "pruned_sales": summary.sales} for day, summary in sorted(days.items())]
    for start in range(0, len(rows), 200):
        on_conflict_update(SegmentStatsDaily.insert_many(rows[start:start + 200]),
                           [SegmentStatsDaily.ip_id, SegmentStatsDaily.kind, SegmentStatsDaily.key,
                            SegmentStatsDaily.day], preserve=columns).execute()
