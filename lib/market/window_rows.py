"""The read side's precomputed rows (docs/concepts/market-data.md): each IP's measures over each precomputed window
(24 h, 168 h, 720 h and LEADERBOARD_PRECOMPUTE), one row per (IP, window) in ``ip_window_measures``, kept current as
results land and as hours settle, so a leaderboard reads one row per IP and the database sorts them.

A row is computed by the one computation of the measures (``lib.market.windows.window_measures``, restricted to
the IPs recomputed) and of the sparklines (``lib.market.series.outflow_sparklines``). Within an hour a window's
measures change only when facts change, and every result marks the windows it touches pending
(``IpWindowPending``) in its own transaction. At an hour boundary the window slides: its ranges (the window,
the previous window, their heat baselines, the recent outflow) each gain an hour and lose one, so a row changes
only for an IP with facts in an hour leaving a range (``crossing_hours``); every fact's hour has an hourly row,
so those IPs are the ones with an hourly row there. The maintenance pass (``update``) rolls each window to the
current hour by marking those IPs pending (``StorageMark`` ``window_rows_<H>h``: the hour the rows are rolled
to), then recomputes the pending rows: it reads the marks and computes the rows in one read transaction (a snapshot:
results keep landing meanwhile), then stores the rows and drops the marks in a short write transaction, each mark
only at the generation it read: a result that marked the row again meanwhile raised it, so its mark stays for the
next pass.

Reads are exact without waiting for the pass: the rows of IPs that are pending, or would be marked by the roll
not yet done, are computed on the spot (``stale_ips``), like the per-day series' pending days.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from functools import partial
from typing import Any

import peewee

from lib.core import fast_json
from lib.core.clock import naive_utc, to_timestamp
from lib.core.db import database, on_conflict_update, retrying_deadlocks, write_transaction
from lib.core.settings import get_settings
from lib.market.retention import detail_horizon, window_reach
from lib.market.series import outflow_sparklines, shift_sparkline
from lib.market.statistics import hour_bucket, tuples
from lib.market.values import IpRow, JsonObject, RowMeasures, WindowMeasures
from lib.market.windows import BASELINE, RECENT_HOURS, Window, raw, window_measures
from models import CrawlSearchTotal, IpMetadata, IpStatsHourly, IpWindowMeasures, IpWindowPending, StorageMark

logger = logging.getLogger(__name__)

HOUR = timedelta(hours=1)
#: The windows kept as rows whatever LEADERBOARD_PRECOMPUTE says: the dashboard's 1, 7 and 30 days.
STANDARD_WINDOWS = (24, 168, 720)
#: IPs recomputed together at most (their marks read, their rows computed, then stored in one short transaction).
CHUNK = 200
#: Listing events (created and sold, as the hourly rows count them) in the window of the IPs computed together at
#: most: a chunk's memory follows the listings it reads (about 50 bytes an event at its peak, docs/benchmarks.md
#: "Memory"), so a chunk of busy IPs is cut short of ``CHUNK`` and the pass's peak stays near 50 MB whatever the
#: IPs' sizes. An IP over it is computed alone.
CHUNK_EVENTS = 1_000_000
#: Hours a window's rows may lag the clock and still be read (the hours since computed on the spot); further
#: behind (the maintenance pass stopped), a read computes the whole window as if there were no rows.
MAX_LAG_HOURS = 3
#: The typed columns a leaderboard sorts by, by ranking (``lib.market.read_side.LEADERBOARD_KINDS``).
SORT_COLUMNS = ("heat", "heat_low", "momentum", "outflow", "inflow", "liquidity", "sell_through", "median_price",
                "time_to_sell")


def _detail(now: float) -> float:
    """The detail horizon at ``now`` (long windows read the pruned listings' daily summaries before it)."""
    return detail_horizon(get_settings(), now)


def precomputed_windows(windows: Iterable[int]) -> tuple[int, ...]:
    """The windows kept as rows: the standard ones and ``windows`` (LEADERBOARD_PRECOMPUTE)."""
    return tuple(sorted(set(STANDARD_WINDOWS) | set(windows)))


def crossing_hours(hours: int, bucket: datetime) -> list[datetime]:
    """The hours whose facts move between a window's ranges when its current hour passes from ``bucket`` to the
    next (``lib.market.windows._ranges``): each range's first hour leaves it (the window's enters the previous
    window and the baseline; the previous window's enters its baseline). The hour entering the window is new:
    facts there came with a result, which marked its IP pending."""
    since, previous = bucket - (hours - 1) * HOUR, bucket - (2 * hours - 1) * HOUR
    return sorted({since, previous, since - BASELINE, previous - BASELINE, bucket - (RECENT_HOURS - 1) * HOUR})


def crossing_ips(hours: int, first: datetime, last: datetime, ip_id: int | None = None) -> set[int]:
    """The IPs (or only ``ip_id``) whose rows change as the window's current hour moves from ``first`` to
    ``last``."""
    buckets: set[datetime] = set()
    at = first
    while at < last:
        buckets.update(crossing_hours(hours, at))
        at += HOUR
    if not buckets:
        return set()
    query = IpStatsHourly.select(IpStatsHourly.ip_id).distinct().where(IpStatsHourly.hour_bucket.in_(sorted(buckets)))
    if ip_id is not None:
        query = query.where(IpStatsHourly.ip_id == ip_id)
    return {i for (i,) in tuples(query)}


def mark_pending(ip_id: int, changed: Iterable[datetime] | None, crawled_at: float, now: float,
                 windows: Sequence[int]) -> None:
    """Mark the IP's windows a result touched pending, in the result's transaction: those reaching the latest hour
    it changed (its crawl's hour, the hours whose events changed), and all of them when it holds the IP's newest
    on-sale total (the supply). A window only slides forward, so one it does not reach now it never will."""
    latest = max([hour_bucket(crawled_at), *(changed or ())])
    touched = [h for h in windows if (to_timestamp(latest) or 0.0) >= window_reach(h, now)]
    if len(touched) < len(windows) and not CrawlSearchTotal.select().where(
            (CrawlSearchTotal.ip_id == ip_id) & (CrawlSearchTotal.status == "on_sale")
            & (CrawlSearchTotal.crawled_at > crawled_at)).exists():
        touched = list(windows)
    if touched:
        _mark([ip_id], touched)


def _mark(ip_ids: Sequence[int], windows: Sequence[int]) -> None:
    """Mark these IPs' rows of these windows pending; a row already pending gets the next generation of its mark."""
    rows = [{"ip_id": i, "hours": h} for h in windows for i in ip_ids]
    for start in range(0, len(rows), 500):
        on_conflict_update(IpWindowPending.insert_many(rows[start:start + 500]),
                           [IpWindowPending.hours, IpWindowPending.ip_id],
                           update={IpWindowPending.generation: IpWindowPending.generation + 1}).execute()


_MARK_PREFIX = "window_rows_"
_VERSION_MARK = "window_rows:version"


def _mark_name(hours: int) -> str:
    return f"{_MARK_PREFIX}{hours}h"


def rolled_to(hours: int) -> datetime | None:
    """The hour the window's rows were rolled to (None: never built)."""
    mark = StorageMark.get_or_none(StorageMark.name == _mark_name(hours))
    return None if mark is None else naive_utc(mark.value)


#: The shape of the rows' stored measures: raised when a version adds to them or changes how they are computed (2:
#: intervals; 3: why a measure is insufficient; 4: long windows' time-to-sell intervals, momentum's interval with the
#: heats' covariance), so ``db init`` has rows of an earlier version built anew.
ROWS_VERSION = 4


def ensure_current_version() -> bool:
    """Have every window's rows built anew if they were written by an earlier ``ROWS_VERSION`` (``db init``);
    returns whether they were."""
    mark = StorageMark.get_or_none(StorageMark.name == _VERSION_MARK)
    if mark is not None and int(mark.value) == ROWS_VERSION:
        return False
    rebuild_all()
    on_conflict_update(StorageMark.insert(name=_VERSION_MARK, value=ROWS_VERSION), [StorageMark.name],
                       preserve=[StorageMark.value]).execute()
    return True


def rebuild_all() -> None:
    """Have every window's rows built anew by the next roll (``db init`` after the rows gained a column: the
    stored rows predate it), read meanwhile as never built: computed on the spot."""
    StorageMark.delete().where(StorageMark.name.startswith(_MARK_PREFIX)).execute()


def _set_rolled_to(hours: int, bucket: datetime) -> None:
    on_conflict_update(StorageMark.insert(name=_mark_name(hours), value=to_timestamp(bucket)), [StorageMark.name],
                       preserve=[StorageMark.value]).execute()


def stale_ips(hours: int, now: float) -> set[int] | None:
    """The IPs whose stored rows of the window are not current at ``now`` (pending, or changed by the hours the
    rows were not rolled through yet); None when the rows cannot be read (never built, rolled past ``now``, or
    more than ``MAX_LAG_HOURS`` behind)."""
    current, rolled = hour_bucket(now), rolled_to(hours)
    if rolled is None or rolled > current or current - rolled > MAX_LAG_HOURS * HOUR:
        return None
    pending = {i for (i,) in tuples(IpWindowPending.select(IpWindowPending.ip_id)
                                    .where(IpWindowPending.hours == hours))}
    return pending | crossing_ips(hours, rolled, current)


def compute(ip_ids: Sequence[int], hours: int, now: float) -> dict[int, tuple[WindowMeasures, JsonObject]]:
    """The window's measures and outflow sparkline (as stored: ``{"since": …, "line": […]}``) of each of these IPs
    that has data (the others have no row, as they have no place on the board)."""
    measures = window_measures(list(ip_ids), hours, now, detail_from=_detail(now)) if ip_ids else {}
    since = hour_bucket(now) - (hours - 1) * HOUR
    lines = outflow_sparklines(list(measures), since, hours)
    return {i: (m, {"since": to_timestamp(since), "line": lines[i]}) for i, m in measures.items()}


def _line(stored: JsonObject, hours: int, since: datetime, start: float) -> list[int]:
    """A stored sparkline as of the window starting at ``since`` (``start`` in Unix seconds): as stored when the
    rows were rolled to its hour (the usual case; shifting every IP's line by nothing cost a third of a cold
    board's time at 10,000 IPs)."""
    if stored["since"] == start:
        return list(stored["line"])
    return shift_sparkline(stored["line"], naive_utc(stored["since"]), since, hours)


def _stored_row(ip_id: int, hours: int, now: float, m: WindowMeasures, line: JsonObject) -> JsonObject:
    """The ``ip_window_measures`` row of one IP's window measures ``m`` and outflow sparkline ``line``: the row's
    measures and every measure as JSON, and the columns the boards sort by."""
    board = RowMeasures.of(m)
    return {"ip_id": ip_id, "hours": hours, "computed_at": now, "row": json.dumps(board.to_json()),
            "measures": json.dumps(m.to_json()), "sparkline": json.dumps(line),
            **{c: board.sort_value(c) for c in SORT_COLUMNS}}


def _store(ip_ids: Sequence[int], hours: int, now: float,
           computed: dict[int, tuple[WindowMeasures, JsonObject]]) -> None:
    """Store the computed rows of these IPs' window (delete those without data); inside a write transaction."""
    rows = [_stored_row(i, hours, now, m, line) for i, (m, line) in computed.items()]
    if rows:
        on_conflict_update(IpWindowMeasures.insert_many(rows), [IpWindowMeasures.hours, IpWindowMeasures.ip_id],
                           preserve=[getattr(IpWindowMeasures, c) for c in rows[0] if c not in ("ip_id", "hours")]
                           ).execute()
    gone = [i for i in ip_ids if i not in computed]
    if gone:
        IpWindowMeasures.delete().where((IpWindowMeasures.hours == hours)
                                        & IpWindowMeasures.ip_id.in_(gone)).execute()


def _roll(hours: int, now: float) -> bool:
    """Bring the window's rows to the current hour: mark the IPs the hours since changed pending (or, never built
    or too far behind, every IP). Returns whether the rows were rebuilt whole."""
    current = hour_bucket(now)
    with write_transaction():
        rolled = rolled_to(hours)
        if rolled is not None and rolled == current:
            return False
        if rolled is None or rolled > current or current - rolled > MAX_LAG_HOURS * HOUR:
            ips = [i for (i,) in tuples(IpMetadata.select(IpMetadata.id))]
        else:
            ips = sorted(crossing_ips(hours, rolled, current))
        _mark(ips, [hours])
        _set_rolled_to(hours, current)
        return rolled is None


def _pending_chunk(hours: int, now: float, after: int) -> list[tuple[int, int]]:
    """The pending IPs of the window past ``after`` computed together next, with their marks' generations: up to
    ``CHUNK`` of them, fewer where their listing events in the window would exceed ``CHUNK_EVENTS`` (one at least)."""
    marks = [(i, g) for i, g in tuples(
        IpWindowPending.select(IpWindowPending.ip_id, IpWindowPending.generation)
        .where((IpWindowPending.hours == hours) & (IpWindowPending.ip_id > after))
        .order_by(IpWindowPending.ip_id).limit(CHUNK))]
    if len(marks) < 2:
        return marks
    events = _events(hours, now, [i for i, _ in marks])
    total = 0
    for taken, (ip_id, _) in enumerate(marks):
        total += events.get(ip_id, 0)
        if total > CHUNK_EVENTS:
            return marks[:max(1, taken)]
    return marks


def _events(hours: int, now: float, ip_ids: list[int]) -> dict[int, int]:
    """Each IP's listing events the window's computation reads (its hourly rows' inflow and outflow from the
    window's first listings kept: the cohort's start, or the detail horizon where the listings before are pruned)."""
    w = Window(hours, now, _detail(now))
    since = w.cohort_since if w.detail_from is None else max(w.cohort_since, hour_bucket(w.detail_from))
    return {i: int(n or 0) for i, n in tuples(
        IpStatsHourly.select(IpStatsHourly.ip_id, peewee.fn.SUM(IpStatsHourly.inflow + IpStatsHourly.outflow))
        .where(IpStatsHourly.ip_id.in_(ip_ids) & (IpStatsHourly.hour_bucket >= since))
        .group_by(IpStatsHourly.ip_id))}


def update(windows: Sequence[int], now: float) -> dict[int, int]:
    """The maintenance pass (``refresh_leaderboards``): roll each window's rows to the current hour, then recompute
    its pending rows, a chunk at a time (``_pending_chunk``), each IP once (one marked again meanwhile waits for the
    next pass; a kill mid-pass loses nothing: the marks stay). Returns the rows recomputed by window."""
    done = {}
    for hours in windows:
        # a result marking an IP while the roll or a chunk's write holds the marks can make MySQL/MariaDB roll one
        # of them back as a deadlock's victim: that transaction is then run again (it was rolled back whole)
        retrying_deadlocks(partial(_roll, hours, now))
        done[hours] = 0
        after = -1
        while chunk := _update_chunk(hours, now, after):
            done[hours] += len(chunk)
            after = chunk[-1]
    if any(done.values()):
        logger.info("window rows: recomputed %s", ", ".join(f"{n} of {h} h" for h, n in done.items() if n))
    return done


def _update_chunk(hours: int, now: float, after: int) -> list[int]:
    """Recompute the next chunk of pending IPs' rows of the window past ``after``; returns those IPs (none: nothing
    pending). The marks and the facts are read in one snapshot and the rows computed there, without the write
    lock (on SQLite the results would wait for it); the rows are stored and the marks still at the generation
    read removed in a write transaction of their own."""
    with database.atomic():  # read only: one snapshot for the marks and the facts the rows are computed from
        marks = _pending_chunk(hours, now, after)
        if not marks:
            return []
        ip_ids = [i for i, _ in marks]
        computed = compute(ip_ids, hours, now)

    def write() -> None:
        with write_transaction():
            _store(ip_ids, hours, now, computed)
            by_generation: dict[int, list[int]] = {}
            for ip_id, generation in marks:
                by_generation.setdefault(generation, []).append(ip_id)
            for generation, ips in by_generation.items():
                IpWindowPending.delete().where((IpWindowPending.hours == hours)
                                               & (IpWindowPending.generation == generation)
                                               & IpWindowPending.ip_id.in_(ips)).execute()

    retrying_deadlocks(write)
    return ip_ids


def _name_join(query: Any) -> Any:
    return query.join(IpMetadata, on=(IpMetadata.id == IpWindowMeasures.ip_id))


def board_rows(hours: int, now: float) -> tuple[list[JsonObject], dict[int, list[int]]] | None:
    """Every IP's leaderboard row of the window (``IpRow`` as JSON: the stored rows are read as they are) and
    outflow sparkline, from the rows, the stale ones computed on the spot; None when the rows cannot be read."""
    stale = stale_ips(hours, now)
    if stale is None:
        return None
    rows, lines = [], {}
    since = hour_bucket(now) - (hours - 1) * HOUR
    start = to_timestamp(since)
    # raw: integers and text, nothing to convert (peewee's per-value conversion was a fifth of a cold board)
    for ip_id, keyword, name, row, line in raw(_name_join(
            IpWindowMeasures.select(IpWindowMeasures.ip_id, IpMetadata.keyword, IpMetadata.display_name,
                                    IpWindowMeasures.row, IpWindowMeasures.sparkline))
            .where(IpWindowMeasures.hours == hours).order_by(IpWindowMeasures.ip_id)):
        if ip_id not in stale:
            rows.append({"ip_id": ip_id, "keyword": keyword, "name": name, **fast_json.loads(row)})
            lines[ip_id] = _line(fast_json.loads(line), hours, since, start)
    for row, line in _fresh(stale, hours, now):
        rows.append(row.to_json())
        lines[row.ip_id] = line["line"]
    return rows, lines


def _fresh(stale: set[int], hours: int, now: float) -> list[tuple[IpRow, JsonObject]]:
    """The rows of the ``stale`` IPs with data, computed, each with its sparkline as stored."""
    fresh = compute(sorted(stale), hours, now)
    names = {i: (k, n) for i, k, n in tuples(
        IpMetadata.select(IpMetadata.id, IpMetadata.keyword, IpMetadata.display_name)
        .where(IpMetadata.id.in_(list(fresh))))} if fresh else {}
    return [(IpRow(i, *names[i], RowMeasures.of(m)), line) for i, (m, line) in fresh.items() if i in names]


def top(by: str, hours: int, now: float, limit: int | None, ascending: bool) -> list[JsonObject] | None:
    """The first ``limit`` (None: all) IPs ranked by ``by`` over the window (rank 1 first; ties by outflow, then
    IP id), insufficient ones left out: sorted and cut by the database, the stale rows computed on the spot and
    merged in. None when the rows cannot be read."""
    stale = stale_ips(hours, now)
    if stale is None:
        return None
    column = getattr(IpWindowMeasures, by)
    query = (_name_join(IpWindowMeasures.select(IpWindowMeasures.ip_id, IpMetadata.keyword, IpMetadata.display_name,
                                                IpWindowMeasures.row))
             .where((IpWindowMeasures.hours == hours) & column.is_null(False))
             .order_by(column.asc() if ascending else column.desc(),
                       peewee.fn.COALESCE(IpWindowMeasures.outflow, 0).desc(), IpWindowMeasures.ip_id))
    if stale:
        query = query.where(IpWindowMeasures.ip_id.not_in(sorted(stale)))
    if limit is not None:
        query = query.limit(limit)
    rows = [{"ip_id": i, "keyword": k, "name": n, **fast_json.loads(row)} for i, k, n, row in tuples(query)]
    if stale:
        rows += [row.to_json() for row, _ in _fresh(stale, hours, now) if row.measures.sort_value(by) is not None]
        sign = 1 if ascending else -1
        rows.sort(key=lambda r: (sign * r[by], -(r["outflow"] or 0), r["ip_id"]))
        rows = rows[:limit]
    return rows


def ip_measures(ip_id: int, hours: int, now: float) -> WindowMeasures | None:
    """The IP's measures over the window from its row (all insufficient when it has none: no data), computed on the
    spot when stale; None when the rows cannot be read."""
    current, rolled = hour_bucket(now), rolled_to(hours)
    if rolled is None or rolled > current or current - rolled > MAX_LAG_HOURS * HOUR:
        return None
    pending = IpWindowPending.select().where((IpWindowPending.hours == hours)
                                             & (IpWindowPending.ip_id == ip_id)).exists()
    if pending or ip_id in crossing_ips(hours, rolled, current, ip_id):
        computed = window_measures([ip_id], hours, now, detail_from=_detail(now)).get(ip_id)
    else:
        row = (IpWindowMeasures.select(IpWindowMeasures.measures)
               .where((IpWindowMeasures.hours == hours) & (IpWindowMeasures.ip_id == ip_id)).first())
        computed = None if row is None else WindowMeasures.from_json(fast_json.loads(row.measures))
    return computed or window_measures([ip_id], hours, now, empty=True, detail_from=_detail(now))[ip_id]
