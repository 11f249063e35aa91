"""Breakouts and the rising board (docs/concepts/forecasts.md, "Breakouts").

When a day closes, each IP's flows of that day are held against the forecast made for it the day before (the
stored forecast, before the refit replaces it). A day whose flow leaves that forecast's 95 % interval, upward or
downward, is a breakout, when the day's flow (upward) or its forecast (downward) is at least ``MIN_SAMPLE``: below
that, a day's count is too small to tell a burst from chance. A breakout is kept (``ip_breakouts``) and raises an
alert (rule ``outflow_breakout`` or ``inflow_breakout``), at most one per IP, rule and day, delivered as the other
alerts are. The last closed day's check of each IP and flow is kept (``ip_forecast_checks``): the rising board
ranks IPs by how far above their forecast they ran, in units of the interval's upper half: above 1, out of it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from lib.core.clock import naive_utc
from lib.core.db import insert_rows, on_conflict_update
from lib.forecast.values import INFLOW, OUTFLOW, DayForecast, History
from lib.market.statistics import AlertFinding, record_alerts, tuples
from models import IpBreakout, IpForecastCheck, IpMetadata

#: A day's flow (upward) or its forecast (downward) a breakout needs.
MIN_SAMPLE = 10
UP, DOWN = "up", "down"
#: The flows checked.
CHECKED = (OUTFLOW, INFLOW)
RULES = {OUTFLOW: "outflow_breakout", INFLOW: "inflow_breakout"}


@dataclass(frozen=True, slots=True)
class Check:
    """One closed day of one IP's flow against the forecast made for it the day before."""

    ip_id: int
    measure: str
    day: datetime
    value: float
    forecast: DayForecast

    @property
    def score(self) -> float:
        """How far above the forecast, in units of the 95 % interval's upper half (negative: below it)."""
        half = self.forecast.hi95 - self.forecast.mean
        return (self.value - self.forecast.mean) / half if half > 0 else (
            0.0 if self.value == self.forecast.mean else float("inf") if self.value > self.forecast.mean
            else float("-inf"))

    @property
    def direction(self) -> str | None:
        """``UP`` or ``DOWN`` for a breakout (module docstring), else None."""
        if self.value > self.forecast.hi95 and self.value >= MIN_SAMPLE:
            return UP
        if self.value < self.forecast.lo95 and self.forecast.mean >= MIN_SAMPLE:
            return DOWN
        return None


def checks(history: History, made: Sequence[DayForecast]) -> list[Check]:
    """The days of ``history`` that the forecast ``made`` (stored before this refit) covered, each held against it."""
    by_day = {d.day: d for d in made}
    return [Check(history.ip_id, history.measure, day, value, by_day[day])
            for day, value in zip(history.days, history.values, strict=True) if day in by_day]


def record(found: Sequence[Check], now: float) -> list[int]:
    """Keep each IP and flow's last check, the breakouts among them and their alerts (in the caller's transaction);
    returns the new alerts' ids."""
    latest: dict[tuple[int, str], Check] = {}
    for c in found:
        if (c.ip_id, c.measure) not in latest or c.day > latest[(c.ip_id, c.measure)].day:
            latest[(c.ip_id, c.measure)] = c
    for c in latest.values():
        on_conflict_update(IpForecastCheck.insert(
            ip_id=c.ip_id, measure=c.measure, day=c.day, value=c.value, mean=c.forecast.mean, lo95=c.forecast.lo95,
            hi95=c.forecast.hi95, score=_finite(c.score)), [IpForecastCheck.ip_id, IpForecastCheck.measure],
            preserve=[IpForecastCheck.day, IpForecastCheck.value, IpForecastCheck.mean, IpForecastCheck.lo95,
                      IpForecastCheck.hi95, IpForecastCheck.score]).execute()
    broke = [c for c in found if c.direction is not None]
    insert_rows(IpBreakout, [{"ip_id": c.ip_id, "measure": c.measure, "day": c.day, "direction": c.direction,
                              "value": c.value, "mean": c.forecast.mean, "lo95": c.forecast.lo95,
                              "hi95": c.forecast.hi95, "found_at": now} for c in broke], conflict="ignore")
    alerts: list[int] = []
    for c in broke:
        what = "sales" if c.measure == OUTFLOW else "new listings"
        finding = AlertFinding(
            RULES[c.measure], c.value, c.forecast.hi95 if c.direction == UP else c.forecast.lo95,
            f"{what} on {c.day:%Y-%m-%d}: {c.value:.0f}, {'above' if c.direction == UP else 'below'} the forecast's "
            f"95 % interval {c.forecast.lo95:.0f}-{c.forecast.hi95:.0f} (expected {c.forecast.mean:.0f})",
            {"direction": c.direction, "day": f"{c.day:%Y-%m-%d}", "expected": round(c.forecast.mean, 3),
             "interval_95": [round(c.forecast.lo95, 3), round(c.forecast.hi95, 3)]})
        alerts += [a.id for a in record_alerts(c.ip_id, c.day, [finding], naive_utc(now))]
    return alerts


def _finite(score: float) -> float:
    return max(-1e9, min(1e9, score))


def rising(measure: str = OUTFLOW, limit: int | None = 20) -> list[dict[str, Any]]:  # rows as JSON
    """The IPs whose last closed day of ``measure`` ran furthest above its forecast, on the latest day any IP was
    checked, with at least ``MIN_SAMPLE`` that day or expected; most above first."""
    latest = IpForecastCheck.select(IpForecastCheck.day).where(IpForecastCheck.measure == measure) \
        .order_by(IpForecastCheck.day.desc()).limit(1).scalar()
    if latest is None:
        return []
    query = (IpForecastCheck.select(IpForecastCheck.ip_id, IpMetadata.keyword, IpMetadata.display_name,
                                    IpForecastCheck.day, IpForecastCheck.value, IpForecastCheck.mean,
                                    IpForecastCheck.lo95, IpForecastCheck.hi95, IpForecastCheck.score)
             .join(IpMetadata, on=(IpMetadata.id == IpForecastCheck.ip_id))
             .where((IpForecastCheck.measure == measure) & (IpForecastCheck.day == latest)
                    & ((IpForecastCheck.value >= MIN_SAMPLE) | (IpForecastCheck.mean >= MIN_SAMPLE)))
             .order_by(IpForecastCheck.score.desc(), IpForecastCheck.ip_id))
    if limit is not None:
        query = query.limit(limit)
    return [{"rank": rank, "ip_id": ip_id, "keyword": keyword, "name": name, "day": f"{day:%Y-%m-%d}",
             "value": round(value, 3), "expected": round(mean, 3), "interval_95": [round(lo, 3), round(hi, 3)],
             "score": round(score, 3), "breakout": value > hi and value >= MIN_SAMPLE}
            for rank, (ip_id, keyword, name, day, value, mean, lo, hi, score) in enumerate(tuples(query), start=1)]
