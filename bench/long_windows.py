"""A 90-day window from the daily summaries against the same window from the per-listing facts
(docs/operating/storage.md, "Long windows"), on the leaderboard benchmark's synthetic market (``--ips``, default 200 IPs
× 97 days): every IP's measures over 2,160 h (``window_measures``, what a cold board computes), first with every
listing's facts kept, then after the listings before the detail horizon (``RETENTION_DETAIL``) were folded into
the daily rows and deleted — what a pruning pass does (``summarize_pruned``; the synthetic market has no
sightings, so the pass's search for dormant listings is replaced by "every fact before the horizon"). Floor, in
the same run: the window's hourly rows and kept events read raw. Also the bytes of the per-listing tables and the
daily rows, before and after, per IP."""

from __future__ import annotations

import time
from collections import defaultdict

from lib.core.clock import naive_utc
from lib.core.db import database, write_transaction
from lib.core.settings import get_settings
from lib.market.daily import summarize_pruned
from lib.market.retention import detail_horizon
from lib.market.statistics import tuples
from lib.market.windows import kind_measures, window_measures
from lib.segments.stored import GOODS
from models import IpStatsDaily, ItemSnapshot, ListingEvent, SegmentStatsDaily

from .common import best_of, load_average, market_options, report
from .leaderboard import T_END, benchmark_market, floor_once
from .load import table_sizes

DAYS = 90
TABLES = ("listing_events", "item_snapshots", "ip_stats_daily", "segment_stats_daily")


def fold_before(limit: float) -> tuple[int, int]:
    """Summarize and delete, IP by IP, the listings whose every event lies before ``limit``; (listings, days)."""
    last: dict[tuple[int, str], float] = defaultdict(float)
    for ip_id, sid, at in tuples(ListingEvent.select(ListingEvent.ip_id, ListingEvent.source_id,
                                                     ListingEvent.event_at)):
        last[ip_id, sid] = max(last[ip_id, sid], at)
    by_ip: dict[int, list[str]] = defaultdict(list)
    for (ip_id, sid), at in last.items():
        if at < limit:
            by_ip[ip_id].append(sid)
    listings = days = 0
    for ip_id, sids in by_ip.items():
        with write_transaction():
            for start in range(0, len(sids), 500):
                chunk = sids[start:start + 500]
                days += summarize_pruned(ip_id, chunk)
                ListingEvent.delete().where((ListingEvent.ip_id == ip_id) & ListingEvent.source_id.in_(chunk)).execute()
                ItemSnapshot.delete().where((ItemSnapshot.ip_id == ip_id) & ItemSnapshot.source_id.in_(chunk)).execute()
        listings += len(sids)
    return listings, days


def sizes(ips: int) -> str:
    got = table_sizes()
    return ", ".join(f"{t} {got[t][1] / ips / 1024:,.0f} KB ({got[t][0] / ips:,.0f} rows)" for t in TABLES)


def run(ips: int = 200, keep=None) -> int:
    hours = DAYS * 24
    print(f"long_windows: {ips:,} IPs, the {DAYS}-day window of every IP from the per-listing facts and from the "
          f"daily summaries (floor: the window's rows read raw); load average {load_average()}")
    with benchmark_market(keep, ips, DAYS) as _:
        now = T_END - 1
        limit = detail_horizon(get_settings(), now)
        kept = get_settings().retention_detail / 86400
        print(f"  detail horizon {naive_utc(limit):%Y-%m-%d} (RETENTION_DETAIL {kept:g} d)")
        print(f"  per IP before: {sizes(ips)}")
        detail = best_of(lambda: window_measures(None, hours, now, detail_from=limit), 3)
        floor = best_of(lambda: floor_once(hours), 3)
        report(f"{hours} h window, every IP, from the per-listing facts (s)", detail, floor)
        before = window_measures(None, hours, now, detail_from=limit)
        started = time.perf_counter()
        listings, days = fold_before(limit)
        print(f"  folded {listings:,} listings into {days:,} daily rows in {time.perf_counter() - started:.1f} s")
        print(f"  per IP after:  {sizes(ips)}")
        summarized = best_of(lambda: window_measures(None, hours, now, detail_from=limit), 3)
        floor_after = best_of(lambda: floor_once(hours), 3)
        report(f"{hours} h window, every IP, from the daily summaries (s)", summarized, floor_after)
        report("  the same, against the per-listing window", summarized, detail)
        after = window_measures(None, hours, now, detail_from=limit)
        worst = max((abs(after[i]["median_price"]["value"] - m["median_price"]["value"]) / m["median_price"]["value"]
                     for i, m in before.items() if m["median_price"]["value"]), default=0.0)
        same = sum(after[i]["sell_through"] == m["sell_through"] and after[i]["heat"] == m["heat"]
                   for i, m in before.items())
        print(f"  sell-through and heat equal for {same}/{len(before)} IPs; median price off by at most "
              f"{worst:.3%} (bound 0.5 %)")
        rows = IpStatsDaily.select().where(IpStatsDaily.pruned_created > 0).count()
        segment_rows = SegmentStatsDaily.select().count()
        print(f"  {rows:,} daily rows carry summaries; {segment_rows:,} segments' daily rows "
              f"({segment_rows / max(rows, 1):.1f} per IP's day)")
        started = time.perf_counter()
        board = kind_measures(GOODS, 30 * 24, now, detail_from=limit)
        print(f"  the 30-day board of goods types across every IP, past the detail horizon from the segments' "
              f"summaries: {len(board)} types in {time.perf_counter() - started:.1f} s")
        database.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    keep, ips, _ = market_options(argv or [], "python -m bench long_windows", 200)
    return run(ips, keep)
