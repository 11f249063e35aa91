"""The series forecast, read from the daily rows (docs/concepts/forecasts.md, "The series").

A day counts when the IP was tracked at least ``MIN_HOURS`` of it; its flows are scaled to the whole day (× 24 /
its tracked hours). The flows' history is the last run of days in a row that count, ending with the last one; the
sold-price median's is the days of that run with at least ``MIN_PRICE_SAMPLES`` sales with a price. A day not
tracked is unknown, not zero, so a gap ends the run rather than being filled.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime, timedelta

from lib.core.db import ParameterList
from lib.forecast.values import INFLOW, MEDIAN_PRICE, OUTFLOW, History
from lib.market.statistics import tuples
from models import IpStatsDaily

#: Days of daily rows read back from the last one.
HISTORY_DAYS = 120
#: Tracked hours a day needs to count.
MIN_HOURS = 12
#: Days in a row the flows need (two weekly cycles); the price median needs ``MIN_PRICE_DAYS``.
MIN_FLOW_DAYS = 14
MIN_PRICE_DAYS = 7
#: Sales with a price a day's median needs to count.
MIN_PRICE_SAMPLES = 3
ONE_DAY = timedelta(days=1)
CHUNK = 500


def histories(ip_ids: Sequence[int], today: datetime) -> dict[int, dict[str, History]]:
    """Each IP's history of each measure from its daily rows of the ``HISTORY_DAYS`` before ``today`` (a UTC
    midnight; today's partial day is never part of it). An IP without rows has empty histories."""
    rows: dict[int, list[tuple[datetime, int, int, int, int, float | None]]] = defaultdict(list)
    for start in range(0, len(ip_ids), CHUNK):
        for ip_id, day, hours, inflow, outflow, samples, median in tuples(
                IpStatsDaily.select(IpStatsDaily.ip_id, IpStatsDaily.day, IpStatsDaily.hours, IpStatsDaily.inflow,
                                    IpStatsDaily.outflow, IpStatsDaily.sample_count, IpStatsDaily.median_price)
                .where(IpStatsDaily.ip_id.in_(ParameterList(list(ip_ids[start:start + CHUNK])))
                       & (IpStatsDaily.day >= today - HISTORY_DAYS * ONE_DAY) & (IpStatsDaily.day < today))):
            rows[ip_id].append((day, hours, inflow, outflow, samples, None if median is None else float(median)))
    return {ip_id: of_rows(ip_id, rows.get(ip_id, [])) for ip_id in ip_ids}


def of_rows(ip_id: int, rows: Sequence[tuple[datetime, int, int, int, int, float | None]]) -> dict[str, History]:
    """The histories (module docstring) from daily rows: (day, tracked hours, inflow, outflow, sales with a price,
    their median)."""
    counted = sorted(r for r in rows if r[1] >= MIN_HOURS)
    run: list[tuple[datetime, int, int, int, int, float | None]] = []
    for row in counted:
        if run and row[0] - run[-1][0] != ONE_DAY:
            run = []
        run.append(row)
    days = tuple(r[0] for r in run)
    priced = [r for r in run if r[4] >= MIN_PRICE_SAMPLES and r[5] is not None]
    return {
        INFLOW: History(ip_id, INFLOW, days, tuple(r[2] * 24.0 / r[1] for r in run)),
        OUTFLOW: History(ip_id, OUTFLOW, days, tuple(r[3] * 24.0 / r[1] for r in run)),
        MEDIAN_PRICE: History(ip_id, MEDIAN_PRICE, tuple(r[0] for r in priced),
                              tuple(float(r[5]) for r in priced if r[5] is not None)),
    }


def enough(history: History) -> str | None:
    """Why this history is too short to forecast (None: it is long enough)."""
    need = MIN_PRICE_DAYS if history.measure == MEDIAN_PRICE else MIN_FLOW_DAYS
    if len(history.days) >= need:
        return None
    what = (f"days with at least {MIN_PRICE_SAMPLES} priced sales" if history.measure == MEDIAN_PRICE
            else f"tracked days in a row (at least {MIN_HOURS} h each)")
    return f"needs {need} {what}; has {len(history.days)}"
