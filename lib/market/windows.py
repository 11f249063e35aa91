"""Window measures (README definition 5) and the heat score and momentum (definition 6), for many IPs at once.

Every measure is a ``{"value": …, "n": …}`` pair: ``n`` is how many observations it rests on, and ``value`` is
None ("insufficient") when ``n`` is below the measure's minimum — never 0 for lack of data.
"""

from __future__ import annotations

import bisect
import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import peewee

from lib.core.clock import naive_utc, to_timestamp
from lib.core.db import database
from lib.market import robust
from lib.market.statistics import hour_bucket
from models import CrawlSearchTotal, IpStatsHourly, ItemSnapshot, ListingEvent

#: Fewest observations each measure needs (README "Market measures").
MIN_PRICES = 5           # sold prices: median, quartiles, trimmed mean
MIN_CREATED = 10         # listings created in the window: sell-through
MIN_SALES_TO_TIME = 5    # sales among them: time to sell
MIN_CUT_SAMPLES = 5      # sales seen on sale first: price cuts
MIN_COVERAGE_SALES = 10  # growth of the sold search's total: coverage
MIN_BASELINE_HOURS = 24  # tracked hours before the window: heat
MIN_HEAT_SALES = 10      # sales in the window and its baseline together: heat
#: The heat's trailing baseline: this long before the window.
BASELINE = timedelta(days=7)
#: Added to both outflow rates of the heat's lift, so a quiet IP's 0 → 1 sale is not infinite (one sale a day).
RATE_FLOOR = 1 / 24
#: Hours of recent outflow the hours of supply divide by.
RECENT_HOURS = 24


def raw(query: Any) -> list[tuple[Any, ...]]:
    """A select's rows as the driver returns them: no per-value conversion (none of these columns needs one),
    which is most of the cost of reading a month of events."""
    return list(database.execute(query).fetchall())


def measure(value: float | None, n: int, minimum: int = 1, places: int = 4) -> dict[str, Any]:
    if value is None or n < minimum:
        return {"value": None, "n": n}
    return {"value": round(value, places), "n": n}


@dataclass
class _Flows:
    inflow: int = 0
    outflow: int = 0
    hours: int = 0


@dataclass
class _IpData:
    flows: dict[str, _Flows] = field(default_factory=lambda: defaultdict(_Flows))
    sales: list[tuple[float, int | None, int | None]] = field(default_factory=list)  # (at, price, listed)
    created: list[tuple[float, float | None, float | None]] = field(default_factory=list)  # (at, sold, last seen)
    previous_cohort: tuple[int, int] = (0, 0)  # listings created in the previous window, and how many sold in it
    supply: int | None = None
    sold_totals: list[tuple[float, int]] = field(default_factory=list)


class Window:
    """The window of ``hours`` hours ending at ``now``: the current (partial) hour and the ``hours − 1`` before."""

    def __init__(self, hours: int, now: float) -> None:
        self.hours, self.now = hours, now
        self.since = hour_bucket(now) - timedelta(hours=hours - 1)
        self.start = to_timestamp(self.since) or 0.0
        self.previous = self.since - timedelta(hours=hours)
        self.previous_start = self.start - hours * 3600.0


def _ranges(w: Window) -> dict[str, tuple[datetime, datetime]]:
    end = hour_bucket(w.now) + timedelta(hours=1)
    return {"window": (w.since, end), "previous": (w.previous, w.since),
            "baseline": (w.since - BASELINE, w.since), "previous_baseline": (w.previous - BASELINE, w.previous),
            "recent": (end - timedelta(hours=RECENT_HOURS), end)}


