"""The IP page's per-day series over 90 days (``--days``), with ``--ips`` IPs (1,000 by default; ``--ips 10000`` in
docs/scaling.md) × 90 days of market (the leaderboard benchmark's market, ``bench.replicate``): read from the daily
rows (``ReadSide.ip_days``) against computed from the hourly rows (what the series costs without daily rows), each
against the floor of the IP's daily rows read with raw SQL in the same run. Also a rollup pass after every day of
the sampled IPs changed (the fill rolled up the rest).

What grows with what: the series and its floor grow with the sampled IPs (50) × the days asked, through the
``(ip_id, day)`` index: not with the other IPs; computed from the hourly rows, with those IPs' hours and sale
events in the range. The rollup pass grows with the days marked changed (the IPs whose data changed × the days
their results touched) × each day's hours and sales, not with the IPs at rest."""

from __future__ import annotations

import time
from datetime import timedelta
from pathlib import Path

from lib.core.clock import FrozenClock, naive_utc
from lib.core.db import database
from lib.market.daily import compute_days, roll_up_pending
from lib.market.read_side import ReadSide
from lib.market.statistics import day_of, tuples
from models import IpDayPending, IpMetadata, IpStatsDaily, IpStatsHourly

from .common import best_of, load_average, market_options, report
from .leaderboard import T_END, benchmark_market

SAMPLE = 50  # IPs read per measurement


def raw_days(ip_ids: list[int], first: str) -> None:
    p = database.param
    for ip_id in ip_ids:
        database.execute_sql(f"SELECT * FROM ip_stats_daily WHERE ip_id = {p} AND day >= {p} ORDER BY day",  # noqa: S608
                             (ip_id, first)).fetchall()


def mark_all_days(ip_ids: list[int]) -> int:
    """Mark every day of these IPs pending, as results landing on each of them would: the rollup recomputes them."""
    days = {(i, day_of(b)) for i, b in tuples(IpStatsHourly.select(IpStatsHourly.ip_id, IpStatsHourly.hour_bucket)
                                              .where(IpStatsHourly.ip_id.in_(ip_ids)))}
    with database.atomic():
        rows = [{"ip_id": i, "day": d} for i, d in sorted(days)]
        for start in range(0, len(rows), 500):
            IpDayPending.insert_many(rows[start:start + 500]).on_conflict_ignore().execute()
    return len(days)


def run(ips: int = 1000, days: int = 90, keep: Path | str | None = None) -> None:
    print(f"days: the {days}-day per-day series of {min(SAMPLE, ips)} IPs, {ips:,} IPs × {days} days of market "
          f"(floor: their daily rows by raw SQL); load average {load_average()}")
    with benchmark_market(keep, ips, days) as (settings, _):
        now = T_END - 1
        sample = [i.id for i in IpMetadata.select(IpMetadata.id).order_by(IpMetadata.id).limit(SAMPLE)]
        marked = mark_all_days(sample)
        started = time.perf_counter()
        rolled = roll_up_pending(now)
        spent = time.perf_counter() - started
        print(f"  rollup pass after every day of {len(sample)} IPs changed: {rolled:,} days rolled up in {spent:.1f} s "
              f"({spent / max(rolled, 1) * 1000:.1f} ms a day; {marked - rolled} today's, left pending; "
              f"{IpStatsDaily.select().count():,} daily rows in all)")
        side = ReadSide(settings, None, FrozenClock(now))
        last = day_of(naive_utc(now))
        first = last - timedelta(days=days - 1)
        floor = best_of(lambda: raw_days(sample, f"{first:%Y-%m-%d %H:%M:%S}"), 5)

        def from_daily() -> None:
            for ip_id in sample:
                side.ip_days(ip_id, days)

        def from_hourly() -> None:
            for ip_id in sample:
                compute_days(ip_id, first, last)

        assert all(len(side.ip_days(i, days)["series"]) == len(compute_days(i, first, last)) for i in sample[:3])
        report(f"{days}-day series of {len(sample)} IPs, from daily rows", best_of(from_daily, 5), floor)
        report(f"{days}-day series of {len(sample)} IPs, from hourly rows", best_of(from_hourly, 3), floor)
        print(f"  load average at the end: {load_average()}")
        database.close()


def main(argv: list[str] | None = None) -> int:
    keep, ips, days = market_options(argv or [], "python -m bench days", 1000, 90)
    run(ips=ips, days=days, keep=keep)
    return 0
