"""Window measures (docs/concepts/measures.md, definition 5) and the heat score and momentum (definition 6), for many
IPs at once.

Every measure is a ``lib.market.values.Measure``: ``n`` is how many observations it rests on, and ``value`` is
None ("insufficient") when ``n`` is below the measure's minimum — never 0 for lack of data. A measure that
estimates something (sold-price quantiles, sell-through, time to sell, heat, momentum) is an ``Estimate``: it also
carries its 95 % ``interval`` (low, high) (docs/concepts/measures.md, definition 8; None where insufficient or
where no interval of its kind exists; a time to sell's ``high`` is None when the interval is open above).

Long windows (docs/operating/storage.md): the per-listing facts of listings last seen before the *detail
horizon* are pruned, summarized by UTC day in the daily rows. A window or previous window starting before the
detail horizon has its per-listing measures (prices, cuts, sell-through, time to sell) start at the UTC midnight
of that start, so the summarized days fall wholly inside or outside it; coverage is read from the detail horizon
on. Flows, heat's rates and supply read the hourly rows and search totals, which are kept longer, as before. The
summaries are added by the separate path at the end of this module (``_Summaries``, ``_with_summaries``).
"""

from __future__ import annotations

import bisect
import math
import statistics
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from itertools import accumulate, groupby
from operator import itemgetter
from typing import Any

import peewee

from lib.core.clock import naive_utc, to_timestamp
from lib.core.db import database, is_mysql
from lib.core.settings import get_settings
from lib.market import insufficient, intervals, reach, relist_share, robust, summaries
from lib.market.columns import CreatedRows, SaleRows
from lib.market.item_state import ON_SALE
from lib.market.marks import details_pruned_before
from lib.market.statistics import hour_bucket, hour_start, tuples
from lib.market.summaries import Sketch
from lib.market.values import Estimate, Interval, Measure, SegmentMeasures, TimeToSell, WindowMeasures
from models import (
    CrawlSearchTotal,
    IpStatsDaily,
    IpStatsHourly,
    ItemSnapshot,
    ListingEvent,
    ListingSegment,
    RelistUndecided,
    SegmentStatsDaily,
)

#: Fewest observations each measure needs (docs/concepts/measures.md).
MIN_PRICES = 5           # sold prices: median, quartiles, trimmed mean
MIN_CREATED = 10         # listings created in the window: sell-through
MIN_SALES_TO_TIME = 5    # sales among them: time to sell
MIN_CUT_SAMPLES = 5      # sales seen on sale first: price cuts
MIN_COVERAGE_SALES = 10  # growth of the sold search's total: coverage
MIN_BASELINE_HOURS = 24  # tracked hours before the window: heat
MIN_HEAT_SALES = 10      # sales in the window and its baseline together: heat
#: What each measure's n counts, with its minimum: the reason an insufficient one gives (lib.market.insufficient).
NEEDS: dict[str, tuple[int, str]] = {
    "inflow": (1, "tracked hour in the window"), "outflow": (1, "tracked hour in the window"),
    "liquidity": (1, "listing created in the window"), "median_price": (MIN_PRICES, "sold prices in the window"),
    "p25_price": (MIN_PRICES, "sold prices in the window"), "p75_price": (MIN_PRICES, "sold prices in the window"),
    "trimmed_mean_price": (MIN_PRICES, "sold prices in the window"),
    "sell_through": (MIN_CREATED, "listings created in the window"),
    "price_cut_share": (MIN_CUT_SAMPLES, "sales in the window seen on sale first"),
    "median_price_cut": (1, "sale in the window below its first price"),
    "supply": (1, "on-sale search total at the latest crawl"),
    "hours_of_supply": (1, "sale in the last 24 tracked hours"),
    "coverage": (MIN_COVERAGE_SALES, "sales of growth in the sold search's total between the window's crawls"),
}
HEAT_NEEDS = {"baseline_hours": MIN_BASELINE_HOURS, "heat_sales": MIN_HEAT_SALES, "created": MIN_CREATED,
              "sales_to_time": MIN_SALES_TO_TIME}
#: The sold-price quantiles reported, and the time-to-sell ones.
PRICE_QUANTILES = {"p25_price": 0.25, "median_price": 0.5, "p75_price": 0.75}
TIME_QUANTILES = {"p25": 0.25, "median": 0.5, "p75": 0.75}
#: The heat's trailing baseline: this long before the window.
BASELINE = timedelta(days=7)
#: Added to both outflow rates of the heat's lift, so a quiet IP's 0 → 1 sale is not infinite (one sale a day).
RATE_FLOOR = 1 / 24
#: Hours of recent outflow the hours of supply divide by.
RECENT_HOURS = 24


def raw(query: Any) -> Iterator[tuple[Any, ...]]:
    """A select's rows as the driver returns them: no per-value conversion (none of these columns needs one),
    which is most of the cost of reading a month of events. Streamed on SQLite, not fetched whole: a week's rows
    held at once at every refresh would set the worker's memory high-water mark by the window's size. (PyMySQL's
    default cursor, which MySQL/MariaDB is read with, receives a result whole before the first row.)"""
    return iter(database.execute(query))


def measure(value: float | None, n: int, minimum: int = 1, places: int = 4) -> Measure:
    if value is None or n < minimum:
        return Measure(None, n)
    return Measure(round(value, places), n)


def estimate(value: float | None, n: int, minimum: int, places: int, interval: Interval | None) -> Estimate:
    """``measure`` with its 95 % ``interval`` (None while the value is insufficient, or where none exists)."""
    if value is None or n < minimum:
        return Estimate(None, n)
    low, high = interval if interval is not None else (None, None)
    return Estimate(round(value, places), n, interval=None if interval is None else (
        None if low is None else round(low, places), None if high is None else round(high, places)))


@dataclass
class _Flows:
    inflow: int = 0
    outflow: int = 0
    hours: int = 0


@dataclass
class _IpData:
    flows: dict[str, _Flows] = field(default_factory=lambda: defaultdict(_Flows))
    sales: SaleRows = field(default_factory=SaleRows)  # (at, price, listed)
    created: CreatedRows = field(default_factory=CreatedRows)  # (at, sold, last seen)
    previous_cohort: tuple[int, int] = (0, 0)  # listings created in the previous window, and how many sold in it
    supply: int | None = None
    crawls: list[reach.CrawlReach] = field(default_factory=list)  # the window's crawls' reach (estimates)
    inflow_hours: dict[int, float] = field(default_factory=dict)  # inflow by hour before the window (estimates)
    reference: reach.AgeReference | None = None  # ages at sale where pages reached back (outflow estimate)
    sold_totals: list[tuple[float, int]] = field(default_factory=list)
    summaries: _Summaries | None = None  # pruned listings' daily summaries in reach (long windows)
    relists: relist_share.RelistSample | None = None  # the window's undecided listings and their sample (estimates)


