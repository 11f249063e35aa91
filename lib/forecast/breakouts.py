"""Breakouts and the rising board (docs/concepts/forecasts.md, "Breakouts").

When a day closes, each IP's flows of that day, and each of its segments', are held against the forecast made for
it the day before (the stored forecast, before the refit replaces it). A day whose flow leaves that forecast's 95 %
interval of an ordinary day (without a burst: ``DayForecast.ordinary95``; the forecast's own intervals also hold
the history's bursts, ``lib.forecast.fit``) by more than ``MARGIN`` of its half, upward or downward, is a breakout,
when the day's flow (upward) or its forecast (downward) is at least ``MIN_SAMPLE``: below that, a day's count is too
small to tell a burst from chance.
A breakout is kept (``ip_breakouts``, ``segment_breakouts``) and raises an alert: rule ``outflow_breakout`` or
``inflow_breakout`` for the IP's own flows, ``segment_breakout`` for its segments' (one alert naming every segment of
the IP that broke out that day), at most one per IP, rule and day, delivered as the other alerts are. The last
closed day's check of each series' flow is kept (``ip_forecast_checks``, ``segment_forecast_checks``): the rising
board ranks IPs, or the IPs' goods types or characters, by how far above their forecast they ran, in units of the
interval's upper half: above 1, out of it; above ``1 + MARGIN``, a breakout.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from lib.core.clock import naive_utc
from lib.core.db import insert_rows, on_conflict_update
from lib.forecast.values import INFLOW, OUTFLOW, DayForecast, History, Segment
from lib.market.statistics import AlertFinding, record_alerts, tuples
from models import IpBreakout, IpForecastCheck, IpMetadata, SegmentBreakout, SegmentForecastCheck

#: A day's flow (upward) or its forecast (downward) a breakout needs.
MIN_SAMPLE = 10
#: How far past the 95 % interval a breakout lies, as a share of the interval's half on that side. An interval that
#: holds as often as it claims leaves 2.5 % of ordinary days above it, and on the simulated markets (a burst or two a
#: month per IP) flags on those days were up to a third of all flags; few of them pass the margin, while a burst's
#: day mostly does (``python -m bench forecast`` scores the margins: docs/benchmarks.md, "Forecasts").
MARGIN = 0.2
UP, DOWN = "up", "down"
#: The flows checked.
CHECKED = (OUTFLOW, INFLOW)
RULES = {OUTFLOW: "outflow_breakout", INFLOW: "inflow_breakout"}
SEGMENT_RULE = "segment_breakout"
#: What the rising board ranks: the IPs, or their segments of a kind.
IPS = "ips"


@dataclass(frozen=True, slots=True)
class Check:
    """One closed day of one IP's flow (or one ``segment``'s of its listings) against the forecast made for it the
    day before."""

    ip_id: int
    measure: str
    day: datetime
    value: float
    forecast: DayForecast
    segment: Segment | None = None

    @property
    def band(self) -> tuple[float, float]:
        """The 95 % interval the day is held against: an ordinary day's (``DayForecast.ordinary95``)."""
        return self.forecast.ordinary95

    @property
    def score(self) -> float:
        """How far above the forecast, in units of the upper half of its ``band`` (negative: below it)."""
        half = self.band[1] - self.forecast.mean
        return (self.value - self.forecast.mean) / half if half > 0 else (
            0.0 if self.value == self.forecast.mean else float("inf") if self.value > self.forecast.mean
            else float("-inf"))

    @property
    def direction(self) -> str | None:
        """``UP`` or ``DOWN`` for a breakout (module docstring), else None."""
        return self.direction_past(MARGIN)

    def direction_past(self, margin: float) -> str | None:
        """``UP`` or ``DOWN`` where the day leaves the 95 % interval by more than ``margin`` of its half on that side
        (with the minimum sample), else None: ``direction`` at another margin (the benchmark scores several)."""
        (lo, hi), mean = self.band, self.forecast.mean
        if breaks_out_upward(self.value, mean, hi, margin):
            return UP
        if self.value < lower_bound(mean, lo, margin) and mean >= MIN_SAMPLE:
            return DOWN
        return None


