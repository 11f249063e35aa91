"""Hourly market statistics, alert rules and weight adjustment (seed 000 §4.3–4.5)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

import peewee

from lib.core.clock import naive_utc
from lib.core.settings import Settings
from models import IpAlert, IpStatsHourly

HOUR = 3600


def hour_bucket(ts: float) -> datetime:
    """The UTC hour a Unix time falls in, as the naive datetime the database stores."""
    return naive_utc(ts - ts % HOUR)


@dataclass
class HourDelta:
    """What one crawl result adds to an hour."""

    inflow: int = 0
    outflow: int = 0
    sold_prices: list[int] = field(default_factory=list)


def _dec(value: float, places: str = "0.01") -> Decimal:
    return Decimal(str(value)).quantize(Decimal(places))


def add_to_hour(ip_id: int, bucket: datetime, delta: HourDelta) -> IpStatsHourly:
    """Cumulative upsert of one hour's row (called inside the result's transaction, under the IP's lock)."""
    row = IpStatsHourly.get_or_none((IpStatsHourly.ip_id == ip_id) & (IpStatsHourly.hour_bucket == bucket))
    if row is None:
        row = IpStatsHourly(ip_id=ip_id, hour_bucket=bucket, inflow=0, outflow=0, sample_count=0)
    row.inflow += delta.inflow
    row.outflow += delta.outflow
    row.liquidity_index = _dec(row.outflow / row.inflow, "0.0001") if row.inflow else None
    if delta.sold_prices:
        n_old, n_new = row.sample_count, len(delta.sold_prices)
        old_total = float(row.avg_price or 0) * n_old
        row.avg_price = _dec((old_total + sum(delta.sold_prices)) / (n_old + n_new))
        low, high = min(delta.sold_prices), max(delta.sold_prices)
        row.min_price = _dec(low if row.min_price is None else min(float(row.min_price), low))
        row.max_price = _dec(high if row.max_price is None else max(float(row.max_price), high))
        row.sample_count = n_old + n_new
    row.save()
    return row


def adjusted_weight(weight: float, inflow: int, outflow: int, settings: Settings) -> float:
    """Seed 000 §4.5: speed up busy IPs, slow down quiet ones, otherwise drift back toward 1.0."""
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
    details: dict


OUTFLOW_SURGE = "outflow_surge"
HOT_LIQUIDITY = "hot_liquidity"
SOLD_PRICE_MOVE = "sold_price_move"

#: Hours of history the surge rule needs before it may fire.
MIN_HISTORY_HOURS = 3


def evaluate_alerts(row: IpStatsHourly, settings: Settings) -> list[AlertFinding]:
    """The alert rules for one IP-hour, against that IP's trailing history in the database."""
    findings = []
    bucket = row.hour_bucket
    trailing = list(IpStatsHourly.select().where(
        (IpStatsHourly.ip_id == row.ip_id) & (IpStatsHourly.hour_bucket >= bucket - timedelta(hours=24))
        & (IpStatsHourly.hour_bucket < bucket)))
    if len(trailing) >= MIN_HISTORY_HOURS and row.outflow >= settings.alert_outflow_min:
        mean = sum(r.outflow for r in trailing) / 24
        threshold = settings.alert_outflow_surge_factor * mean
        if row.outflow >= threshold:
            findings.append(AlertFinding(
                OUTFLOW_SURGE, row.outflow, threshold,
                f"outflow {row.outflow} this hour, {row.outflow / mean if mean else float('inf'):.1f}x "
                f"the trailing 24 h mean of {mean:.1f}/h",
                {"outflow": row.outflow, "trailing_mean": round(mean, 3), "hours_of_history": len(trailing)}))
    liquidity = float(row.liquidity_index) if row.liquidity_index is not None else None
    if (liquidity is not None and liquidity >= settings.alert_liquidity_min
            and row.outflow >= settings.alert_outflow_min):
        findings.append(AlertFinding(
            HOT_LIQUIDITY, liquidity, settings.alert_liquidity_min,
            f"liquidity {liquidity:.2f} (outflow {row.outflow} / inflow {row.inflow})",
            {"liquidity": liquidity, "inflow": row.inflow, "outflow": row.outflow}))
    if row.sample_count >= settings.alert_price_min_samples and row.avg_price is not None:
        week: dict[str, Any] = IpStatsHourly.select(
            peewee.fn.SUM(IpStatsHourly.avg_price * IpStatsHourly.sample_count).alias("total"),
            peewee.fn.SUM(IpStatsHourly.sample_count).alias("n"),
        ).where((IpStatsHourly.ip_id == row.ip_id) & (IpStatsHourly.hour_bucket >= bucket - timedelta(days=7))
                & (IpStatsHourly.hour_bucket < bucket) & (IpStatsHourly.sample_count > 0)).dicts().get()  # type: ignore[assignment]  # a .dicts() row; peewee's stubs say model
        n = int(week["n"] or 0)
        if n >= settings.alert_price_min_samples:
            average = float(week["total"]) / n
            change = round(float(row.avg_price) / average - 1, 9)  # 1200/1000 - 1 is 0.1999… in floats
            if abs(change) >= settings.alert_price_move:
                findings.append(AlertFinding(
                    SOLD_PRICE_MOVE, change, settings.alert_price_move,
                    f"average sold price ¥{float(row.avg_price):,.0f} is {change:+.0%} against the 7-day "
                    f"average ¥{average:,.0f}",
                    {"avg_price": float(row.avg_price), "trailing_avg": round(average, 2), "change": round(change, 4),
                     "samples": row.sample_count, "trailing_samples": n}))
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
