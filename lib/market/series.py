"""Read-only series for charts and exports: outflow sparklines, the latest sales, the searches' totals.

Raw observations, not measures: the measures themselves (flows, prices, liquidity, …) are defined where they
are computed (``lib.market.statistics``, ``lib.market.read_side``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import date, datetime, timedelta
from typing import Any, cast

import peewee

from lib.market import listing_urls
from lib.market.values import JsonObject
from models import CrawlSearchTotal, IpStatsHourly, ItemSnapshot

#: Sparklines of windows up to this many hours are per hour, longer ones per day.
SPARKLINE_HOURLY_UP_TO = 48


def outflow_sparklines(ip_ids: list[int], since: datetime, hours: int) -> dict[int, list[int]]:
    """Outflow of each IP since ``since`` (naive UTC, on an hour), oldest first: per hour for windows of up to two
    days, else per UTC day (summed by the database); hours or days without sales count 0."""
    if hours <= SPARKLINE_HOURLY_UP_TO:
        lines = {ip_id: [0] * hours for ip_id in ip_ids}
        bucket: Any = IpStatsHourly.hour_bucket
    else:
        days = ((since + timedelta(hours=hours - 1)).date() - since.date()).days + 1
        lines = {ip_id: [0] * days for ip_id in ip_ids}
        bucket = peewee.fn.DATE(IpStatsHourly.hour_bucket)
    if not ip_ids:
        return lines
    query = (IpStatsHourly.select(IpStatsHourly.ip_id, bucket.alias("bucket"), peewee.fn.SUM(IpStatsHourly.outflow))
             .where(IpStatsHourly.ip_id.in_(ip_ids) & (IpStatsHourly.hour_bucket >= since)
                    & (IpStatsHourly.outflow > 0))
             .group_by(IpStatsHourly.ip_id, bucket).tuples())
    for ip_id, at, outflow in cast(Iterable[tuple[int, Any, Any]], query):
        if hours <= SPARKLINE_HOURLY_UP_TO:
            index = int((at - since) / timedelta(hours=1))
        else:
            # the driver's type for DATE(): a string (SQLite), a date (MySQL), a datetime (peewee's conversion)
            day = at.date() if isinstance(at, datetime) else at if isinstance(at, date) else date.fromisoformat(at)
            index = (day - since.date()).days
        line = lines[ip_id]
        if 0 <= index < len(line):
            line[index] += int(outflow)
    return lines


def shift_sparkline(line: list[int], since: datetime, new_since: datetime, hours: int) -> list[int]:
    """An ``outflow_sparklines`` line of the window that started at ``since``, as of the same window starting at
    ``new_since`` (later), for an IP without outflow in the hours between (``lib.market.window_rows``): the
    hours or days that left dropped, the ones that came counted 0."""
    if hours <= SPARKLINE_HOURLY_UP_TO:
        moved = int((new_since - since) / timedelta(hours=1))
        length = hours
    else:
        moved = (new_since.date() - since.date()).days
        length = ((new_since + timedelta(hours=hours - 1)).date() - new_since.date()).days + 1
    return [line[moved + k] if 0 <= moved + k < len(line) else 0 for k in range(length)]


def latest_sales(ip_id: int, limit: int = 20) -> list[JsonObject]:
    """The IP's most recently sold listings seen, newest first. ``sold_at``: the listing's last update when the
    site gave one, else when we last saw it (Unix seconds)."""
    sold_at = peewee.fn.COALESCE(ItemSnapshot.updated, ItemSnapshot.last_seen)
    rows = (ItemSnapshot.select(ItemSnapshot.source_id, ItemSnapshot.title, ItemSnapshot.price,
                                ItemSnapshot.item_url, ItemSnapshot.url_forms, sold_at.alias("sold_at"))
            .where((ItemSnapshot.ip_id == ip_id) & (ItemSnapshot.status == "sold"))
            .order_by(sold_at.desc(), ItemSnapshot.source_id).limit(limit).dicts())
    return [{"source_id": row["source_id"], "title": row["title"], "price": row["price"],
             "item_url": listing_urls.item_url(row["source_id"], row["url_forms"], row["item_url"]),
             "sold_at": float(row["sold_at"]) if row["sold_at"] is not None else None}
            for row in cast(Iterable[dict[str, Any]], rows)]  # the database's rows


def search_totals(ip_id: int, since: float) -> list[JsonObject]:
    """Per crawl since ``since`` (Unix seconds), oldest first: the site's count of the on-sale and sold searches
    (None where it gave none), the IP's listings our pages read of each, and the listings they held that were not
    the IP's (``_missed``: the site's padding; None where the crawler did not tell them apart)."""
    by_crawl: dict[tuple[float, str], dict[str, int | None]] = defaultdict(dict)
    for row in (CrawlSearchTotal.select()
                .where((CrawlSearchTotal.ip_id == ip_id) & (CrawlSearchTotal.crawled_at >= since))
                .order_by(CrawlSearchTotal.crawled_at)):
        point = by_crawl[(row.crawled_at, row.task_id)]
        point[row.status] = row.num_found
        point[f"{row.status}_read"] = row.items_read
        point[f"{row.status}_missed"] = row.items_missed
    return [{"crawled_at": at, "on_sale": p.get("on_sale"), "sold": p.get("sold"),
             "on_sale_read": p.get("on_sale_read"), "sold_read": p.get("sold_read"),
             "on_sale_missed": p.get("on_sale_missed"), "sold_missed": p.get("sold_missed")}
            for (at, _), p in sorted(by_crawl.items())]