class Window:
    """The window of ``hours`` hours ending at ``now``: the current (partial) hour and the ``hours − 1`` before.

    ``detail_from``: the detail horizon (per-listing facts before it may be summarized): a start before it is
    moved back to its UTC midnight for the per-listing measures (``cohort_start``, ``previous_cohort_start``)."""

    def __init__(self, hours: int, now: float, detail_from: float | None = None) -> None:
        self.hours, self.now = hours, now
        self.since = hour_bucket(now) - timedelta(hours=hours - 1)
        self.start = to_timestamp(self.since) or 0.0
        self.previous = self.since - timedelta(hours=hours)
        self.previous_start = self.start - hours * 3600.0
        self.detail_from = detail_from
        self.cohort_start = self._cut(self.start)
        self.previous_cohort_start = self._cut(self.previous_start)
        self.cohort_since = hour_bucket(self.cohort_start)
        self.previous_cohort_since = hour_bucket(self.previous_cohort_start)
        # coverage pairs consecutive crawls; the sales between two crawls before the detail horizon may be summarized
        self.coverage_from = self.start if detail_from is None else max(self.start, detail_from)

    def _cut(self, at: float) -> float:
        if self.detail_from is None or at >= self.detail_from:
            return at
        return at - at % 86400

    @property
    def long(self) -> bool:
        """Whether the window (or its previous window) reaches before the detail horizon."""
        return self.detail_from is not None and self.previous_start < self.detail_from


#: The events' kinds as stored: compared with ``_by_ip``'s expression around the column, not the column itself
_CREATED, _SOLD = ListingEvent.kind.db_value("created"), ListingEvent.kind.db_value("sold")


def _by_ip(column: Any, ip_ids: Sequence[int] | None) -> Any:
    """``column``, kept off any index when reading a few IPs on SQLite. Without statistics (nothing runs ANALYZE)
    SQLite takes the (kind, event_at, …) and (status, crawled_at, …) indexes for a few IPs too, and so reads every
    IP's events and totals of the window for each chunk of IPs: the window rows' rebuild grew with the square of
    the IPs (bench leaderboard, 10,000 IPs: 227 s for the 720 h rows, 40× the 1,000-IP time). A unary + keeps a
    column off indexes (SQLite's documented way), leaving the IPs' own; MySQL/MariaDB chooses by its statistics."""
    if ip_ids is None or is_mysql():
        return column
    return peewee.NodeList((peewee.SQL("+"), column), glue="")


def _ranges(w: Window) -> dict[str, tuple[datetime, datetime]]:
    end = hour_bucket(w.now) + timedelta(hours=1)
    return {"window": (w.since, end), "previous": (w.previous, w.since),
            "baseline": (w.since - BASELINE, w.since), "previous_baseline": (w.previous - BASELINE, w.previous),
            "recent": (end - timedelta(hours=RECENT_HOURS), end)}


class _Listings:
    """Whose listings' events a window reads, and what it groups them by: some IPs' (every IP's when ``ip_ids`` is
    None), by IP."""

    def __init__(self, ip_ids: Sequence[int] | None) -> None:
        self.ip_ids = None if ip_ids is None else list(ip_ids)
        self.unit: Any = ListingEvent.ip_id

    def narrow(self, query: Any, low: datetime, high: datetime | None = None) -> Any:
        """``query`` over ``ListingEvent`` kept to these listings' events from the hour ``low`` (to ``high``)."""
        # A few IPs' events are read by (ip_id, event_at); every IP's from the covering index by (kind,
        # event_at), which the query's own event_at range uses.
        if self.ip_ids is None:
            return query.where(ListingEvent.ip_id.is_null(False))
        inside = ListingEvent.ip_id.in_(self.ip_ids) & (ListingEvent.event_at >= hour_start(low))
        return query.where(inside & (ListingEvent.event_at < hour_start(high)) if high is not None else inside)


class _SegmentListings(_Listings):
    """The listings of one IP in the segments of one kind (``listing_segments``), by segment key: a listing in
    two segments is read in both."""

    def __init__(self, ip_id: int, kind: str) -> None:
        super().__init__([ip_id])
        self.kind = kind
        self.unit = ListingSegment.key

    def narrow(self, query: Any, low: datetime, high: datetime | None = None) -> Any:
        in_segment = ((ListingSegment.ip_id == ListingEvent.ip_id)
                      & (ListingSegment.source_id == ListingEvent.source_id) & (ListingSegment.kind == self.kind))
        return super().narrow(query.switch(ListingEvent).join(ListingSegment, on=in_segment), low, high)


class _KindListings(_SegmentListings):
    """Every IP's listings in the segments of one kind, by segment key: the board across franchises."""

    def __init__(self, kind: str) -> None:
        super().__init__(0, kind)
        self.ip_ids = None


def _load(ip_ids: Sequence[int] | None, w: Window) -> dict[int, _IpData]:
    data: dict[int, _IpData] = defaultdict(_IpData)
    ranges = _ranges(w)
    earliest = min(r[0] for r in ranges.values())

    def of_ips(column: Any) -> Any:
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
    listings = _Listings(ip_ids)
    _load_listings(listings, w, data)
    # The previous window's sell-through (momentum) needs only its cohort's size and sales: counted by the
    # database instead of reading a second window of listings.
    sale, first_sale = _first_sale()
    sold_in_time = peewee.Case(None, [(sale.event_at < w.cohort_start, 1)], 0)
    for ip_id, cohort, sold in raw(listings.narrow(
            ListingEvent.select(ListingEvent.ip_id, peewee.fn.COUNT(ListingEvent.event_at), peewee.fn.SUM(sold_in_time))
            .join(sale, peewee.JOIN.LEFT_OUTER, on=first_sale), w.previous_cohort_since, w.cohort_since)
            .where((_by_ip(ListingEvent.kind, ip_ids) == _CREATED) & (ListingEvent.event_at >= w.previous_cohort_start)
                   & (ListingEvent.event_at < w.cohort_start))
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
            .where(of_ips(CrawlSearchTotal.ip_id) & (CrawlSearchTotal.status == "on_sale"))):
        data[ip_id].supply = num_found
    for ip_id, at, num_found in raw(
            CrawlSearchTotal.select(CrawlSearchTotal.ip_id, CrawlSearchTotal.crawled_at, CrawlSearchTotal.num_found)
            .where(of_ips(CrawlSearchTotal.ip_id) & (_by_ip(CrawlSearchTotal.status, ip_ids) == "sold")
                   & (CrawlSearchTotal.crawled_at >= w.coverage_from) & (CrawlSearchTotal.crawled_at <= w.now))
            .order_by(CrawlSearchTotal.crawled_at)):
        if num_found is not None:
            data[ip_id].sold_totals.append((at, num_found))
    _load_reach(ip_ids, w, data)
    _load_relist_samples(ip_ids, w, data)
    if w.long:
        _load_summaries(ip_ids, w, data)
    return data


def _load_relist_samples(ip_ids: Sequence[int] | None, w: Window, data: dict[int, _IpData]) -> None:
    """Each IP's listings created in the window that were ever undecided relists, with their sample
    (``lib.market.relist_share``). Nothing with FLOW_ESTIMATES off, nor for a window reaching before the detail
    horizon, whose earlier listings' rows are pruned with them."""
    if not get_settings().flow_estimates or w.long:
        return
    r = RelistUndecided
    of_ips = r.ip_id.in_(list(ip_ids)) if ip_ids is not None else r.ip_id.is_null(False)
    rows = sorted(raw(r.select(r.ip_id, r.created, r.share, r.relist)
                      .where(of_ips & (r.created >= w.start) & (r.created <= w.now))), key=itemgetter(0))
    for ip_id, of_ip in groupby(rows, key=itemgetter(0)):
        data[ip_id].relists = relist_share.RelistSample.of(
            (created, share, None if relist is None else bool(relist)) for _, created, share, relist in of_ip)


