"""The IP page's per-day series over 90 days, with 1,000 IPs × 90 days of market (the leaderboard benchmark's
synthetic market): read from the daily rows (``ReadSide.ip_days``) against computed from the hourly rows (what
the series costs without daily rows), each against the floor of the IP's daily rows read with raw SQL in the same
run. Also the first rollup pass over the whole market (every day of every IP)."""

from __future__ import annotations

import sqlite3
import time
from datetime import timedelta
from pathlib import Path

from lib.core.clock import FrozenClock, naive_utc
from lib.core.db import database
from lib.market.daily import compute_days, roll_up_pending
from lib.market.read_side import ReadSide
from lib.market.statistics import day_of
from models import IpMetadata, IpStatsDaily

from .common import best_of, load_average, market_options, report
from .leaderboard import T_END, benchmark_market

DAYS = 90
SAMPLE = 50  # IPs read per measurement


def raw_days(path: str, ip_ids: list[int], first: str) -> None:
    with sqlite3.connect(path) as conn:
        for ip_id in ip_ids:
            conn.execute("SELECT * FROM ip_stats_daily WHERE ip_id = ? AND day >= ? ORDER BY day",
                         (ip_id, first)).fetchall()


def run(ips: int = 1000, days: int = 90, keep: Path | None = None) -> None:
    print(f"days: the {DAYS}-day per-day series of {SAMPLE} IPs, {ips:,} IPs × {days} days of market (floor: their "
          f"daily rows by raw SQL); load average {load_average()}")
    with benchmark_market(keep, ips, days) as (settings, path):
        now = T_END - 1
        started = time.perf_counter()
        rolled = roll_up_pending(now)
        print(f"  rollup pass: {rolled:,} days rolled up in {time.perf_counter() - started:.1f} s "
              f"({IpStatsDaily.select().count():,} daily rows)")
        side = ReadSide(settings, None, FrozenClock(now))
        sample = [i.id for i in IpMetadata.select(IpMetadata.id).order_by(IpMetadata.id).limit(SAMPLE)]
        last = day_of(naive_utc(now))
        first = last - timedelta(days=DAYS - 1)
        floor = best_of(lambda: raw_days(path, sample, f"{first:%Y-%m-%d %H:%M:%S}"), 5)

        def from_daily() -> None:
            for ip_id in sample:
                side.ip_days(ip_id, DAYS)

        def from_hourly() -> None:
            for ip_id in sample:
                compute_days(ip_id, first, last)

        assert all(len(side.ip_days(i, DAYS)["series"]) == len(compute_days(i, first, last)) for i in sample[:3])
        report(f"{DAYS}-day series of {SAMPLE} IPs, from daily rows", best_of(from_daily, 5), floor)
        report(f"{DAYS}-day series of {SAMPLE} IPs, from hourly rows", best_of(from_hourly, 3), floor)
        print(f"  load average at the end: {load_average()}")
        database.close()


def main(argv: list[str] | None = None) -> int:
    keep, ips = market_options(argv or [], "python -m bench days", 1000)
    run(ips=ips, keep=keep)
    return 0