def _load(ip_ids: Sequence[int] | None, w: Window) -> dict[int, _IpData]:
    data: dict[int, _IpData] = defaultdict(_IpData)
    ranges = _ranges(w)
    earliest = min(r[0] for r in ranges.values())

    def of_ips(column):
        return column.in_(list(ip_ids)) if ip_ids is not None else column.is_null(False)

    columns: list[Any] = [IpStatsHourly.ip_id]
    for name, (low, high) in ranges.items():
        inside = (IpStatsHourly.hour_bucket >= low) & (IpStatsHourly.hour_bucket < high)
        columns += [peewee.fn.SUM(peewee.Case(None, [(inside, IpStatsHourly.inflow)], 0)).alias(f"{name}_in"),
                    peewee.fn.SUM(peewee.Case(None, [(inside, IpStatsHourly.outflow)], 0)).alias(f"{name}_out"),
                    peewee.fn.SUM(peewee.Case(None, [(inside, 1)], 0)).alias(f"{name}_hours")]
    for row in raw(IpStatsHourly.select(*columns).where(of_ips(IpStatsHourly.ip_id)
                                                           & (IpStatsHourly.hour_bucket >= earliest))
                      .group_by(IpStatsHourly.ip_id)):
        ip_id, values = row[0], row[1:]
        for k, name in enumerate(ranges):
            data[ip_id].flows[name] = _Flows(int(values[3 * k] or 0), int(values[3 * k + 1] or 0),
                                             int(values[3 * k + 2] or 0))
    for ip_id, at, price, listed in raw(
            ListingEvent.select(ListingEvent.ip_id, ListingEvent.event_at, ListingEvent.price,
                                ListingEvent.listed_price)
            .where(of_ips(ListingEvent.ip_id) & (ListingEvent.kind == "sold") & (ListingEvent.event_at >= w.start)
                   & (ListingEvent.hour_bucket >= w.since))):
        data[ip_id].sales.append((at, price, listed))
    sale = ListingEvent.alias()
    first_sale = ((sale.ip_id == ListingEvent.ip_id) & (sale.source_id == ListingEvent.source_id)
                  & (sale.kind == "sold") & (sale.occurrence == 0))
    for ip_id, at, sold_at, last_seen in raw(
            ListingEvent.select(ListingEvent.ip_id, ListingEvent.event_at, sale.event_at, ItemSnapshot.last_seen)
            .join(sale, peewee.JOIN.LEFT_OUTER, on=first_sale)
            .join(ItemSnapshot, peewee.JOIN.LEFT_OUTER, on=((ItemSnapshot.ip_id == ListingEvent.ip_id)
                                                            & (ItemSnapshot.source_id == ListingEvent.source_id)))
            .where(of_ips(ListingEvent.ip_id) & (ListingEvent.kind == "created")
                   & (ListingEvent.hour_bucket >= w.since) & (ListingEvent.event_at >= w.start))):
        data[ip_id].created.append((at, sold_at, last_seen))
    # The previous window's sell-through (momentum) needs only its cohort's size and sales: counted by the
    # database instead of reading a second window of listings.
    sold_in_time = peewee.Case(None, [(sale.event_at < w.start, 1)], 0)
    for ip_id, cohort, sold in raw(
            ListingEvent.select(ListingEvent.ip_id, peewee.fn.COUNT(ListingEvent.id), peewee.fn.SUM(sold_in_time))
            .join(sale, peewee.JOIN.LEFT_OUTER, on=first_sale)
            .where(of_ips(ListingEvent.ip_id) & (ListingEvent.kind == "created")
                   & (ListingEvent.hour_bucket >= w.previous) & (ListingEvent.hour_bucket < w.since)
                   & (ListingEvent.event_at >= w.previous_start) & (ListingEvent.event_at < w.start))
            .group_by(ListingEvent.ip_id)):
        data[ip_id].previous_cohort = (int(cohort), int(sold or 0))
    latest = (CrawlSearchTotal.select(CrawlSearchTotal.ip_id, peewee.fn.MAX(CrawlSearchTotal.crawled_at).alias("at"))
              .where(of_ips(CrawlSearchTotal.ip_id) & (CrawlSearchTotal.status == "on_sale")
                     & (CrawlSearchTotal.crawled_at <= w.now))
              .group_by(CrawlSearchTotal.ip_id).alias("latest"))
    for ip_id, num_found in raw(
            CrawlSearchTotal.select(CrawlSearchTotal.ip_id, CrawlSearchTotal.num_found)
            .join(latest, on=((latest.c.ip_id == CrawlSearchTotal.ip_id)
                              & (latest.c.at == CrawlSearchTotal.crawled_at)))
            .where(CrawlSearchTotal.status == "on_sale")):
        data[ip_id].supply = num_found
    for ip_id, at, num_found in raw(
            CrawlSearchTotal.select(CrawlSearchTotal.ip_id, CrawlSearchTotal.crawled_at, CrawlSearchTotal.num_found)
            .where(of_ips(CrawlSearchTotal.ip_id) & (CrawlSearchTotal.status == "sold")
                   & (CrawlSearchTotal.crawled_at >= w.start) & (CrawlSearchTotal.crawled_at <= w.now))
            .order_by(CrawlSearchTotal.crawled_at)):
        if num_found is not None:
            data[ip_id].sold_totals.append((at, num_found))
    return data


def _sell_through(created: list[tuple[float, float | None, float | None]], start: float,
                  end: float) -> tuple[float | None, int]:
    """Of the listings created in [start, end), the share seen sold before ``end`` (still open ones count as not
    sold), and the cohort's size; None below ``MIN_CREATED``."""
    cohort = [(at, sold) for at, sold, _ in created if start <= at < end]
    return _share(sum(1 for at, s in cohort if s is not None and s < end), len(cohort)), len(cohort)


def _share(sold: int, cohort: int) -> float | None:
    return sold / cohort if cohort >= MIN_CREATED else None


def _time_to_sell(created: list[tuple[float, float | None, float | None]], start: float, end: float) -> dict:
    """Kaplan–Meier over the listings created in the window: sold ones at sale − created, the others censored at
    their last sighting − created."""
    durations = []
    for at, sold, last_seen in created:
        if not start <= at < end:
            continue
        if sold is not None and sold < end:
            durations.append((max(sold - at, 0.0), True))
        else:
            durations.append((max(min(last_seen if last_seen is not None else at, end) - at, 0.0), False))
    sales = sum(1 for _, observed in durations if observed)
    curve = robust.kaplan_meier(durations)
    q = {name: robust.km_quantile(curve, p) for name, p in (("p25", 0.25), ("median", 0.5), ("p75", 0.75))}
    # the curve itself, [hours, share still unsold], where it rests on enough sales to be drawn
    drawn = [[round(t / 3600.0, 4), round(share, 4)] for t, share in curve] if sales >= MIN_SALES_TO_TIME else []
    return {name: measure(None if v is None else v / 3600.0, sales, MIN_SALES_TO_TIME, 2) for name, v in q.items()} | {
        "listings": len(durations), "curve": drawn}