#: How long before a window the reference ages at sale and the inflow by hour are read (a listing's life).
REACH_HISTORY = timedelta(hours=reach.MAX_AGE_HOURS)
#: The window's crawls are read from this long before its start, so that its first hours have the crawl before them.
WINDOW_CRAWLS_FROM = 2 * 3600.0


def _load_reach(ip_ids: Sequence[int] | None, w: Window, data: dict[int, _IpData]) -> None:
    """Each IP's crawls of the window with how far their pages reached back (``lib.market.reach``); for the IPs
    whose sold pages fell short, the inflow by hour of a listing's life before and the reference ages at sale
    (docs/concepts/measures.md, "Estimates"). Nothing with FLOW_ESTIMATES off: the flows stay counted."""
    if not get_settings().flow_estimates:
        return
    of_ips = (CrawlSearchTotal.ip_id.in_(list(ip_ids)) if ip_ids is not None
              else CrawlSearchTotal.ip_id.is_null(False))
    in_window = (CrawlSearchTotal.crawled_at >= w.start - WINDOW_CRAWLS_FROM) & (CrawlSearchTotal.crawled_at <= w.now)
    # only the IPs with a crawl whose pages fell short of a listing's life are read crawl by crawl: most IPs'
    # searches end on their pages (no reach) or reach back further
    short_ips = [ip_id for (ip_id,) in raw(
        CrawlSearchTotal.select(CrawlSearchTotal.ip_id).distinct()
        .where(of_ips & in_window & CrawlSearchTotal.reach.is_null(False)
               & (CrawlSearchTotal.reach > CrawlSearchTotal.crawled_at - reach.MAX_AGE_HOURS * 3600.0)))]
    if not short_ips:
        return
    rows: dict[int, dict[float, dict[str, tuple[float | None, float | None]]]] = defaultdict(dict)
    for ip_id, at, status, far, newest in raw(
            CrawlSearchTotal.select(CrawlSearchTotal.ip_id, CrawlSearchTotal.crawled_at, CrawlSearchTotal.status,
                                    CrawlSearchTotal.reach, CrawlSearchTotal.newest)
            .where(CrawlSearchTotal.ip_id.in_(short_ips) & in_window)):
        rows[ip_id].setdefault(at, {})[status] = (far, newest)
    short: list[int] = []
    for ip_id, crawls in rows.items():
        previous = None
        d = data[ip_id]
        times = sorted(crawls)
        sold_reach = reach.furthest_later([crawls[at].get("sold", (None, None))[0] for at in times])
        for at, sold in zip(times, sold_reach, strict=True):
            on_sale = crawls[at].get("on_sale", (None, None))
            d.crawls.append(reach.CrawlReach(at, previous, on_sale[0], sold, on_sale[1]))
            previous = at
        if any(c.sold is not None and c.at - c.sold < reach.MAX_AGE_HOURS * 3600.0 for c in d.crawls):
            short.append(ip_id)
    if not short:
        return
    since = w.since - REACH_HISTORY
    for ip_id, bucket, inflow in raw(IpStatsHourly.select(IpStatsHourly.ip_id, IpStatsHourly.hour_bucket,
                                                          IpStatsHourly.inflow)
                                     .where(IpStatsHourly.ip_id.in_(short) & (IpStatsHourly.hour_bucket >= since))):
        at = to_timestamp(bucket if isinstance(bucket, datetime) else datetime.fromisoformat(str(bucket)))
        data[ip_id].inflow_hours[int((at or 0.0) // 3600)] = float(inflow or 0)
    _fill_inflow_hours(short, w, data)
    shared = _reference(w)
    for ip_id in short:
        data[ip_id].reference = shared


def _fill_inflow_hours(ip_ids: Sequence[int], w: Window, data: dict[int, _IpData]) -> None:
    """Each IP's inflow by hour scaled up where its crawls' on-sale pages did not reach back to the crawl before
    (``reach.filled_inflow``), from its on-sale crawls of the ``REACH_HISTORY`` before the window and those of the
    window: the outflow estimate weighs ages at sale by these hours."""
    low = w.start - REACH_HISTORY.total_seconds()
    history: dict[int, dict[float, tuple[float | None, float | None]]] = defaultdict(dict)
    for ip_id, at, far, newest in raw(
            CrawlSearchTotal.select(CrawlSearchTotal.ip_id, CrawlSearchTotal.crawled_at, CrawlSearchTotal.reach,
                                    CrawlSearchTotal.newest)
            .where(CrawlSearchTotal.ip_id.in_(list(ip_ids)) & (CrawlSearchTotal.status == ON_SALE)
                   & (CrawlSearchTotal.crawled_at >= low)
                   & (CrawlSearchTotal.crawled_at < w.start - WINDOW_CRAWLS_FROM))):
        history[ip_id][at] = (far, newest)
    for ip_id in ip_ids:
        d = data[ip_id]
        seen = history.get(ip_id, {}) | {c.at: (c.on_sale, c.newest) for c in d.crawls}
        chain: list[reach.CrawlReach] = []
        previous = None
        for at in sorted(seen):
            far, newest = seen[at]
            chain.append(reach.CrawlReach(at, previous, far, None, newest))
            previous = at
        d.inflow_hours = reach.filled_inflow(d.inflow_hours, chain)


#: At most this many reference sales are read (the newest).
REFERENCE_SALES = 20000


def _reference(w: Window) -> reach.AgeReference:
    """The ages at sale of the sales of the IPs whose sold pages reached back over a listing's whole life in every
    crawl of the ``REACH_HISTORY`` before the window's end, by IP."""
    low = w.now - REACH_HISTORY.total_seconds()
    crawled = (CrawlSearchTotal.status == "sold") & (CrawlSearchTotal.crawled_at >= low) \
        & (CrawlSearchTotal.crawled_at <= w.now)
    short = CrawlSearchTotal.select(CrawlSearchTotal.ip_id).where(
        crawled & CrawlSearchTotal.reach.is_null(False)
        & (CrawlSearchTotal.reach > CrawlSearchTotal.crawled_at - reach.MAX_AGE_HOURS * 3600.0))
    covered = (CrawlSearchTotal.select(CrawlSearchTotal.ip_id).distinct()
               .where(crawled & CrawlSearchTotal.ip_id.not_in(short)))
    groups: dict[int, list[float]] = defaultdict(list)
    priced: dict[int, list[tuple[float, float]]] = defaultdict(list)
    for ip_id, at, created, price in raw(
            ListingEvent.select(ListingEvent.ip_id, ListingEvent.event_at, ListingEvent.created_at, ListingEvent.price)
            .where((ListingEvent.kind == _SOLD) & ListingEvent.ip_id.in_(covered) & (ListingEvent.event_at >= low)
                   & (ListingEvent.event_at <= w.now) & ListingEvent.created_at.is_null(False))
            .order_by(ListingEvent.event_at.desc()).limit(REFERENCE_SALES)):
        age = max(at - created, 0.0)
        groups[ip_id].append(age)
        if price is not None:
            priced[ip_id].append((age, float(price)))
    return reach.AgeReference.of(list(groups.values()), list(priced.values()))


def _first_sale() -> tuple[Any, Any]:
    """An alias of the events for a listing's first sale, and the condition joining it to its created event."""
    sale = ListingEvent.alias()
    return sale, ((sale.ip_id == ListingEvent.ip_id) & (sale.source_id == ListingEvent.source_id)
                  & (sale.kind == "sold") & (sale.occurrence == 0))


def _sales_query(listings: _Listings, w: Window) -> Any:
    """The window's sales: (unit, at, price, listed price), up to the window's end (a window read as of a past time,
    a backtest's or a benchmark's day, has later sales)."""
    return listings.narrow(
        ListingEvent.select(listings.unit, ListingEvent.event_at, ListingEvent.price, ListingEvent.listed_price),
        w.cohort_since).where((_by_ip(ListingEvent.kind, listings.ip_ids) == _SOLD)
                              & (ListingEvent.event_at >= w.cohort_start) & (ListingEvent.event_at <= w.now))


def _created_query(listings: _Listings, w: Window) -> Any:
    """The window's listings created: (unit, at, first sale, last sighting)."""
    sale, first_sale = _first_sale()
    return listings.narrow(
        ListingEvent.select(listings.unit, ListingEvent.event_at, sale.event_at, ItemSnapshot.last_seen)
        .join(sale, peewee.JOIN.LEFT_OUTER, on=first_sale)
        .switch(ListingEvent)
        .join(ItemSnapshot, peewee.JOIN.LEFT_OUTER, on=((ItemSnapshot.ip_id == ListingEvent.ip_id)
                                                        & (ItemSnapshot.source_id == ListingEvent.source_id))),
        w.cohort_since).where((_by_ip(ListingEvent.kind, listings.ip_ids) == _CREATED)
                              & (ListingEvent.event_at >= w.cohort_start))


def _load_listings(listings: _Listings, w: Window, data: dict[Any, _IpData]) -> None:
    """The window's sales, and its listings created with their first sale and last sighting, by ``listings``'
    unit."""
    for unit, at, price, listed in raw(_sales_query(listings, w)):
        data[unit].sales.append((at, price, listed))
    for unit, at, sold_at, last_seen in raw(_created_query(listings, w)):
        data[unit].created.append((at, sold_at, last_seen))


def _listings_by_key(listings: _SegmentListings, w: Window) -> Iterator[tuple[str, _IpData]]:
    """``_load_listings`` one segment at a time: each key with its window's sales and listings created, in the keys'
    code-point order, so only one segment's listings are held at once (a board across every IP would otherwise
    hold the whole market's week). Both reads are ordered by key and walked side by side; SQLite sorts them in its
    own memory, bounded by its cache size (past it, in temporary files)."""
    # by the keys' bytes, code-point order on both databases: SQLite compares bytes; MySQL's exact collations are
    # binary but PAD SPACE ("a" and "a " compare equal, so their order is not fixed), the bytes are not
    order = peewee.Cast(listings.unit, "BINARY") if is_mysql() else listings.unit
    sales = groupby(raw(_sales_query(listings, w).order_by(order)), key=itemgetter(0))
    created = groupby(raw(_created_query(listings, w).order_by(order)), key=itemgetter(0))
    sale_group, created_group = next(sales, None), next(created, None)
    previous: str | None = None
    while sale_group is not None or created_group is not None:
        key = min(g[0] for g in (sale_group, created_group) if g is not None)
        assert previous is None or key > previous, f"segment keys read out of order: {previous!r}, then {key!r}"
        previous = key
        d = _IpData()
        if sale_group is not None and sale_group[0] == key:
            for _, at, price, listed in sale_group[1]:
                d.sales.append((at, price, listed))
            sale_group = next(sales, None)
        if created_group is not None and created_group[0] == key:
            for _, at, sold_at, last_seen in created_group[1]:
                d.created.append((at, sold_at, last_seen))
            created_group = next(created, None)
        yield key, d


def _sell_through(created: Iterable[tuple[float, float | None, float | None]], start: float,
                  end: float) -> tuple[float | None, int]:
    """Of the listings created in [start, end), the share seen sold before ``end`` (still open ones count as not
    sold), and the cohort's size; None below ``MIN_CREATED``."""
    cohort = [(at, sold) for at, sold, _ in created if start <= at < end]
    return _share(sum(1 for at, s in cohort if s is not None and s < end), len(cohort)), len(cohort)


def _share(sold: int, cohort: int) -> float | None:
    return sold / cohort if cohort >= MIN_CREATED else None


def _time_to_sell(created: Iterable[tuple[float, float | None, float | None]], start: float, end: float,
                  crawls: Sequence[reach.CrawlReach] = ()) -> TimeToSell:
    """Kaplan–Meier over the listings created in the window: sold ones at sale − created, the others censored at
    the last time a sale of theirs would have been seen: their last sighting on sale, or the window's last crawl
    whose sold pages reached back to their creation (``crawls``, where their reach is known), whichever is later.
    Censored at the last sighting alone, a listing of a busy IP leaves the risk set when it drops off the on-sale
    pages while its sale would still show on the sold pages, and the sales seen then shorten the curve. Where the
    on-sale pages of the crawl after a listing's creation did not reach back to it, it is left out: had it not
    sold it would not have been seen, so those seen are the quick sales of their span (``_on_sale_pages_cover``)."""
    seen_until = _sold_pages_cover(crawls, end)
    sampled = _on_sale_pages_cover(crawls)
    durations = []
    for at, sold, last_seen in created:
        if not start <= at < end or not sampled(at):
            continue
        if sold is not None and sold < end:
            durations.append((max(sold - at, 0.0), True))
        else:
            until = max(last_seen if last_seen is not None else at, seen_until(at))
            durations.append((max(min(until, end) - at, 0.0), False))
    sales = sum(1 for _, observed in durations if observed)
    steps = robust.kaplan_meier_steps(durations)
    curve = robust.curve_of(steps)
    # the curve itself, [hours, share still unsold], where it rests on enough sales to be drawn
    drawn = _drawn(curve) if sales >= MIN_SALES_TO_TIME else ()
    bands = intervals.survival_bands(steps) if sales >= MIN_SALES_TO_TIME else None
    quartiles = []
    for p in TIME_QUANTILES.values():
        v = robust.km_quantile(curve, p)
        ci = intervals.bands_quantile_interval(bands, p) if bands is not None else None
        quartiles.append(estimate(None if v is None else v / 3600.0, sales, MIN_SALES_TO_TIME, 2,
                                  None if ci is None else _hours(ci)))
    p25, median, p75 = quartiles
    return TimeToSell(p25, median, p75, len(durations), drawn)


def _sold_pages_cover(crawls: Sequence[reach.CrawlReach], end: float) -> Callable[[float], float]:
    """For a listing created at ``c``: the last crawl before ``end`` whose sold pages reached back to ``c`` (its
    sold reach at or before ``c``, or the whole search), -inf without one."""
    covering = sorted((float("-inf") if k.sold is None else k.sold, k.at) for k in crawls if k.at < end)
    reaches = [r for r, _ in covering]
    latest = list(accumulate((at for _, at in covering), max))

    def seen_until(created: float) -> float:
        k = bisect.bisect_right(reaches, created)
        return latest[k - 1] if k else float("-inf")

    return seen_until


def _on_sale_pages_cover(crawls: Sequence[reach.CrawlReach]) -> Callable[[float], bool]:
    """Whether a listing created at ``c`` was in reach of the on-sale pages of the first crawl after it (their
    reach at or before ``c``, or the whole search): then it is seen whether it sells or not. True without the
    crawls' reach (every listing counts)."""
    ordered = sorted((k.at, k.on_sale) for k in crawls)
    times = [at for at, _ in ordered]

    def sampled(created: float) -> bool:
        k = bisect.bisect_right(times, created)
        if k == len(ordered):
            return True  # no crawl after it yet: it is seen by the next one whatever it does
        reach_of = ordered[k][1]
        return reach_of is None or reach_of <= created

    return sampled


def _drawn(curve: Sequence[tuple[float, float]]) -> tuple[tuple[float, float], ...]:
    """A Kaplan–Meier curve's steps as drawn: (hours, share still unsold)."""
    return tuple((round(t / 3600.0, 4), round(share, 4)) for t, share in curve)


def _hours(interval: tuple[float, float | None]) -> tuple[float, float | None]:
    return interval[0] / 3600.0, None if interval[1] is None else interval[1] / 3600.0


def _wilson(share: float | None, cohort: int) -> tuple[float, float] | None:
    return None if share is None else intervals.wilson_interval(round(share * cohort), cohort)


def _coverage(sold_totals: list[tuple[float, int]], sales: Iterable[tuple[float, int | None, int | None]]) -> Measure:
    """Observed sales between consecutive crawls against the growth of the sold search's total between them."""
    times = sorted(at for at, _, _ in sales)
    grown = observed = 0
    for (a, total_a), (b, total_b) in zip(sold_totals, sold_totals[1:], strict=False):
        if total_b > total_a:
            grown += total_b - total_a
            observed += bisect.bisect_right(times, b) - bisect.bisect_right(times, a)  # sales in (a, b]
    return measure(observed / grown if grown else None, grown, MIN_COVERAGE_SALES)


@dataclass(frozen=True, slots=True)
class _Heat:
    """A window's heat and its variance, which momentum's interval needs too."""

    heat: Estimate
    variance: float | None = None


def _heat(flows: _Flows, baseline: _Flows, sell_through: float | None, cohort: int) -> _Heat:
    """100 × (0.6 × outflow lift + 0.4 × sell-through); the lift maps log2(window rate / baseline rate), clamped
    to ±2 (¼× to 4×), onto 0–1 (0.5: as usual). Its interval: ``_heat_variance`` (the delta method), ± z·sd,
    within 0–100; ``variance`` is kept for momentum's."""
    n = flows.outflow + baseline.outflow
    if (baseline.hours < MIN_BASELINE_HOURS or not flows.hours or n < MIN_HEAT_SALES
            or sell_through is None):
        return _Heat(Estimate(None, n))
    rate, base = flows.outflow / flows.hours + RATE_FLOOR, baseline.outflow / baseline.hours + RATE_FLOOR
    lift = math.log2(rate / base)
    score = 100 * (0.6 * (max(-2.0, min(2.0, lift)) / 4 + 0.5) + 0.4 * sell_through)
    variance = _heat_variance(flows, baseline, rate, base, sell_through, cohort)
    return _Heat(Estimate(round(score, 1), n, interval=_normal(score, variance, 0.0, 100.0)), variance)


def _heat_variance(flows: _Flows, baseline: _Flows, rate: float, base: float, sell_through: float,
                   cohort: int) -> float:
    """The heat's variance by the delta method (docs/concepts/measures.md, definition 8): each outflow count Poisson
    (variance the count, at least 1), so Var ln(rate) = Var(count) / hours² / rate²; the lift's slope 1/4 everywhere
    (the clamp only narrows); sell-through's variance from the Agresti–Coull p̃ = (sold + 2) / (cohort + 4); the
    two parts taken as independent."""
    var_lift = (max(flows.outflow, 1) / flows.hours ** 2 / rate ** 2
                + max(baseline.outflow, 1) / baseline.hours ** 2 / base ** 2) / math.log(2) ** 2
    p = (sell_through * cohort + 2) / (cohort + 4)
    return 100 ** 2 * ((0.6 / 4) ** 2 * var_lift + 0.4 ** 2 * p * (1 - p) / (cohort + 4))


def _normal(value: float, variance: float, low: float, high: float) -> tuple[float, float]:
    half = intervals.z_of(intervals.LEVEL) * math.sqrt(variance)
    return round(max(low, value - half), 1), round(min(high, value + half), 1)


def _momentum(heat: _Heat, previous: _Heat, flows: dict[str, _Flows], hours: int) -> Estimate:
    """Heat minus the previous window's heat; its interval: ± z·sd, sd² = the two heats' variances − 2 × their
    covariance (``_heats_covariance``), within −100…100."""
    n = min(heat.heat.n, previous.heat.n)
    now, before = heat.heat.value, previous.heat.value
    if now is None or before is None or heat.variance is None or previous.variance is None:
        return Estimate(None, n)
    variance = heat.variance + previous.variance - 2 * _heats_covariance(flows, hours)
    return Estimate(round(now - before, 1), n, interval=_normal(now - before, max(variance, 0.0), -100.0, 100.0))


def _heats_covariance(flows: dict[str, _Flows], hours: int) -> float:
    """The covariance of a window's heat and its previous window's (docs/concepts/measures.md, definition 8), by
    the delta method of ``_heat_variance``: the two heats share outflow counts, not listings (the two cohorts are
    disjoint, and the window's own hours come after everything the previous heat reads). The window's baseline
    overlaps the previous window, and the previous window's baseline, so with each range's log rate
    ℓ = ln(count / hours + 1/24) and Cov(ℓ_X, ℓ_Y) = (the count in X ∩ Y, Poisson) / (hours_X · hours_Y ·
    rate_X · rate_Y):

        Cov(heat, previous heat) = 100² · (0.6/4)² / ln² 2 · (Cov(ℓ_baseline, ℓ_previous baseline)
                                                          − Cov(ℓ_baseline, ℓ_previous window)).

    A window of h < 168 hours lies inside its baseline's 168: baseline ∩ previous window = the previous window,
    baseline ∩ previous baseline = the baseline's other 168 − h hours. From 168 hours on the baseline lies inside
    the previous window and apart from the previous baseline."""
    baseline, previous, previous_baseline = flows["baseline"], flows["previous"], flows["previous_baseline"]
    if not (baseline.hours and previous.hours and previous_baseline.hours):
        return 0.0

    def log_rate_covariance(shared: int, x: _Flows, y: _Flows) -> float:
        rate_x, rate_y = x.outflow / x.hours + RATE_FLOOR, y.outflow / y.hours + RATE_FLOOR
        return shared / (x.hours * y.hours * rate_x * rate_y)

    if hours * 3600.0 < BASELINE.total_seconds():
        with_previous = log_rate_covariance(previous.outflow, baseline, previous)
        with_previous_baseline = log_rate_covariance(max(baseline.outflow - previous.outflow, 0), baseline,
                                                     previous_baseline)
    else:
        with_previous, with_previous_baseline = log_rate_covariance(baseline.outflow, baseline, previous), 0.0
    return 100 ** 2 * (0.6 / 4) ** 2 * (with_previous_baseline - with_previous) / math.log(2) ** 2


@dataclass(frozen=True, slots=True)
class _PerListing:
    """The per-listing measures a long window reads from the daily summaries as well (``_LongParts.measures``)."""

    p25_price: Estimate
    median_price: Estimate
    p75_price: Estimate
    trimmed_mean_price: Measure
    time_to_sell_hours: TimeToSell
    price_cut_share: Measure
    median_price_cut: Measure


def _detail_per_listing(d: _IpData, w: Window, prices: list[int], cuts: list[tuple[int, int]],
                        cut_sizes: list[float]) -> _PerListing:
    """The per-listing measures from the listings' own facts."""
    p25, median, p75 = (estimate(robust.quantile(prices, q), len(prices), MIN_PRICES, 2,
                                 intervals.quantile_interval(sorted(prices), q) if len(prices) >= MIN_PRICES else None)
                        for q in PRICE_QUANTILES.values())
    return _PerListing(
        p25, median, p75, measure(robust.trimmed_mean(prices), len(prices), MIN_PRICES, 2),
        _time_to_sell(d.created, w.cohort_start, w.now + 1e-6, d.crawls),
        measure(len(cut_sizes) / len(cuts) if cuts else None, len(cuts), MIN_CUT_SAMPLES),
        measure(robust.median(cut_sizes), len(cut_sizes), 1))


def _price_shift(d: _IpData) -> tuple[float, float] | None:
    """Where the window's sold pages fell short of a listing's life (their sales are those of the younger, and
    cheaper, listings): how much higher the unseen sales' prices run (``reach.price_shift``, at the crawls'
    median visible age), as a log ratio, and its variance. None where they did not, or without a reference."""
    if d.reference is None:
        return None
    visible = [c.at - c.sold for c in d.crawls if c.sold is not None and c.previous is not None]
    if not visible:
        return None
    age = statistics.median(visible)
    if age >= reach.MAX_AGE_HOURS * 3600.0:
        return None
    return reach.price_shift(d.reference, age)


def _estimated_prices(prices: list[int], per: _PerListing, outflow: Measure, seen: int,
                      shift: tuple[float, float] | None) -> _PerListing:
    """The price quantiles of all the window's sales where outflow is estimated (``lib.market.reach``): the
    sales seen, a share seen/outflow of them, and the rest priced as they are raised by the price shift
    (``reach.mixture_quantile``). The interval: the seen quantile's (as a log half-width) and the spread of the
    quantile over the shift's and the unseen share's own intervals, combined."""
    if shift is None or not isinstance(outflow, Estimate) or not outflow.value or outflow.interval is None:
        return per
    z = intervals.z_of(intervals.LEVEL)
    value, variance = shift
    sd = math.sqrt(variance)
    low_out, high_out = outflow.interval

    def unseen(total: float | None) -> float:
        return 1 - seen / total if total else 0.0

    def moved(m: Estimate, q: float) -> Estimate:
        at = reach.mixture_quantile(prices, unseen(outflow.value), value, q)
        if m.value is None or m.value <= 0 or at is None:
            return m
        ends = [reach.mixture_quantile(prices, u, value + k * z * sd, q)
                for k in (-1, 1) for u in (unseen(low_out), unseen(high_out or outflow.value))]
        spread = max(abs(math.log(e / at)) for e in ends if e)
        low, high = m.interval or (m.value, m.value)
        own = max(math.log(m.value / low) if low else 0.0, math.log(high / m.value) if high else 0.0)
        half = math.hypot(own, spread)
        return Estimate(round(at, 2), m.n, interval=(round(at * math.exp(-half), 2), round(at * math.exp(half), 2)))

    return replace(per, p25_price=moved(per.p25_price, 0.25), median_price=moved(per.median_price, 0.5),
                   p75_price=moved(per.p75_price, 0.75))


def _flow_estimates(d: _IpData, w: Window, flows: _Flows) -> tuple[Measure, Measure]:
    """Inflow and outflow: the counts, or estimates with their interval where the window's crawls did not reach
    back far enough (``lib.market.reach``; docs/concepts/measures.md, "Estimates"), inflow less the relists its
    undecided listings are estimated to hold (``lib.market.relist_share``), their ``n`` the tracked hours either
    way."""
    inflow, outflow = measure(flows.inflow, flows.hours), measure(flows.outflow, flows.hours)
    if not flows.hours:
        return inflow, outflow
    if not d.crawls:
        return relist_share.without_relists(inflow, flows.inflow, d.relists), outflow
    end = w.now + 1e-6
    estimated = reach.inflow_estimate([at for at, _, _ in d.created], d.crawls, w.start, end)
    if estimated is not None:
        inflow = _shifted(estimated, flows.inflow, flows.hours)
    if d.reference is not None:
        sales = [at for at, _, _ in d.sales]
        estimated = reach.outflow_estimate(sales, d.crawls, d.inflow_hours, d.reference, w.start, end)
        if estimated is not None:
            outflow = _shifted(estimated, flows.outflow, flows.hours)
    return relist_share.without_relists(inflow, flows.inflow, d.relists), outflow


def _shifted(estimated: Estimate, counted: int, hours: int) -> Estimate:
    """An estimate made from the listings read (``n``: those counted) moved onto the hourly rows' count: what it
    adds to the count is added to the rows'."""
    added = (estimated.value or 0.0) - estimated.n
    low, high = estimated.interval or (None, None)
    return Estimate(round(counted + added, 1), hours, interval=(
        None if low is None else round(counted + low - estimated.n, 1),
        None if high is None else round(counted + high - estimated.n, 1)))


def _seen_share(counted: int, outflow: Estimate) -> Measure:
    """Coverage where outflow is estimated: the sales the pages saw against the estimate, ``n`` the sales seen
    (the site's total is not read: it undercounts and caps)."""
    if outflow.value is None or outflow.value <= 0:
        return Measure(None, counted)
    return measure(min(1.0, counted / outflow.value), counted)


def _ip_measures(d: _IpData, w: Window) -> WindowMeasures:
    flows, recent = d.flows["window"], d.flows["recent"]
    prices = [p for _, p, _ in d.sales if p is not None]
    cuts = [(listed, p) for _, p, listed in d.sales if p is not None and listed]
    cut_sizes = [(listed - p) / listed for listed, p in cuts if p < listed]
    sell_through, cohort = _sell_through(d.created, w.cohort_start, w.now + 1e-6)
    previous_cohort, previous_sold = d.previous_cohort
    long = _LongParts.of(d, w, prices, cut_sizes) if d.summaries is not None else None
    if long is not None:
        sell_through, cohort = _share(long.sold, long.cohort), long.cohort
        previous_cohort, previous_sold = long.previous_cohort, long.previous_sold
    heat = _heat(flows, d.flows["baseline"], sell_through, cohort)
    previous_heat = _heat(d.flows["previous"], d.flows["previous_baseline"], _share(previous_sold, previous_cohort),
                          previous_cohort)
    recent_rate = recent.outflow / recent.hours if recent.hours else 0.0
    per = long.measures(len(cuts)) if long is not None else _detail_per_listing(d, w, prices, cuts, cut_sizes)
    inflow, outflow = _flow_estimates(d, w, flows)
    if long is None:
        per = _estimated_prices(prices, per, outflow, flows.outflow, _price_shift(d))
    measures = WindowMeasures(
        inflow=inflow, outflow=outflow,
        liquidity=measure(flows.outflow / flows.inflow if flows.inflow else None, flows.inflow),
        p25_price=per.p25_price, median_price=per.median_price, p75_price=per.p75_price,
        trimmed_mean_price=per.trimmed_mean_price,
        sell_through=estimate(sell_through, cohort, MIN_CREATED, 4, _wilson(sell_through, cohort)),
        time_to_sell_hours=per.time_to_sell_hours, price_cut_share=per.price_cut_share,
        median_price_cut=per.median_price_cut,
        supply=measure(d.supply, 1 if d.supply is not None else 0),
        hours_of_supply=measure(d.supply / recent_rate if d.supply is not None and recent_rate else None,
                                recent.outflow),
        coverage=(_seen_share(flows.outflow, outflow) if isinstance(outflow, Estimate)
                  else _coverage(d.sold_totals, d.sales)),
        heat=heat.heat,
        momentum=_momentum(heat, previous_heat, d.flows, w.hours),
    )
    parts = insufficient.HeatParts(baseline_hours=d.flows["baseline"].hours, window_hours=flows.hours,
                                   sell_through_ok=sell_through is not None)
    return insufficient.explain(measures, w.now, NEEDS, HEAT_NEEDS, parts, previous_heat.heat.value is not None)


def window_measures(ip_ids: Sequence[int] | None, hours: int, now: float,
                    empty: bool = False, detail_from: float | None = None) -> dict[int, WindowMeasures]:
    """Definition 5 and 6 measures of each IP (all with data when ``ip_ids`` is None) over the window;
    ``empty``: the measures of IPs without any data (all insufficient). ``detail_from``: the detail horizon at
    ``now`` (``lib.market.retention.detail_horizon``): the readers pass it so a window reads the same before and
    after a pruning pass; a later horizon already pruned to wins (RETENTION_DETAIL shortened since), and without
    it the one pruned to, if any, is used."""
    w = Window(hours, now, _detail_floor(detail_from))
    if empty:
        return {ip_id: _ip_measures(_IpData(), w) for ip_id in ip_ids or []}
    return {ip_id: _ip_measures(d, w) for ip_id, d in _load(ip_ids, w).items()}


def _detail_floor(detail_from: float | None) -> float | None:
    """The detail horizon a window reads by: ``detail_from``, or a later one already pruned to (``window_measures``)."""
    floors = [f for f in (detail_from, details_pruned_before()) if f is not None]
    return max(floors) if floors else None


def segment_measures(ip_id: int, kind: str, hours: int, now: float,
                     detail_from: float | None = None) -> dict[str, SegmentMeasures]:
    """The window measures (definition 5) of each segment of ``kind`` of the IP with listings created or sold in
    the window, by key: every definition restricted to the segment's listings (``listing_segments``), so a
    listing in two segments counts in both. Flows are the segment's events in the window's hours, each with the
    IP's tracked hours as ``n``. A window starting before the detail horizon (``detail_from``, as
    ``window_measures``) reads its segments' pruned listings from their daily summaries (``segment_stats_daily``),
    and all its measures, flows included, start at the UTC midnight of its first hour (definition 7)."""
    w = Window(hours, now, _detail_floor(detail_from))
    end = naive_utc(w.start + hours * 3600.0)
    tracked = (IpStatsHourly.select().where((IpStatsHourly.ip_id == ip_id)
                                            & (IpStatsHourly.hour_bucket >= w.cohort_since)
                                            & (IpStatsHourly.hour_bucket < end)).count())
    return _segments(_SegmentListings(ip_id, kind), w, tracked)


def kind_measures(kind: str, hours: int, now: float, detail_from: float | None = None) -> dict[str, SegmentMeasures]:
    """``segment_measures`` across every IP: each segment of ``kind`` over all franchises' listings
    (docs/concepts/measures.md "Segments": "what sells across franchises"). Flows carry the window's hours (from
    the midnight a long window starts at) as ``n``."""
    w = Window(hours, now, _detail_floor(detail_from))
    return _segments(_KindListings(kind), w, round((w.start - w.cohort_start) / 3600.0) + hours)


def _segments(listings: _SegmentListings, w: Window, tracked: int) -> dict[str, SegmentMeasures]:
    """Each segment's measures: its listings' events of the window (and, for a long window, the summaries of its
    pruned listings), its flows counted from them (``tracked`` hours as their ``n``); read one segment at a time
    (``_listings_by_key``)."""
    summarized: dict[str, _IpData] = defaultdict(_IpData)
    if w.long:
        _load_segment_summaries(listings, w, summarized)
    measures = {}
    for key, d in _listings_by_key(listings, w):
        if key in summarized:
            d.summaries = summarized.pop(key).summaries
        measures[key] = _segment_measures(d, w, tracked)
    for key, d in summarized.items():  # segments whose listings in reach are all pruned
        measures[key] = _segment_measures(d, w, tracked)
    return measures


def _segment_measures(d: _IpData, w: Window, tracked: int) -> SegmentMeasures:
    end = w.start + w.hours * 3600.0
    days = d.summaries.days if d.summaries is not None else []
    inflow = sum(1 for at, _, _ in d.created if at < end) + sum(day["pruned_created"] for day in days)
    outflow = sum(1 for at, _, _ in d.sales if at < end) + sum(day["pruned_sales"] for day in days)
    d.flows["window"] = _Flows(inflow, outflow, tracked)
    # a segment's measures are its listings' (docs/concepts/measures.md "Segments"): the IP's search totals
    # (supply, coverage) and the heat's 7-day baseline are not the segment's
    return _ip_measures(d, w).segment()


def window_bounds(hours: int, now: float) -> tuple[datetime, datetime]:
    w = Window(hours, now)
    return w.since, naive_utc(now)



# ---- long windows: the pruned listings' daily summaries (docs/operating/storage.md) ----

@dataclass
class _Summaries:
    """The daily rows' summaries of pruned listings of one IP, from the previous window's cohort start on."""

    days: list[dict[str, Any]] = field(default_factory=list)  # the daily rows as read: column name → value


def _load_summaries(ip_ids: Sequence[int] | None, w: Window, data: dict[int, _IpData]) -> None:
    """Attach to each IP the summaries of the days from the previous cohort's start to the detail horizon."""
    assert w.detail_from is not None
    columns: list[Any] = [IpStatsDaily.ip_id, IpStatsDaily.day, IpStatsDaily.pruned_created,
                          IpStatsDaily.pruned_sold_by, IpStatsDaily.pruned_sold_times, IpStatsDaily.pruned_censored,
                          IpStatsDaily.pruned_prices, IpStatsDaily.pruned_cut_samples, IpStatsDaily.pruned_cuts]
    names = [c.name for c in columns]
    of_ips = IpStatsDaily.ip_id.in_(list(ip_ids)) if ip_ids is not None else IpStatsDaily.ip_id.is_null(False)
    for row in tuples(IpStatsDaily.select(*columns).where(  # converted: ``day`` is compared as a datetime
            of_ips & (IpStatsDaily.day >= naive_utc(w.previous_cohort_start))
            & (IpStatsDaily.day < naive_utc(w.detail_from))
            & ((IpStatsDaily.pruned_created > 0) | IpStatsDaily.pruned_prices.is_null(False)))):
        values = dict(zip(names, row, strict=True))
        d = data[values["ip_id"]]
        if d.summaries is None:
            d.summaries = _Summaries()
        d.summaries.days.append(values)


def _load_segment_summaries(listings: _SegmentListings, w: Window, data: dict[str, _IpData]) -> None:
    """Attach to each segment the summaries of its pruned listings' days from the window's cohort start (its UTC
    midnight) to the detail horizon, the IPs' days of one key added up (the board across IPs)."""
    assert w.detail_from is not None
    columns: list[Any] = [SegmentStatsDaily.key, SegmentStatsDaily.day, SegmentStatsDaily.pruned_created,
                          SegmentStatsDaily.pruned_sales, SegmentStatsDaily.pruned_sold_by,
                          SegmentStatsDaily.pruned_sold_times, SegmentStatsDaily.pruned_censored,
                          SegmentStatsDaily.pruned_prices, SegmentStatsDaily.pruned_cut_samples,
                          SegmentStatsDaily.pruned_cuts]
    names = [c.name for c in columns]
    of_ips = (SegmentStatsDaily.ip_id.in_(listings.ip_ids) if listings.ip_ids is not None
              else SegmentStatsDaily.ip_id.is_null(False))
    for row in tuples(SegmentStatsDaily.select(*columns).where(  # converted: ``day`` is compared as a datetime
            of_ips & (SegmentStatsDaily.kind == listings.kind) & (SegmentStatsDaily.day >= naive_utc(w.cohort_start))
            & (SegmentStatsDaily.day < naive_utc(w.detail_from)))):
        values = dict(zip(names, row, strict=True))
        d = data[values["key"]]
        if d.summaries is None:
            d.summaries = _Summaries()
        d.summaries.days.append(values)


@dataclass
class _LongParts:
    """A long window's per-listing measures: the detail's facts and the summarized days' together."""

    cohort: int
    sold: int
    previous_cohort: int
    previous_sold: int
    prices: Sketch
    cut_samples: int
    cuts: Sketch
    sold_times: Sketch
    censored: Sketch

    @classmethod
    def of(cls, d: _IpData, w: Window, prices: list[int], cut_sizes: list[float]) -> _LongParts:
        assert d.summaries is not None
        start, previous_start = naive_utc(w.cohort_start), naive_utc(w.previous_cohort_start)
        end = w.now + 1e-6
        parts = cls(0, 0, *d.previous_cohort,
                    prices=Sketch(summaries.PRICE_ACCURACY).update(prices),
                    cut_samples=0, cuts=Sketch(summaries.CUT_ACCURACY, summaries.MILLIONTH).update(cut_sizes),
                    sold_times=Sketch(summaries.DURATION_ACCURACY), censored=Sketch(summaries.DURATION_ACCURACY))
        for at, sold, last_seen in d.created:  # the detail's cohort, as _sell_through and _time_to_sell read it
            if not w.cohort_start <= at < end:
                continue
            parts.cohort += 1
            if sold is not None and sold < end:
                parts.sold += 1
                parts.sold_times.add(max(sold - at, 0.0))
            else:
                parts.censored.add(max(min(last_seen if last_seen is not None else at, end) - at, 0.0))
        for day in d.summaries.days:
            sold_by = summaries.decode_counts(day["pruned_sold_by"])
            if day["day"] >= start:  # a summarized listing sold before its last sighting: before the window's end
                parts.cohort += day["pruned_created"]
                parts.sold += sum(sold_by.values())
                parts.sold_times.merge(Sketch.decode(summaries.DURATION_ACCURACY, day["pruned_sold_times"]))
                parts.censored.merge(Sketch.decode(summaries.DURATION_ACCURACY, day["pruned_censored"]))
                parts.prices.merge(Sketch.decode(summaries.PRICE_ACCURACY, day["pruned_prices"]))
                parts.cut_samples += day["pruned_cut_samples"]
                parts.cuts.merge(Sketch.decode(summaries.CUT_ACCURACY, day["pruned_cuts"], summaries.MILLIONTH))
            elif day["day"] >= previous_start:
                parts.previous_cohort += day["pruned_created"]
                parts.previous_sold += sum(c for offset, c in sold_by.items()
                                           if day["day"] + timedelta(days=offset) < start)
        return parts

    def measures(self, detail_cut_samples: int) -> _PerListing:
        """The per-listing measures that read the summaries (the rest are as for any window)."""
        p = self.prices
        n_prices = p.count
        cut_samples = detail_cut_samples + self.cut_samples
        curve = summaries.kaplan_meier(self.sold_times, self.censored)
        sales = self.sold_times.count
        # the interval: Greenwood's over the bucketed durations' risk sets (summaries.km_steps; definition 8)
        bands = intervals.survival_bands(summaries.km_steps(self.sold_times, self.censored)
                                         if sales >= MIN_SALES_TO_TIME else [])
        tts_p25, tts_median, tts_p75 = (
            estimate(None if (v := summaries.km_quantile(self.sold_times, self.censored, q).estimate) is None
                     else v / 3600.0, sales, MIN_SALES_TO_TIME, 2,
                     None if (ci := intervals.bands_quantile_interval(bands, q)) is None else _hours(ci))
            for q in TIME_QUANTILES.values())
        drawn = _drawn(curve) if sales >= MIN_SALES_TO_TIME else ()
        # the order-statistic interval's ranks read from the sketch (each end within its accuracy)
        p25, median, p75 = (estimate(p.quantile(q), n_prices, MIN_PRICES, 2,
                                     None if (ranks := intervals.quantile_ranks(n_prices, q)) is None
                                     else (p.at_rank(ranks[0] - 1), p.at_rank(ranks[1] - 1)))
                            for q in PRICE_QUANTILES.values())
        return _PerListing(
            p25, median, p75, measure(p.trimmed_mean(robust.TRIM), n_prices, MIN_PRICES, 2),
            TimeToSell(tts_p25, tts_median, tts_p75, self.sold_times.count + self.censored.count, drawn),
            measure(self.cuts.count / cut_samples if cut_samples else None, cut_samples, MIN_CUT_SAMPLES),
            measure(self.cuts.quantile(0.5), self.cuts.count, 1))
