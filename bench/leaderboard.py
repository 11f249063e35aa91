"""The leaderboard over 1,000 IPs × 30 days from a cold cache (docs/concepts/measures.md): every measure of every
IP over the whole window, then ranked. Floor, measured in the same run: the same rows fetched raw by the same
queries' plain equivalents (no aggregation or statistics in Python). The stated budget: 30 s on SQLite for the
30-day window from a cold cache (then the cache answers in milliseconds until a result of an IP invalidates it);
the 24-hour window is measured too.

The market is synthetic: each IP-hour has a tracked row, and on average half a listing created and half a sale
(360,000 of each in the window), with snapshots and on-sale and sold search totals for a crawl every two hours,
and a week before the window for the heat's baseline."""

from __future__ import annotations

import random
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

from lib.core.clock import FrozenClock, naive_utc
from lib.core.db import bind_database, database
from lib.core.redis_client import state_redis
from lib.core.schema import create_tables
from lib.core.settings import Settings
from lib.market import window_rows
from lib.market.read_side import ReadSide
from lib.market.windows import raw
from models import (
    CrawlSearchTotal,
    IpMetadata,
    IpStatsHourly,
    IpWindowMeasures,
    IpWindowPending,
    ItemSnapshot,
    ListingEvent,
    StorageMark,
)

from .common import bench_settings, filled, load_average, mark_filled, market_options, report

H = 3600.0
T_END = 1_800_000_000.0 - (1_800_000_000.0 % H)
#: Seconds the cold leaderboard may take at the default size.
BUDGET = 30.0


def _sql(value):
    return str(value) if isinstance(value, datetime) else value


def fill(n_ips: int, days: int, seed: int = 7) -> None:
    rng = random.Random(seed)
    start = T_END - days * 24 * H
    now = naive_utc(T_END)
    IpMetadata.insert_many([{"keyword": f"IP {k}", "display_name": f"IP {k}", "weight": 1.0, "active": True,
                             "created_at": now, "updated_at": now} for k in range(n_ips)]).execute()
    ids = [ip.id for ip in IpMetadata.select(IpMetadata.id)]
    hourly, events, snaps, totals = [], [], [], []

    database.execute_sql("PRAGMA synchronous = OFF")  # set-up: a crash mid-fill leaves no .filled stamp anyway
    database.execute_sql("PRAGMA journal_mode = MEMORY")

    def flush(force: bool = False) -> None:
        for model, rows in ((IpStatsHourly, hourly), (ListingEvent, events), (ItemSnapshot, snaps),
                            (CrawlSearchTotal, totals)):
            if rows and (force or len(rows) >= 100_000):
                # plain executemany: the fill is set-up, not what is measured
                fields = list(rows[0])
                columns = ", ".join(model._meta.fields[f].column_name for f in fields)
                marks = ", ".join("?" for _ in fields)
                with database.atomic():
                    database.cursor().executemany(
                        f"INSERT INTO {model._meta.table_name} ({columns}) VALUES ({marks})",  # noqa: S608
                        [tuple(_sql(row.get(f)) for f in fields) for row in rows])
                rows.clear()

    for ip_id in ids:
        busy = rng.uniform(0.2, 1.0)
        for h in range(days * 24):
            at = start + h * H
            inflow = sum(rng.random() < busy / 2 for _ in range(2))
            outflow = sum(rng.random() < busy / 2 for _ in range(2))
            prices = []
            for k in range(inflow):
                sid = f"c{ip_id}-{h}-{k}"
                created = at + rng.uniform(0, H)
                events.append({"ip_id": ip_id, "source_id": sid, "kind": "created", "occurrence": 0,
                               "event_at": created, "hour_bucket": naive_utc(at), "price": None,
                               "listed_price": None})
                snaps.append({"ip_id": ip_id, "source_id": sid, "title": "", "price": 1000, "status": "on_sale",
                              "image_url": "", "item_url": "", "first_seen": created,
                              "last_seen": min(created + 20 * H, T_END), "created": created})
            for k in range(outflow):
                price = rng.randrange(300, 9000)
                prices.append(price)
                sid = f"c{ip_id}-{h - 5}-{k}" if h >= 5 else f"s{ip_id}-{h}-{k}"
                events.append({"ip_id": ip_id, "source_id": sid, "kind": "sold", "occurrence": 0,
                               "event_at": at + rng.uniform(0, H), "hour_bucket": naive_utc(at),
                               "price": price, "listed_price": price + rng.choice([0, 0, 200])})
            hourly.append({"ip_id": ip_id, "hour_bucket": naive_utc(at), "inflow": inflow, "outflow": outflow,
                           "sample_count": len(prices)})
            if h % 2 == 0:
                for status, found in (("on_sale", 500 + h), ("sold", 1000 + h * 2)):
                    totals.append({"task_id": f"{ip_id}-{h}", "ip_id": ip_id, "crawled_at": at + 60, "status": status,
                                   "num_found": found, "pages_read": 5, "items_read": 600})
        flush()
    flush(force=True)


