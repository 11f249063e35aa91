"""The cost of segments on the read side: the cross-IP board of goods types ("what sells across franchises",
``ReadSide.segments_board``, the "What sells" page's data) over every IP, from a cold cache and from the cache,
for each window up to ``RETENTION_DETAIL``; and one IP's goods types (``ReadSide.segments``, the IP page's table)
for a sample of IPs. Each against its floor in the same run: the rows it reads, fetched raw by the same joins
(every IP's sales and created listings of the window joined to their goods types, the created ones with their
first sale and last sighting), with no aggregation or statistics in Python. Then the memory one cold board of each
window takes: the peak of its Python allocations (tracemalloc) and of SQLite's own above what it held before.

The market is the leaderboard benchmark's (``bench.replicate``: scripted template IPs processed for real, their
rows copied to the other IPs; titles of seven goods nouns), over ``RETENTION_DETAIL`` and the week before it.
``--db PATH`` keeps the filled database for the next run, ``--db mysql://…`` runs on MySQL/MariaDB, ``--ips N``:
the market's size."""

from __future__ import annotations

import time
import tracemalloc
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import peewee

from lib.core.clock import FrozenClock
from lib.core.db import database, is_mysql
from lib.core.redis_client import state_redis
from lib.market.read_side import ReadSide
from lib.market.statistics import hour_start
from lib.market.window_rows import STANDARD_WINDOWS
from lib.market.windows import Window, _by_ip, raw
from lib.segments.stored import GOODS
from models import IpMetadata, ItemSnapshot, ListingEvent, ListingSegment

from .common import load_average, market_options, report
from .leaderboard import T_END, benchmark_market
from .memory import sqlite_peak_reset, sqlite_peak_since

#: Rounds of each cold measurement and its floor, taken in turns (the best of each).
ROUNDS = 3
#: IPs whose own segments are read per measurement (the IP page's table).
SAMPLE = 20


def _joined(ip_ids: Sequence[int] | None, w: Window) -> tuple[int, int]:
    """The window's sales and created listings of these IPs (every IP's when None) with their goods types, the
    created ones with their first sale and last sighting: what the board's computation reads, fetched raw (a few
    IPs' by their own index on SQLite, as the read side does: ``_by_ip``)."""
    # the kinds as stored: ``_by_ip`` puts an expression around the column, which peewee does not convert through
    sold, created = ListingEvent.kind.db_value("sold"), ListingEvent.kind.db_value("created")
    in_segment = ((ListingSegment.ip_id == ListingEvent.ip_id) & (ListingSegment.source_id == ListingEvent.source_id)
                  & (ListingSegment.kind == GOODS))

    def of_ips(query: Any) -> Any:
        if ip_ids is None:
            return query
        return query.where(ListingEvent.ip_id.in_(list(ip_ids)) & (ListingEvent.event_at >= hour_start(w.cohort_since)))

    sales = list(raw(of_ips(ListingEvent.select(ListingSegment.key, ListingEvent.event_at, ListingEvent.price,
                                           ListingEvent.listed_price)
                       .join(ListingSegment, on=in_segment)
                       .where((_by_ip(ListingEvent.kind, ip_ids) == sold)
                              & (ListingEvent.event_at >= w.cohort_start)))))
    sale = ListingEvent.alias()
    created = list(raw(of_ips(ListingEvent.select(ListingSegment.key, ListingEvent.event_at, sale.event_at,
                                             ItemSnapshot.last_seen)
                         .join(ListingSegment, on=in_segment)
                         .switch(ListingEvent)
                         .join(sale, peewee.JOIN.LEFT_OUTER, on=(
                             (sale.ip_id == ListingEvent.ip_id) & (sale.source_id == ListingEvent.source_id)
                             & (sale.kind == "sold") & (sale.occurrence == 0)))
                         .switch(ListingEvent)
                         .join(ItemSnapshot, peewee.JOIN.LEFT_OUTER, on=(
                             (ItemSnapshot.ip_id == ListingEvent.ip_id)
                             & (ItemSnapshot.source_id == ListingEvent.source_id)))
                         .where((_by_ip(ListingEvent.kind, ip_ids) == created)
                                & (ListingEvent.event_at >= w.cohort_start)))))
    return len(sales), len(created)


