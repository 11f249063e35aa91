"""``python -m bench forecast_refresh [--ips 1000] [--goods 0]``: what refitting the stored forecasts costs
(docs/concepts/forecasts.md, "Kept current"), through ``lib.forecast.refresh`` on a SQLite database of ``--ips`` IPs
× 120 days of daily rows (sales and new listings with a weekly cycle, drawn from Poisson counts of levels spread
over three orders of magnitude, and a sold-price median), and with ``--goods N`` the daily rows of N goods types
of each IP (the IP's level shared among them as 1 / rank, the shares' sum 1: a few types sell most).

Three passes: every IP marked changed with a new closed day (what the day's close costs: the IPs' histories read,
every series fitted, its rows written); every IP marked again without a change (the floor of a pass: marks and
histories read, fingerprints compared, nothing fitted); a tenth of the IPs with a new day (a late result's day).
What grows with what: a pass grows with the IPs marked, not with the IPs stored; the fits dominate, and grow with
the series whose history changed (an IP's three and its segments').
"""

from __future__ import annotations

import random
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

from lib.core.db import bind_database, insert_rows, write_transaction
from lib.forecast.refresh import refresh
from lib.market.daily import mark_daily_changed
from lib.market.schema import create_tables
from models import IpForecast, IpMetadata, IpStatsDaily, SegmentDailyFlow, SegmentForecast

DAYS = 120
FIRST = datetime(2026, 1, 5)  # a Monday, naive UTC
WEEK = (1.0, 0.9, 0.85, 0.9, 1.0, 1.3, 1.4)
USAGE = "usage: python -m bench forecast_refresh [--ips 1000] [--goods 0]"


def poisson(rng: random.Random, mean: float) -> int:
    # Knuth's for small means, the normal approximation above (the counts' shape is all that matters here)
    if mean > 50:
        return max(0, round(rng.gauss(mean, mean ** 0.5)))
    limit, k, p = 2.718281828459045 ** -mean, 0, 1.0
    while p > limit:
        k += 1
        p *= rng.random()
    return k - 1


def day_rows(ip_id: int, level: float, days: range, rng: random.Random) -> list[dict[str, object]]:
    rows = []
    for d in days:
        sold = poisson(rng, level * WEEK[d % 7])
        rows.append({"ip_id": ip_id, "day": FIRST + timedelta(days=d), "hours": 24,
                     "inflow": poisson(rng, 2 * level * WEEK[d % 7]), "outflow": sold, "sample_count": sold,
                     "median_price": round(rng.gauss(2500, 150), 2) if sold >= 3 else None})
    return rows


def segment_rows(ip_id: int, level: float, goods: int, days: range, rng: random.Random) -> list[dict[str, object]]:
    """The IP's ``goods`` goods types' daily rows (module docstring); a day without a listing of a type has none."""
    total = sum(1 / k for k in range(1, goods + 1))
    rows = []
    for k in range(1, goods + 1):
        share = level / k / total
        for d in days:
            sold, listed = poisson(rng, share * WEEK[d % 7]), poisson(rng, 2 * share * WEEK[d % 7])
            if sold or listed:
                rows.append({"ip_id": ip_id, "kind": "goods", "key": f"type{k}", "day": FIRST + timedelta(days=d),
                             "inflow": listed, "outflow": sold, "sample_count": sold,
                             "median_price": round(rng.gauss(2500, 300), 2) if sold else None})
    return rows


def mark(ip_ids: list[int]) -> None:
    with write_transaction():
        for ip_id in ip_ids:
            mark_daily_changed(ip_id)


def main(argv: list[str] | None = None) -> int:
    args = list(argv or [])
    values = {"--ips": 1000, "--goods": 0}
    while args:
        name = args.pop(0)
        if name not in values or not args or not args[0].isdigit():
            raise SystemExit(USAGE)
        values[name] = int(args.pop(0))
    ips, goods = values["--ips"], values["--goods"]
    if ips < 10:
        raise SystemExit(USAGE)
    rng = random.Random(1)
    levels = {i: 10 ** rng.uniform(-0.5, 2.5) for i in range(1, ips + 1)}  # 0.3 to 300 sales a day
    with tempfile.TemporaryDirectory() as tmp:
        bind_database(f"sqlite:///{Path(tmp) / 'forecast.sqlite3'}")
        create_tables()
        with write_transaction():
            insert_rows(IpMetadata, [{"id": i, "keyword": f"ip {i}", "display_name": f"ip {i}", "created_at": FIRST,
                                      "updated_at": FIRST} for i in levels])
            for i, level in levels.items():
                insert_rows(IpStatsDaily, day_rows(i, level, range(DAYS - 1), rng))
                insert_rows(SegmentDailyFlow, segment_rows(i, level, goods, range(DAYS - 1), rng))
        closed = FIRST + timedelta(days=DAYS)
        now = closed.replace(tzinfo=timezone.utc).timestamp() + 3600
        print(f"forecast_refresh: {ips} IPs x {DAYS} days of daily rows (SQLite), three measures each"
              + (f", and {goods} goods types each" if goods else ""))

        def timed(label: str, marked: list[int], at: float) -> None:
            mark(marked)
            started = time.perf_counter()
            done = refresh(at)
            took = time.perf_counter() - started
            print(f"  {label}: {len(marked)} IPs marked, {done.refit} series refit, {done.unchanged} unchanged: "
                  f"{took:.1f} s ({1000 * took / len(marked):.1f} ms an IP marked)")

        with write_transaction():
            for i, level in levels.items():
                insert_rows(IpStatsDaily, day_rows(i, level, range(DAYS - 1, DAYS), rng))
                insert_rows(SegmentDailyFlow, segment_rows(i, level, goods, range(DAYS - 1, DAYS), rng))
        timed("a day closes, every IP changed", list(levels), now)
        if goods:
            fitted = SegmentForecast.select(SegmentForecast.ip_id, SegmentForecast.key, SegmentForecast.measure) \
                .distinct().count()
            print(f"    (segment series fitted: {fitted} of {ips * goods * 3}; the rest too thin to forecast)")
        naive = IpForecast.select(IpForecast.ip_id, IpForecast.measure).where(IpForecast.model != "AutoETS") \
            .distinct().count()
        unbounded = IpForecast.select().where(IpForecast.hi95 > 1e300).count()
        print(f"    (series forecast by the naive method, AutoETS's not finite: {naive}; rows not finite: {unbounded})")
        timed("every IP marked again, nothing changed (the floor)", list(levels), now + 60)
        tenth = sorted(rng.sample(sorted(levels), ips // 10))
        with write_transaction():
            for i in tenth:
                IpStatsDaily.update(outflow=IpStatsDaily.outflow + 1).where(
                    (IpStatsDaily.ip_id == i) & (IpStatsDaily.day == FIRST + timedelta(days=DAYS - 2))).execute()
        timed("a tenth of the IPs changed by a late result", tenth, now + 120)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
