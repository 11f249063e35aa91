"""The series forecast, read from the daily rows (docs/concepts/forecasts.md, "The series").

A day counts when the IP was tracked at least ``MIN_HOURS`` of it; its flows are scaled to the whole day (× 24 /
its tracked hours). The flows' history is the last run of days in a row that count, ending with the last one; the
sold-price median's is the days of that run with at least ``MIN_PRICE_SAMPLES`` sales with a price. A day not
tracked is unknown, not zero, so a gap ends the run rather than being filled.

A segment of the IP's listings (a goods type, a character) is forecast on the IP's days, from its own daily rows
(``segment_daily_flows``): a day that counts for the IP and has no row of the segment had none of its listings (0),
from the IP's first day with a row of any segment of the kind on (before it, the days were rolled up before segments
had rows, and what their listings were is not known).
Its flows are forecast once they add up to ``MIN_SEGMENT_FLOW`` over the history (one a day on average): below that a
segment's days are nearly all zeros, and what a model would make of them is not worth a fit.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime, timedelta

from lib.core.db import ParameterList
from lib.forecast.values import INFLOW, MEDIAN_PRICE, OUTFLOW, History, Segment
from lib.market.statistics import tuples
from models import IpStatsDaily, SegmentDailyFlow

#: Days of daily rows read back from the last one.
HISTORY_DAYS = 120
#: Tracked hours a day needs to count.
MIN_HOURS = 12
#: Days in a row the flows need (two weekly cycles); the price median needs ``MIN_PRICE_DAYS``.
MIN_FLOW_DAYS = 14
MIN_PRICE_DAYS = 7
#: Sales with a price a day's median needs to count.
MIN_PRICE_SAMPLES = 3
#: A segment's flow over its history that it needs to be forecast (module docstring).
MIN_SEGMENT_FLOW = MIN_FLOW_DAYS
ONE_DAY = timedelta(days=1)
CHUNK = 500

#: A daily row as the histories read it: (day, tracked hours, inflow, outflow, sales with a price, their median).
DayRow = tuple[datetime, int, int, int, int, float | None]


def daily_rows(ip_ids: Sequence[int], today: datetime) -> dict[int, list[DayRow]]:
    """Each IP's daily rows of the ``HISTORY_DAYS`` before ``today`` (a UTC midnight; today's partial day is never
    part of a history)."""
    rows: dict[int, list[DayRow]] = defaultdict(list)
    for start in range(0, len(ip_ids), CHUNK):
        for ip_id, day, hours, inflow, outflow, samples, median in tuples(
                IpStatsDaily.select(IpStatsDaily.ip_id, IpStatsDaily.day, IpStatsDaily.hours, IpStatsDaily.inflow,
                                    IpStatsDaily.outflow, IpStatsDaily.sample_count, IpStatsDaily.median_price)
                .where(IpStatsDaily.ip_id.in_(ParameterList(list(ip_ids[start:start + CHUNK])))
                       & (IpStatsDaily.day >= today - HISTORY_DAYS * ONE_DAY) & (IpStatsDaily.day < today))):
            rows[ip_id].append((day, hours, inflow, outflow, samples, None if median is None else float(median)))
    return rows


def histories(ip_ids: Sequence[int], today: datetime,
              rows: dict[int, list[DayRow]] | None = None) -> dict[int, dict[str, History]]:
    """Each IP's history of each measure from its daily rows (``daily_rows``, read unless given). An IP without
    rows has empty histories."""
    rows = daily_rows(ip_ids, today) if rows is None else rows
    return {ip_id: of_rows(ip_id, rows.get(ip_id, [])) for ip_id in ip_ids}


def segment_histories(ip_ids: Sequence[int], today: datetime, rows: dict[int, list[DayRow]] | None = None,
                      kind: str | None = None) -> dict[tuple[int, Segment], dict[str, History]]:
    """Each segment's history of each measure (module docstring), by IP and segment, for the segments (of
    ``kind``, or every kind) with a daily row among the IPs' days (``daily_rows``, read unless given)."""
    rows = daily_rows(ip_ids, today) if rows is None else rows
    flows: dict[tuple[int, Segment], dict[datetime, tuple[int, int, int, float | None]]] = defaultdict(dict)
    for start in range(0, len(ip_ids), CHUNK):
        query = (SegmentDailyFlow.select(SegmentDailyFlow.ip_id, SegmentDailyFlow.kind, SegmentDailyFlow.key,
                                         SegmentDailyFlow.day, SegmentDailyFlow.inflow, SegmentDailyFlow.outflow,
                                         SegmentDailyFlow.sample_count, SegmentDailyFlow.median_price)
                 .where(SegmentDailyFlow.ip_id.in_(ParameterList(list(ip_ids[start:start + CHUNK])))
                        & (SegmentDailyFlow.day >= today - HISTORY_DAYS * ONE_DAY) & (SegmentDailyFlow.day < today)))
        if kind is not None:
            query = query.where(SegmentDailyFlow.kind == kind)
        for ip_id, of_kind, key, day, inflow, outflow, samples, median in tuples(query):
            flows[ip_id, Segment(of_kind, key)][day] = (inflow, outflow, samples, median)
    first: dict[tuple[int, str], datetime] = {}
    for (ip_id, segment), days in flows.items():
        first[ip_id, segment.kind] = min(min(days), first.get((ip_id, segment.kind), min(days)))
    out = {}
    for (ip_id, segment), days in sorted(flows.items()):
        aligned = [(day, hours, *days.get(day, (0, 0, 0, None))) for day, hours, *_ in rows.get(ip_id, [])
                   if day >= first[ip_id, segment.kind]]
        out[ip_id, segment] = of_rows(ip_id, aligned, segment)
    return out


def of_rows(ip_id: int, rows: Sequence[DayRow], segment: Segment | None = None) -> dict[str, History]:
    """The histories (module docstring) from daily rows (``DayRow``), the IP's or one ``segment``'s on the IP's
    days."""
    counted = sorted(r for r in rows if r[1] >= MIN_HOURS)
    run: list[DayRow] = []
    for row in counted:
        if run and row[0] - run[-1][0] != ONE_DAY:
            run = []
        run.append(row)
    days = tuple(r[0] for r in run)
    priced = [r for r in run if r[4] >= MIN_PRICE_SAMPLES and r[5] is not None]
    return {
        INFLOW: History(ip_id, INFLOW, days, tuple(r[2] * 24.0 / r[1] for r in run), segment),
        OUTFLOW: History(ip_id, OUTFLOW, days, tuple(r[3] * 24.0 / r[1] for r in run), segment),
        MEDIAN_PRICE: History(ip_id, MEDIAN_PRICE, tuple(r[0] for r in priced),
                              tuple(float(r[5]) for r in priced if r[5] is not None), segment),
    }


def enough(history: History) -> str | None:
    """Why this history is too short to forecast (None: it is long enough)."""
    need = MIN_PRICE_DAYS if history.measure == MEDIAN_PRICE else MIN_FLOW_DAYS
    if len(history.days) < need:
        what = (f"days with at least {MIN_PRICE_SAMPLES} priced sales" if history.measure == MEDIAN_PRICE
                else f"tracked days in a row (at least {MIN_HOURS} h each)")
        return f"needs {need} {what}; has {len(history.days)}"
    if history.segment is not None and history.measure != MEDIAN_PRICE and sum(history.values) < MIN_SEGMENT_FLOW:
        return (f"needs {MIN_SEGMENT_FLOW} {history.measure} over its {len(history.days)} days (one a day on "
                f"average); has {sum(history.values):.0f}")
    return None
