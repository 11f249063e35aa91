"""Hourly rows derived from the event-time facts, alert rules on settled hours, and the weight adjustment
(docs/concepts/measures.md)."""

from __future__ import annotations

import bisect
import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from lib.core.clock import naive_utc, to_timestamp
from lib.core.db import on_conflict_update, select_tuples
from lib.core.settings import Settings
from lib.market import intervals, robust
from models import IpAlert, IpDayPending, IpStatsHourly, ListingEvent

HOUR = 3600


def hour_bucket(ts: float) -> datetime:
    """The UTC hour a Unix time falls in, as the naive datetime the database stores."""
    return naive_utc(ts - ts % HOUR)


def hour_start(bucket: datetime) -> float:
    """A naive-UTC hour as Unix seconds: an event is in hour ``b`` when ``hour_start(b) <= event_at <
    hour_start(b) + HOUR`` (the events keep only their time; their hour is implied)."""
    return to_timestamp(bucket)


def hour_spans(buckets: Iterable[datetime]) -> list[tuple[float, float]]:
    """Runs of consecutive hours as [start, end) in Unix seconds, in order: each read by one range of an
    index on ``event_at``."""
    spans: list[tuple[float, float]] = []
    for start in sorted(hour_start(b) for b in set(buckets)):
        if spans and spans[-1][1] == start:
            spans[-1] = (spans[-1][0], start + HOUR)
        else:
            spans.append((start, start + HOUR))
    return spans


def day_of(at: datetime) -> datetime:
    """The UTC midnight (naive) of a naive UTC time."""
    return at.replace(hour=0, minute=0, second=0, microsecond=0)


def mark_pending(ip_id: int, buckets: Iterable[datetime]) -> None:
    """Mark the days of these hours pending: their daily rows must be (re)computed (``lib.market.daily``). Called
    in the transaction that writes the hours' rows, so a day's change and its mark commit together."""
    days = sorted({day_of(b) for b in buckets})
    if days:
        IpDayPending.insert_many([{"ip_id": ip_id, "day": d} for d in days]).on_conflict_ignore().execute()


def tuples(query: Any) -> list[tuple[Any, ...]]:
    """A select's rows as tuples (``lib.core.db.select_tuples``)."""
    return select_tuples(query)


def _dec(value: float, places: str = "0.01") -> Decimal:
    return Decimal(str(value)).quantize(Decimal(places))


def _price(value: float | None) -> Decimal | None:
    return None if value is None else _dec(value)


def hour_values(inflow: int, outflow: int, prices: list[int]) -> dict[str, Any]:  # an hourly row's columns
    """An hourly row's values (docs/concepts/measures.md, definition 4) from the hour's events: counts and, over the
    sales with a real price, the sample count, mean, median, quartiles and range."""
    return {
        "inflow": inflow, "outflow": outflow,
        "liquidity_index": _dec(outflow / inflow, "0.0001") if inflow else None,
        "sample_count": len(prices),
        "avg_price": _price(sum(prices) / len(prices)) if prices else None,
        "median_price": _price(robust.median(prices)),
        "p25_price": _price(robust.quantile(prices, 0.25)),
        "p75_price": _price(robust.quantile(prices, 0.75)),
        "min_price": _price(min(prices)) if prices else None,
        "max_price": _price(max(prices)) if prices else None,
    }


_VALUE_FIELDS = [IpStatsHourly.inflow, IpStatsHourly.outflow, IpStatsHourly.liquidity_index,
                 IpStatsHourly.sample_count, IpStatsHourly.avg_price, IpStatsHourly.median_price,
                 IpStatsHourly.p25_price, IpStatsHourly.p75_price, IpStatsHourly.min_price, IpStatsHourly.max_price]


def ensure_hours(ip_id: int, first: datetime, last: datetime) -> None:
    """Rows (zeros) for every hour of tracking from ``first`` to ``last``: an hour without events is a real 0."""
    rows = []
    bucket = first
    while bucket <= last:
        rows.append({"ip_id": ip_id, "hour_bucket": bucket, **hour_values(0, 0, [])})
        bucket += timedelta(hours=1)
    for start in range(0, len(rows), 500):
        IpStatsHourly.insert_many(rows[start:start + 500]).on_conflict_ignore().execute()
    mark_pending(ip_id, [r["hour_bucket"] for r in rows])