def breaks_out_upward(value: float, mean: float, hi95: float, margin: float = MARGIN) -> bool:
    """A day's flow ``value`` against its forecast's mean and 95 % top: above the top by the margin, with the minimum
    sample (``Check.direction``'s upward rule, which the rising board flags by)."""
    return value > upper_bound(mean, hi95, margin) and value >= MIN_SAMPLE


def upper_bound(mean: float, hi95: float, margin: float = MARGIN) -> float:
    """What a day's flow must pass to break out upward: the 95 % interval's top, ``margin`` of its upper half above."""
    return hi95 + margin * (hi95 - mean)


def lower_bound(mean: float, lo95: float, margin: float = MARGIN) -> float:
    """What a day's flow must fall under to break out downward (``upper_bound`` mirrored)."""
    return lo95 - margin * (mean - lo95)


def checks(history: History, made: Sequence[DayForecast]) -> list[Check]:
    """The days of ``history`` that the forecast ``made`` (stored before this refit) covered, each held against it."""
    by_day = {d.day: d for d in made}
    return [Check(history.ip_id, history.measure, day, value, by_day[day], history.segment)
            for day, value in zip(history.days, history.values, strict=True) if day in by_day]


def record(found: Sequence[Check], now: float) -> list[int]:
    """Keep each series' last check, the breakouts among them and their alerts (in the caller's transaction);
    returns the new alerts' ids."""
    latest: dict[tuple[int, Segment | None, str], Check] = {}
    for c in found:
        key = (c.ip_id, c.segment, c.measure)
        if key not in latest or c.day > latest[key].day:
            latest[key] = c
    for c in latest.values():
        _keep_check(c)
    broke = [c for c in found if c.direction is not None]
    insert_rows(IpBreakout, [_breakout(c, now) for c in broke if c.segment is None], conflict="ignore")
    insert_rows(SegmentBreakout, [{**_breakout(c, now), "kind": c.segment.kind, "key": c.segment.key}
                                  for c in broke if c.segment is not None], conflict="ignore")
    alerts: list[int] = []
    for c in broke:
        if c.segment is None:
            finding = AlertFinding(RULES[c.measure], c.value, _threshold(c), _said(c), _details(c))
            alerts += [a.id for a in record_alerts(c.ip_id, c.day, [finding], naive_utc(now))]
    by_ip_day: dict[tuple[int, datetime], list[Check]] = {}
    for c in broke:
        if c.segment is not None:
            by_ip_day.setdefault((c.ip_id, c.day), []).append(c)
    for (ip_id, day), checks_ in sorted(by_ip_day.items()):
        checks_.sort(key=lambda c: (-_finite(c.score), c.segment, c.measure))
        first = checks_[0]
        assert first.segment is not None
        finding = AlertFinding(
            SEGMENT_RULE, first.value, _threshold(first),
            "; ".join(f"{c.segment.kind} {c.segment.key}: {_said(c)}" for c in checks_ if c.segment is not None),
            {"day": f"{day:%Y-%m-%d}", "segments": [{"kind": c.segment.kind, "key": c.segment.key,
                                                     "measure": c.measure, "value": round(c.value, 3),
                                                     **_details(c)} for c in checks_ if c.segment is not None]})
        alerts += [a.id for a in record_alerts(ip_id, day, [finding], naive_utc(now))]
    return alerts