def fill_or_reuse(keep: Path | None, n_ips: int, days: int) -> str:
    """The bound database holding ``n_ips`` IPs over ``days`` days and the week before (the heat's trailing
    baseline): reused when ``keep`` already holds that data set (its schema brought up to date), else filled.
    Returns what was done, for the report."""
    marker = f"{n_ips} IPs x {days + 7} days, seed 7"
    started = time.perf_counter()
    if filled(keep, marker):
        create_tables()  # an index added since the fill
        return f"reusing {keep}: {marker}; schema brought up to date in {time.perf_counter() - started:.0f} s"
    if keep is not None:
        keep.unlink(missing_ok=True)
    create_tables()
    fill(n_ips, days + 7)
    mark_filled(keep, marker)
    return f"filled {n_ips:,} IPs × {days + 7} days in {time.perf_counter() - started:.0f} s"


@contextmanager
def benchmark_market(keep: Path | None, n_ips: int, days: int) -> Iterator[tuple[Settings, str]]:
    """Settings on a fresh Redis and the benchmark market's SQLite database (``fill_or_reuse``), bound; yields
    them with the database file's path, once it has said what it did."""
    with tempfile.TemporaryDirectory() as tmp, bench_settings(Path(tmp), keep) as settings:
        bind_database(settings.database_url_resolved)
        print(f"  {fill_or_reuse(keep, n_ips, days)}")
        yield settings, settings.database_url_resolved.removeprefix("sqlite:///")


def floor_once(hours: int) -> None:
    since = naive_utc(T_END - hours * H)
    raw(IpStatsHourly.select(IpStatsHourly.ip_id, IpStatsHourly.inflow, IpStatsHourly.outflow)
           .where(IpStatsHourly.hour_bucket >= since))
    raw(ListingEvent.select(ListingEvent.ip_id, ListingEvent.event_at, ListingEvent.price)
           .where(ListingEvent.hour_bucket >= since))
    raw(ListingEvent.select(ListingEvent.ip_id, ListingEvent.event_at).where(ListingEvent.hour_bucket >= since))
    raw(CrawlSearchTotal.select(CrawlSearchTotal.ip_id, CrawlSearchTotal.num_found)
           .where(CrawlSearchTotal.crawled_at >= T_END - hours * H))


def _clear_rows() -> None:
    """No precomputed rows (a kept database may hold some): the next pass builds every IP's."""
    IpWindowMeasures.delete().execute()
    IpWindowPending.delete().execute()
    StorageMark.delete().where(StorageMark.name.startswith("window_rows_")).execute()


def run(n_ips: int = 1000, days: int = 30, keep: Path | None = None) -> int:
    print(f"leaderboard: {n_ips:,} IPs × {days} days, cold cache (budget {BUDGET:.0f} s; floor: the rows read raw); "
          f"load average {load_average()}")
    with benchmark_market(keep, n_ips, days) as (settings, _):
        r = state_redis(settings)
        now = T_END - 1
        side = ReadSide(settings, r, FrozenClock(now))
        hours = days * 24
        windows = (24, hours)
        r.flushdb()
        # before the rows: the board computed from the events, as every window not precomputed is
        start = time.perf_counter()
        side._board_from_db(hours)
        computed = time.perf_counter() - start
        _clear_rows()
        full = {}
        for h in windows:  # every IP's rows built: what recomputing all costs
            start = time.perf_counter()
            window_rows.update([h], now)
            full[h] = time.perf_counter() - start
        start = time.perf_counter()
        rows = side.leaderboard("heat", hours)
        cold = time.perf_counter() - start
        start = time.perf_counter()
        floor_once(hours)
        floor = time.perf_counter() - start
        start = time.perf_counter()
        side.leaderboard("heat", hours)
        warm = time.perf_counter() - start
        report(f"leaderboard --by heat --hours {hours}, cold (s)", cold, floor)
        report("the same from the cache (s)", warm, floor)
        report(f"the {hours} h board computed from the events (s)", computed, floor)
        r.flushdb()
        start = time.perf_counter()
        side.leaderboard("heat", 24)
        day = time.perf_counter() - start
        start = time.perf_counter()
        floor_once(24)
        report("leaderboard --by heat --hours 24, cold (s)", day, time.perf_counter() - start)
        # results for 1 % of the IPs: their windows marked as a result marks them, then the refresh pass
        ids = [i for (i,) in IpMetadata.select(IpMetadata.id).order_by(IpMetadata.id).tuples()]
        changed = ids[::100]
        with database.atomic():
            for ip_id in changed:
                window_rows.mark_pending(ip_id, None, now, now, windows)
        start = time.perf_counter()
        done = window_rows.update(windows, now)
        refresh = time.perf_counter() - start
        assert done == dict.fromkeys(windows, len(changed)), done
        report(f"refresh after results for {len(changed):,} IPs (1 %); floor: all", refresh, sum(full.values()))
        for h in windows:
            print(f"  {'  recomputing all ' + str(h) + ' h rows (s)':52} {full[h]:12.6f}")
        print(f"  top {len(rows)} shown; cold {'within' if cold <= BUDGET else 'OVER'} the {BUDGET:.0f} s budget; "
              f"load average at the end: {load_average()}")
        database.close()
        return 0 if cold <= BUDGET else 1


def main(argv: list[str] | None = None) -> int:
    keep, ips = market_options(argv or [], "python -m bench leaderboard", 1000)
    return run(n_ips=ips, keep=keep)