def run(n_ips: int = 1000, keep: Path | str | None = None) -> int:
    print(f"segments board: goods types across {n_ips:,} IPs, cold cache and cached (floor: the rows they read, "
          f"fetched raw by the same joins); load average {load_average()}", flush=True)
    with benchmark_market(keep, n_ips, 10) as (settings, _):
        print(f"  on {'MySQL/MariaDB' if is_mysql() else 'SQLite'}; {ListingSegment.select().count():,} segment "
              f"rows, {ListingEvent.select().count():,} events in all; load average {load_average()}", flush=True)
        r = state_redis(settings)
        now = T_END - 1
        side = ReadSide(settings, r, FrozenClock(now))
        longest = int(settings.retention_detail // 3600)  # from the events alone (longer reads summaries too)
        windows = sorted({*(h for h in STANDARD_WINDOWS if h <= longest), longest})
        sample = [i for (i,) in IpMetadata.select(IpMetadata.id).order_by(IpMetadata.id).limit(SAMPLE).tuples()]
        cold, floors = dict.fromkeys(windows, float("inf")), dict.fromkeys(windows, float("inf"))
        ip_cold, ip_floors = dict.fromkeys(windows, float("inf")), dict.fromkeys(windows, float("inf"))
        rows: dict[int, tuple[int, int]] = {}
        ip_rows: dict[int, tuple[int, int]] = {}
        types: dict[int, int] = {}
        for _ in range(ROUNDS):  # each window's cold board, its floor, and the sample's, in turns
            for h in windows:
                w = Window(h, now)
                r.flushdb()
                start = time.perf_counter()
                types[h] = len(side.segments_board(h, GOODS)["segments"])
                cold[h] = min(cold[h], time.perf_counter() - start)
                start = time.perf_counter()
                rows[h] = _joined(None, w)
                floors[h] = min(floors[h], time.perf_counter() - start)
                r.flushdb()
                start = time.perf_counter()
                for ip_id in sample:
                    side.segments(ip_id, h, GOODS)
                ip_cold[h] = min(ip_cold[h], time.perf_counter() - start)
                start = time.perf_counter()
                sales = created = 0
                for ip_id in sample:
                    ip_sales, ip_created = _joined([ip_id], w)
                    sales, created = sales + ip_sales, created + ip_created
                ip_rows[h] = (sales, created)
                ip_floors[h] = min(ip_floors[h], time.perf_counter() - start)
        for h in windows:
            sales, created = rows[h]
            print(f"  {h} h: {sales:,} sales and {created:,} listings created in a goods type, {types[h]} types")
            report(f"board --hours {h}, cold", cold[h], floors[h])
            side.segments_board(h, GOODS)  # the cache filled again (the rounds flushed it), then read from it
            start = time.perf_counter()
            side.segments_board(h, GOODS)
            report(f"board --hours {h}, cached", time.perf_counter() - start, floors[h])
        for h in windows:  # one cold board more, its memory measured (tracemalloc slows what it traces)
            r.flushdb()
            before = sqlite_peak_reset()
            tracemalloc.start()
            side.segments_board(h, GOODS)
            python_peak = tracemalloc.get_traced_memory()[1] / 2 ** 20
            tracemalloc.stop()
            after = sqlite_peak_since()
            sqlite = "?" if before is None or after is None else f"{after - before:.1f}"
            print(f"  board --hours {h}, cold: peak {python_peak:.1f} MB of Python allocations (tracemalloc), SQLite's "
                  f"own {sqlite} MB above what it held before")
        for h in windows:
            sales, created = ip_rows[h]
            print(f"  {h} h, {len(sample)} IPs' own: {sales:,} sales and {created:,} listings created in a goods type")
            report(f"{SAMPLE} IPs' own goods types --hours {h}, cold", ip_cold[h], ip_floors[h])
        print(f"  load average at the end: {load_average()}")
        database.close()
        return 0


def main(argv: list[str] | None = None) -> int:
    keep, ips, _ = market_options(argv or [], "python -m bench segments_board", 1000)
    return run(n_ips=ips, keep=keep)