def _keep_check(c: Check) -> None:
    values = {"day": c.day, "value": c.value, "mean": c.forecast.mean, "lo95": c.band[0], "hi95": c.band[1],
              "score": _finite(c.score)}
    if c.segment is None:
        on_conflict_update(IpForecastCheck.insert(ip_id=c.ip_id, measure=c.measure, **values),
                           [IpForecastCheck.ip_id, IpForecastCheck.measure],
                           preserve=[getattr(IpForecastCheck, name) for name in values]).execute()
    else:
        on_conflict_update(SegmentForecastCheck.insert(ip_id=c.ip_id, kind=c.segment.kind, key=c.segment.key,
                                                       measure=c.measure, **values),
                           [SegmentForecastCheck.ip_id, SegmentForecastCheck.kind, SegmentForecastCheck.key,
                            SegmentForecastCheck.measure],
                           preserve=[getattr(SegmentForecastCheck, name) for name in values]).execute()


def _breakout(c: Check, now: float) -> dict[str, Any]:  # a breakout's row: column → value
    return {"ip_id": c.ip_id, "measure": c.measure, "day": c.day, "direction": c.direction, "value": c.value,
            "mean": c.forecast.mean, "lo95": c.band[0], "hi95": c.band[1], "found_at": now}


def _threshold(c: Check) -> float:
    (lo, hi), mean = c.band, c.forecast.mean
    return upper_bound(mean, hi) if c.direction == UP else lower_bound(mean, lo)


def _said(c: Check) -> str:
    what = "sales" if c.measure == OUTFLOW else "new listings"
    return (f"{what} on {c.day:%Y-%m-%d}: {c.value:.0f}, {'above' if c.direction == UP else 'below'} the forecast's "
            f"95 % interval for an ordinary day {c.band[0]:.0f}-{c.band[1]:.0f} (expected {c.forecast.mean:.0f})")


def _details(c: Check) -> dict[str, Any]:  # the alert's details (JSON)
    return {"direction": c.direction, "day": f"{c.day:%Y-%m-%d}", "expected": round(c.forecast.mean, 3),
            "interval_95": [round(c.band[0], 3), round(c.band[1], 3)]}


def _finite(score: float) -> float:
    return max(-1e9, min(1e9, score))


def rising(measure: str = OUTFLOW, limit: int | None = 20, of: str = IPS) -> list[dict[str, Any]]:  # rows as JSON
    """The IPs (``of`` ``IPS``), or the IPs' segments of a kind (``of`` goods or character), whose last closed day of
    ``measure`` ran furthest above its forecast, on the latest day any of them was checked, with at least
    ``MIN_SAMPLE`` that day or expected; most above first."""
    table: Any = IpForecastCheck if of == IPS else SegmentForecastCheck
    scope = table.measure == measure if of == IPS else (table.measure == measure) & (table.kind == of)
    latest = table.select(table.day).where(scope).order_by(table.day.desc()).limit(1).scalar()
    if latest is None:
        return []
    segment = [table.kind, table.key] if of != IPS else []
    query = (table.select(table.ip_id, IpMetadata.keyword, IpMetadata.display_name, *segment, table.day, table.value,
                          table.mean, table.lo95, table.hi95, table.score)
             .join(IpMetadata, on=(IpMetadata.id == table.ip_id))
             .where(scope & (table.day == latest) & ((table.value >= MIN_SAMPLE) | (table.mean >= MIN_SAMPLE)))
             .order_by(table.score.desc(), table.ip_id, *segment))
    if limit is not None:
        query = query.limit(limit)
    rows = []
    for rank, row in enumerate(tuples(query), start=1):
        ip_id, keyword, name = row[:3]
        kind, key = row[3:5] if of != IPS else (None, None)
        day, value, mean, lo, hi, score = row[-6:]
        rows.append({"rank": rank, "ip_id": ip_id, "keyword": keyword, "name": name,
                     "segment": None if kind is None else {"kind": kind, "key": key},
                     "day": f"{day:%Y-%m-%d}", "value": round(value, 3), "expected": round(mean, 3),
                     "interval_95": [round(lo, 3), round(hi, 3)], "score": round(score, 3),
                     "breakout": breaks_out_upward(value, mean, hi)})
    return rows
