"""``python -m bench storage``: database bytes per crawl in steady state, per table, for one scripted market.

One IP of the market simulator read as a production crawl does (5 on-sale + 5 sold pages: about 1,200 listings a
crawl), crawled every hour ``--crawls`` times (16) and each result applied by ``process_result``'s code
(``ResultProcessor``), then the maintenance passes a deployment runs (the daily rollup and the precomputed window
rows, as ``bench.replicate.settle``), so every table a crawl writes to is counted. The first crawl (every listing new)
is reported apart; the steady state is what each later crawl adds: (bytes after the last crawl − bytes after the
first) / (crawls − 1), per table (data and indexes, as ``bench load`` measures them: SQLite's ``dbstat`` pages,
MySQL/MariaDB's ``information_schema.TABLES`` after ``ANALYZE TABLE``, and there also the pages in use:
``pages_in_use``). ``--db mysql://…`` runs on an empty
MySQL/MariaDB database instead of a temporary SQLite file (its tables are dropped at the end)."""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from .common import bench_settings, load_average
from .load import minus, table_sizes

HOUR = 3600.0
T0 = 1_800_000_000.0 - 1_800_000_000.0 % HOUR
KEYWORD = "推しの子"  # among the simulator's busiest markets: about 200 new listings an hour


def crawl_items(t: float, per_search: int = 600) -> list[dict]:
    """What a 5+5-page crawl of the simulated market at ``t`` reports: the simulator's API items read by the
    crawler's own code (``lib.crawling.listings.item_from_api``: whole-second times, a shop's product URL)."""
    from lib.crawling.listings import item_from_api
    from lib.standins.simulator import MarketSimulator, market

    on_sale = market.search(KEYWORD, {market.ON_SALE}, t)[:per_search]
    sold = market.search(KEYWORD, {market.TRADING, market.SOLD_OUT}, t)[:per_search]
    return [item_from_api(MarketSimulator.api_item(item, status, t), "https://jp.mercari.com",
                          "on_sale" if status == market.ON_SALE else "sold")
            for item, status in on_sale + sold]


def pages_in_use() -> dict[str, int]:
    """MySQL/MariaDB: the bytes of the B-tree pages each table uses, counted in the buffer pool (all of them are
    there: the tables were just written, and are small beside the pool). ``DATA_LENGTH`` counts the pages
    allocated, which past 32 pages of an index grow a 1 MiB extent at a time: too coarse to tell a few crawls'
    bytes apart, or two layouts. Empty on SQLite, whose ``dbstat`` counts the pages exactly."""
    from lib.core.db import database, is_mysql

    if not is_mysql():
        return {}
    try:
        cursor = database.execute_sql(
            "SELECT TABLE_NAME, COUNT(*) * @@innodb_page_size FROM information_schema.INNODB_BUFFER_PAGE "
            "WHERE PAGE_TYPE = 'INDEX' AND TABLE_NAME LIKE CONCAT('`', DATABASE(), '`.%%') GROUP BY TABLE_NAME")
        return {str(t).split("`.`")[-1].strip("`"): int(b) for t, b in cursor.fetchall()}
    finally:
        database.close()


def run(crawls: int, database_url: str | None) -> None:
    from lib.core.clock import FrozenClock
    from lib.core.db import bind_database, database
    from lib.core.redis_client import state_redis
    from lib.market import window_rows
    from lib.market.daily import roll_up_pending
    from lib.market.processing import CrawlResult, ResultProcessor
    from lib.market.schema import create_tables
    from lib.scheduling.catalogue import Catalogue
    from lib.scheduling.schedule import ScheduleStore
    from models import ALL_MODELS

    with tempfile.TemporaryDirectory() as tmp, bench_settings(Path(tmp)) as settings:
        url = database_url or settings.database_url_resolved
        bind_database(url)
        create_tables()
        try:
            clock = FrozenClock(T0)
            r = state_redis(settings)
            ip = Catalogue(ScheduleStore(r), settings, clock).add(KEYWORD)
            proc = ResultProcessor(settings, r, clock)
            sizes: list[dict[str, tuple[int, int]]] = []
            pages: list[dict[str, int]] = []
            listings = 0
            for k in range(crawls):
                at = T0 + k * HOUR + 60
                items = crawl_items(at)
                listings += len(items)
                proc.apply(CrawlResult.parse(ip.id, f"storage-{k}", at, items))
                roll_up_pending(at + 300)
                window_rows.update(window_rows.precomputed_windows(settings.leaderboard_precompute), at + 300)
                database.close()
                if k == 0:
                    sizes.append(table_sizes())
                    pages.append(pages_in_use())
            sizes.append(table_sizes())
            pages.append(pages_in_use())
            first, steady = sizes[0], minus(sizes[1], sizes[0])
            n = crawls - 1
            print(f"storage: one IP, {listings / crawls:,.0f} listings a crawl, {crawls} crawls an hour apart, "
                  f"{'MySQL/MariaDB' if url.startswith('mysql') else 'SQLite'}; load average {load_average()}")
            used = {t: b - pages[0].get(t, 0) for t, b in pages[1].items()}
            extra = f" {'pages in use KB/crawl':>22}" if used else ""
            print(f"  {'table':22} {'first crawl KB':>15} {'steady KB/crawl':>16} {'rows/crawl':>11}{extra}")
            names = sorted({t for t, (rows, b) in {**first, **steady}.items() if rows or b},
                           key=lambda t: -steady.get(t, (0, 0))[1])
            for name in names:
                extra = f" {used.get(name, 0) / 1024 / n:>22.1f}" if used else ""
                print(f"  {name:22} {first[name][1] / 1024:>15.1f} {steady[name][1] / 1024 / n:>16.1f} "
                      f"{steady[name][0] / n:>11.1f}{extra}")
            total_first = sum(b for _, b in first.values())
            total = sum(b for _, b in steady.values())
            extra = f" {sum(used.values()) / 1024 / n:>22.1f}" if used else ""
            print(f"  {'all tables':22} {total_first / 1024:>15.1f} {total / 1024 / n:>16.1f} {'':>11}{extra}")
        finally:
            if database_url:
                database.drop_tables(ALL_MODELS, safe=True)
            database.close()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench storage", description=__doc__.split("\n\n")[0])
    p.add_argument("--crawls", type=int, default=16, help="crawls of the market, an hour apart (16)")
    p.add_argument("--db", help="an empty MySQL/MariaDB database (mysql://…) instead of a temporary SQLite file")
    args = p.parse_args(argv)
    if args.crawls < 2:
        p.error("--crawls must be at least 2 (the first crawl is reported apart)")
    run(args.crawls, args.db)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
