"""An existing database (before the event-time facts) reaches the new schema and its hourly rows are rebuilt
from what it stored (snapshots and the ledger) by `animetop db init`."""

from datetime import timedelta

from playhouse.migrate import SchemaMigrator, migrate

from lib.core.clock import naive_utc
from lib.core.db import database
from lib.market.migrate import migrate_market_facts
from lib.market.schema import create_tables
from models import AppliedResult, IpMetadata, IpStatsHourly, ItemSnapshot, ListingEvent, ListingSighting

from .scripted import T0, H


def test_db_init_migrates_and_rebuilds_the_hourly_rows(db):
    migrator = SchemaMigrator.from_database(database.obj)
    database.drop_tables([ListingEvent, ListingSighting])
    for column in ("median_price", "p25_price", "p75_price"):
        migrate(migrator.drop_column("ip_stats_hourly", column))
    assert "median_price" not in {c.name for c in database.get_columns("ip_stats_hourly")}
    ip = IpMetadata.create(keyword="旧", display_name="旧", weight=1.0, active=True, created_at=naive_utc(T0),
                           updated_at=naive_utc(T0))
    for n, at in enumerate([T0 + 60, T0 + H + 60, T0 + 2 * H + 60]):
        AppliedResult.create(task_id=f"old-{n}", ip_id=ip.id, crawled_at=at, applied_at=at, items=0, inflow=0,
                             outflow=0)
    # the old crawl-time rows: everything in the hours of the crawls
    IpStatsHourly.insert(ip_id=ip.id, hour_bucket=naive_utc(T0 + 2 * H), inflow=5, outflow=5,
                         sample_count=0).execute()
    snaps = [("a", "on_sale", 100, T0 + 60, T0 + 2 * H + 60, None),   # seen at the baseline: nothing
             ("b", "sold", 800, T0 + 60, T0 + 2 * H + 60, T0 + H + 100),  # sold at its updated time, hour 1
             ("c", "on_sale", 300, T0 + H + 60, T0 + 2 * H + 60, None),  # first seen on sale after it: new, hour 1
             ("d", "sold", 500, T0 + 2 * H + 60, T0 + 2 * H + 60, None)]  # first seen sold: sold at the crawl
    for sid, status, price, first, last, updated in snaps:
        ItemSnapshot.create(ip_id=ip.id, source_id=sid, price=price, status=status, first_seen=first, last_seen=last,
                            updated=updated)
    create_tables()
    assert migrate_market_facts() == [ip.id]
    rows = [(r.hour_bucket, r.inflow, r.outflow, r.sample_count, r.median_price and float(r.median_price))
            for r in IpStatsHourly.select().where(IpStatsHourly.ip_id == ip.id).order_by(IpStatsHourly.hour_bucket)]
    h0 = naive_utc(T0)
    assert rows == [(h0, 0, 0, 0, None), (h0 + timedelta(hours=1), 1, 1, 1, 800.0),
                    (h0 + timedelta(hours=2), 0, 1, 1, 500.0)]
    assert migrate_market_facts() == []  # once
