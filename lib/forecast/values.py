"""A forecast as the rest of the application passes it (docs/concepts/forecasts.md)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

#: What is forecast, a series each: the day's new listings and sales (counted flows, scaled to a whole day) and
#: its sold-price median.
INFLOW, OUTFLOW, MEDIAN_PRICE = "inflow", "outflow", "median_price"
MEASURES = (INFLOW, OUTFLOW, MEDIAN_PRICE)
#: Days ahead of the last day of history.
HORIZON = 7
#: The intervals' levels, percent.
LEVELS = (80, 95)


@dataclass(frozen=True, slots=True)
class CountLaw:
    """The distribution of a flow's day ahead as fitted (``lib.forecast.fit``): a count of mean ``mean`` and standard
    deviation ``sd`` (a negative binomial, or a Poisson count where ``sd`` is below a Poisson count's), which is,
    with probability ``share``, a burst day's: the same count with its mean ``ratio`` times as high."""

    mean: float
    sd: float
    share: float = 0.0
    ratio: float = 1.0


@dataclass(frozen=True, slots=True)
class DayForecast:
    """One day ahead: the point forecast and its 80 % and 95 % intervals (flows never below 0). A flow whose
    history had bursts also keeps the 95 % interval of an ordinary day, without a burst (``ordinary_lo95``,
    ``ordinary_hi95``; None: the same as the 95 % interval), which breakouts are judged against
    (``lib.forecast.fit``, module docstring). A flow's day as fitted keeps its distribution (``law``), which the
    backtests score; a forecast read back from the database has none."""

    day: datetime  # naive UTC midnight
    mean: float
    lo80: float
    hi80: float
    lo95: float
    hi95: float
    ordinary_lo95: float | None = None
    ordinary_hi95: float | None = None
    law: CountLaw | None = field(default=None, compare=False)

    @property
    def ordinary95(self) -> tuple[float, float]:
        """The 95 % interval of an ordinary day."""
        return (self.lo95 if self.ordinary_lo95 is None else self.ordinary_lo95,
                self.hi95 if self.ordinary_hi95 is None else self.ordinary_hi95)

    def to_json(self) -> dict[str, Any]:
        return {"day": f"{self.day:%Y-%m-%d}", "mean": round(self.mean, 3),
                "interval_80": [round(self.lo80, 3), round(self.hi80, 3)],
                "interval_95": [round(self.lo95, 3), round(self.hi95, 3)]}


@dataclass(frozen=True, slots=True, order=True)
class Segment:
    """A segment of an IP's listings (docs/concepts/measures.md "Segments"): a goods type (``kind`` goods, ``key``
    its id) or a character (``kind`` character, ``key`` the name)."""

    kind: str
    key: str


@dataclass(frozen=True, slots=True)
class History:
    """The days one measure of one IP, or of one segment of its listings, is forecast from, oldest first
    (``lib.forecast.series``)."""

    ip_id: int
    measure: str
    days: tuple[datetime, ...]
    values: tuple[float, ...]
    segment: Segment | None = None

    @property
    def origin(self) -> datetime | None:
        """The last day of history (None: none)."""
        return self.days[-1] if self.days else None

    def fingerprint(self) -> str:
        """What decides the fit: a refit of the same history gives the same forecast, so it is skipped."""
        import hashlib

        text = ";".join(f"{d:%Y%m%d}={v!r}" for d, v in zip(self.days, self.values, strict=True))
        return hashlib.sha1(text.encode()).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class Forecast:
    """One measure of one IP (or of one ``segment`` of its listings), ``HORIZON`` days ahead of ``origin``;
    ``days`` empty with ``why`` set where the history is too short."""

    ip_id: int
    measure: str
    origin: datetime | None
    history_days: int
    model: str | None
    fitted_at: float | None
    days: tuple[DayForecast, ...] = ()
    why: str | None = None
    fingerprint: str = field(default="", compare=False)
    segment: Segment | None = None

    def to_json(self) -> dict[str, Any]:
        return {"measure": self.measure, "origin": None if self.origin is None else f"{self.origin:%Y-%m-%d}",
                "history_days": self.history_days, "model": self.model, "fitted_at": self.fitted_at,
                "days": [d.to_json() for d in self.days], "why": self.why}