def refresh_hours(ip_id: int, buckets: set[datetime], tracked: tuple[datetime, datetime]) -> None:
    """Recompute these hours' rows from their events. ``tracked``: the first and last hour of tracking (the
    baseline's and the latest crawl's); an hour outside it without events has no row."""
    if not buckets:
        return
    flows: dict[datetime, list[int]] = {b: [0, 0] for b in buckets}
    prices: dict[datetime, list[int]] = {b: [] for b in buckets}
    ordered = sorted(buckets)
    for low, high in hour_spans(ordered):
        for at, kind, price in tuples(
                ListingEvent.select(ListingEvent.event_at, ListingEvent.kind, ListingEvent.price)
                .where((ListingEvent.ip_id == ip_id) & (ListingEvent.event_at >= low)
                       & (ListingEvent.event_at < high))):
            bucket = hour_bucket(at)
            if kind == "created":
                flows[bucket][0] += 1
            else:
                flows[bucket][1] += 1
                if price is not None:
                    prices[bucket].append(price)
    mark_pending(ip_id, ordered)
    rows, empty = [], []
    for bucket in ordered:
        inflow, outflow = flows[bucket]
        if not inflow and not outflow and not tracked[0] <= bucket <= tracked[1]:
            empty.append(bucket)
        else:
            rows.append({"ip_id": ip_id, "hour_bucket": bucket, **hour_values(inflow, outflow, prices[bucket])})
    if empty:
        IpStatsHourly.delete().where((IpStatsHourly.ip_id == ip_id) & IpStatsHourly.hour_bucket.in_(empty)).execute()
    for start in range(0, len(rows), 200):
        on_conflict_update(IpStatsHourly.insert_many(rows[start:start + 200]),
                           [IpStatsHourly.ip_id, IpStatsHourly.hour_bucket], preserve=_VALUE_FIELDS).execute()


def adjusted_weight(weight: float, inflow: int, outflow: int, settings: Settings) -> float:
    """Speed up busy IPs, slow down quiet ones, else drift back toward 1.0 (docs/concepts/measures.md)."""
    if inflow > 500 or outflow > 500:
        weight += 0.25
    elif inflow < 250 and outflow < 15:
        weight -= 0.1
    elif weight > 1.0:
        weight = max(1.0, weight - 0.1)
    elif weight < 1.0:
        weight = min(1.0, weight + 0.1)
    return round(min(max(weight, settings.weight_min), settings.weight_max), 4)


@dataclass(frozen=True)
class AlertFinding:
    rule: str
    value: float
    threshold: float
    message: str
    details: dict[str, object]  # stored as JSON (``IpAlert.details``)


OUTFLOW_SURGE = "outflow_surge"
HOT_LIQUIDITY = "hot_liquidity"
SOLD_PRICE_MOVE = "sold_price_move"

#: Scaled MADs above the trailing median an outflow surge must also clear.
SURGE_MADS = 3


def settled_hours(previous_crawl: float | None, crawled_at: float, baseline_at: float) -> list[datetime]:
    """The hours this crawl settles: those ending after the IP's previous latest crawl and at or before this one
    (a late result, older than the latest crawl, settles nothing)."""
    if previous_crawl is None or crawled_at <= previous_crawl:
        return []
    first = max(hour_bucket(previous_crawl), hour_bucket(baseline_at))
    last = hour_bucket(crawled_at) - timedelta(hours=1)
    hours = []
    while first <= last:
        if first + timedelta(hours=1) > naive_utc(previous_crawl):
            hours.append(first)
        first += timedelta(hours=1)
    return hours


def evaluate_alerts(ip_id: int, bucket: datetime, baseline_at: float, settings: Settings) -> list[AlertFinding]:
    """The alert rules for one settled IP-hour (``evaluate_alerts_many`` for one hour)."""
    return evaluate_alerts_many(ip_id, [bucket], baseline_at, settings).get(bucket, [])