def _coverage(sold_totals: list[tuple[float, int]], sales: list[tuple[float, int | None, int | None]]) -> dict:
    """Observed sales between consecutive crawls against the growth of the sold search's total between them."""
    times = sorted(at for at, _, _ in sales)
    grown = observed = 0
    for (a, total_a), (b, total_b) in zip(sold_totals, sold_totals[1:], strict=False):
        if total_b > total_a:
            grown += total_b - total_a
            observed += bisect.bisect_right(times, b) - bisect.bisect_right(times, a)  # sales in (a, b]
    return measure(observed / grown if grown else None, grown, MIN_COVERAGE_SALES)


def _heat(flows: _Flows, baseline: _Flows, sell_through: float | None) -> dict:
    """100 × (0.6 × outflow lift + 0.4 × sell-through); the lift maps log2(window rate / baseline rate), clamped
    to ±2 (¼× to 4×), onto 0–1 (0.5: as usual)."""
    n = flows.outflow + baseline.outflow
    if (baseline.hours < MIN_BASELINE_HOURS or not flows.hours or n < MIN_HEAT_SALES
            or sell_through is None):
        return {"value": None, "n": n}
    lift = math.log2((flows.outflow / flows.hours + RATE_FLOOR) / (baseline.outflow / baseline.hours + RATE_FLOOR))
    score = 100 * (0.6 * (max(-2.0, min(2.0, lift)) / 4 + 0.5) + 0.4 * sell_through)
    return {"value": round(score, 1), "n": n}


def _ip_measures(d: _IpData, w: Window) -> dict[str, Any]:
    flows, recent = d.flows["window"], d.flows["recent"]
    prices = [p for _, p, _ in d.sales if p is not None]
    cuts = [(listed, p) for _, p, listed in d.sales if p is not None and listed]
    cut_sizes = [(listed - p) / listed for listed, p in cuts if p < listed]
    sell_through, cohort = _sell_through(d.created, w.start, w.now + 1e-6)
    heat = _heat(flows, d.flows["baseline"], sell_through)
    previous_cohort, previous_sold = d.previous_cohort
    previous_heat = _heat(d.flows["previous"], d.flows["previous_baseline"], _share(previous_sold, previous_cohort))
    momentum = (round(heat["value"] - previous_heat["value"], 1)
                if heat["value"] is not None and previous_heat["value"] is not None else None)
    recent_rate = recent.outflow / recent.hours if recent.hours else 0.0
    return {
        "inflow": measure(flows.inflow, flows.hours), "outflow": measure(flows.outflow, flows.hours),
        "liquidity": measure(flows.outflow / flows.inflow if flows.inflow else None, flows.inflow),
        "median_price": measure(robust.median(prices), len(prices), MIN_PRICES, 2),
        "p25_price": measure(robust.quantile(prices, 0.25), len(prices), MIN_PRICES, 2),
        "p75_price": measure(robust.quantile(prices, 0.75), len(prices), MIN_PRICES, 2),
        "trimmed_mean_price": measure(robust.trimmed_mean(prices), len(prices), MIN_PRICES, 2),
        "sell_through": measure(sell_through, cohort, MIN_CREATED),
        "time_to_sell_hours": _time_to_sell(d.created, w.start, w.now + 1e-6),
        "price_cut_share": measure(len(cut_sizes) / len(cuts) if cuts else None, len(cuts), MIN_CUT_SAMPLES),
        "median_price_cut": measure(robust.median(cut_sizes), len(cut_sizes), 1),
        "supply": measure(d.supply, 1 if d.supply is not None else 0),
        "hours_of_supply": measure(d.supply / recent_rate if d.supply is not None and recent_rate else None,
                                   recent.outflow),
        "coverage": _coverage(d.sold_totals, d.sales),
        "heat": heat,
        "momentum": {"value": momentum, "n": min(heat["n"], previous_heat["n"])},
    }


def window_measures(ip_ids: Sequence[int] | None, hours: int, now: float,
                    empty: bool = False) -> dict[int, dict[str, Any]]:
    """Definition 5 and 6 measures of each IP (all with data when ``ip_ids`` is None) over the window;
    ``empty``: the measures of IPs without any data (all insufficient)."""
    w = Window(hours, now)
    if empty:
        return {ip_id: _ip_measures(_IpData(), w) for ip_id in ip_ids or []}
    return {ip_id: _ip_measures(d, w) for ip_id, d in _load(ip_ids, w).items()}


def window_bounds(hours: int, now: float) -> tuple[datetime, datetime]:
    w = Window(hours, now)
    return w.since, naive_utc(now)