def evaluate_alerts_many(ip_id: int, buckets: list[datetime], baseline_at: float,
                         settings: Settings) -> dict[datetime, list[AlertFinding]]:
    """The alert rules for settled IP-hours, each against that IP's trailing tracked hours. None in the warm-up:
    fewer than ``ALERT_WARMUP_HOURS`` full hours of tracking before it.

    The hours' rows, their trailing 24 hours and (where an hour has enough prices) the 7 days of sold prices before
    them are read once for all the hours: a crawl after a long gap settles thousands of hours at once."""
    tracked_from = hour_bucket(baseline_at) + timedelta(hours=1)  # the baseline's hour is partial
    hour = timedelta(hours=1)
    due = sorted(b for b in set(buckets) if int((b - tracked_from) / hour) >= settings.alert_warmup_hours)
    if not due:
        return {}
    first_since = max(due[0] - timedelta(hours=24), tracked_from)
    rows = {r.hour_bucket: r for r in IpStatsHourly.select().where(
        (IpStatsHourly.ip_id == ip_id) & (IpStatsHourly.hour_bucket >= first_since)
        & (IpStatsHourly.hour_bucket <= due[-1]))}
    priced = [b for b in due if b in rows and rows[b].sample_count >= settings.alert_price_min_samples
              and rows[b].median_price is not None]
    sales: list[tuple[datetime, int]] = []  # (hour, real price) of sold events, by hour
    if priced:
        sales = sorted((hour_bucket(at), price) for at, price in tuples(
            ListingEvent.select(ListingEvent.event_at, ListingEvent.price).where(
                (ListingEvent.ip_id == ip_id) & (ListingEvent.kind == "sold") & ListingEvent.price.is_null(False)
                & (ListingEvent.event_at >= hour_start(priced[0] - timedelta(days=7)))
                & (ListingEvent.event_at < hour_start(priced[-1]) + HOUR))))
    sale_hours = [h for h, _ in sales]
    found: dict[datetime, list[AlertFinding]] = {}
    for bucket in due:
        row = rows.get(bucket)
        if row is None:
            continue
        since = max(bucket - timedelta(hours=24), tracked_from)
        trailing = [rows[h].outflow if h in rows else 0
                    for h in (since + k * hour for k in range(int((bucket - since) / hour)))]
        week: list[int] = []
        now: list[int] = []
        if bucket in priced:
            lo = bisect.bisect_left(sale_hours, bucket - timedelta(days=7))
            hi = bisect.bisect_left(sale_hours, bucket)
            week = [price for _, price in sales[lo:hi]]
            now = [price for _, price in sales[hi:bisect.bisect_right(sale_hours, bucket)]]
        findings = _findings(row, trailing, week, now, settings)
        if findings:
            found[bucket] = findings
    return found


def _findings(row: IpStatsHourly, trailing: list[int], week: list[int], now: list[int],
              settings: Settings) -> list[AlertFinding]:
    """The rules on one hour's row, its trailing hours' outflows, the 7 days' sold prices before it and its own."""
    findings = []
    centre, spread = robust.median(trailing) or 0.0, robust.mad(trailing) or 0.0
    threshold = max(settings.alert_outflow_surge_factor * max(centre, 1.0),
                    centre + SURGE_MADS * robust.MAD_SCALE * spread, float(settings.alert_outflow_min))
    if row.outflow >= threshold:
        findings.append(AlertFinding(
            OUTFLOW_SURGE, row.outflow, threshold,
            f"outflow {row.outflow} this hour against a trailing {len(trailing)} h median of {centre:g}/h "
            f"(MAD {spread:g})",
            {"outflow": row.outflow, "trailing_median": centre, "trailing_mad": spread,
             "hours_of_history": len(trailing)}))
    liquidity = float(row.liquidity_index) if row.liquidity_index is not None else None
    if (liquidity is not None and liquidity >= settings.alert_liquidity_min
            and row.outflow >= settings.alert_outflow_min):
        findings.append(AlertFinding(
            HOT_LIQUIDITY, liquidity, settings.alert_liquidity_min,
            f"liquidity {liquidity:.2f} (outflow {row.outflow} / inflow {row.inflow})",
            {"liquidity": liquidity, "inflow": row.inflow, "outflow": row.outflow}))
    if len(week) >= settings.alert_price_min_samples and row.median_price is not None:
        trailing_median = robust.median(week) or 0.0
        hour_median = float(row.median_price)
        change = round(hour_median / trailing_median - 1, 9) if trailing_median else 0.0
        # noise: the hour's median is an estimate; a move its 95 % interval does not rule out is not reported
        interval = intervals.median_interval(now)
        if abs(change) >= settings.alert_price_move and interval is not None \
                and not interval[0] <= trailing_median <= interval[1]:
            findings.append(AlertFinding(
                SOLD_PRICE_MOVE, change, settings.alert_price_move,
                f"median sold price ¥{hour_median:,.0f} is {change:+.0%} against the trailing 7-day "
                f"median ¥{trailing_median:,.0f}",
                {"median_price": hour_median, "trailing_median": trailing_median, "change": round(change, 4),
                 "samples": row.sample_count, "trailing_samples": len(week), "median_interval": list(interval)}))
    return findings


def record_alerts(ip_id: int, bucket: datetime, findings: list[AlertFinding], now: datetime) -> list[IpAlert]:
    """Store findings not already alerted for this IP, rule and hour; returns the new alerts."""
    created = []
    for f in findings:
        exists = IpAlert.select().where((IpAlert.ip_id == ip_id) & (IpAlert.rule == f.rule)
                                        & (IpAlert.hour_bucket == bucket)).exists()
        if not exists:
            created.append(IpAlert.create(ip_id=ip_id, rule=f.rule, hour_bucket=bucket, value=f.value,
                                          threshold=f.threshold, message=f.message,
                                          details=json.dumps(f.details, ensure_ascii=False), created_at=now))
    return created
