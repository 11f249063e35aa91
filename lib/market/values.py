"""The market's values as types: a measure, an IP's window measures, a segment's, a leaderboard row and a segment's
row (docs/concepts/measures.md). They are computed as these frozen dataclasses (``lib.market.windows``) and leave
as JSON through their ``to_json`` alone: the API's answers, the read side's caches and the window rows' stored
columns (``lib.market.window_rows``) are that JSON, and ``from_json`` reads it back where a value is needed again
(an IP's stored measures, a cached segment for its CSV row). Each ``to_json`` keeps the keys in the order the
answers have always had.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, TypeVar, get_type_hints

#: A JSON object: the form a value leaves in (answers, caches, stored rows) and is read back from, and nowhere else.
JsonObject = dict[str, Any]

#: A 95 % interval, [low, high] in JSON (docs/concepts/measures.md, definition 8); ``high`` None: open above.
Interval = tuple[float | None, float | None]


def _interval(data: list[float | None] | None) -> Interval | None:
    return None if data is None else (data[0], data[1])


M = TypeVar("M")


def _fields_to_json(value: Any) -> JsonObject:
    """A dataclass of measures as JSON: each field's ``to_json``, under its name, in the order of the fields."""
    return {f.name: getattr(value, f.name).to_json() for f in fields(value)}


#: Each class of measures' fields with their types (two classes: ``SegmentMeasures``, ``WindowMeasures``).
_FIELD_TYPES: dict[type, tuple[tuple[str, Any], ...]] = {}


def _field_types(cls: type) -> tuple[tuple[str, Any], ...]:
    found = _FIELD_TYPES.get(cls)
    if found is None:
        hints = get_type_hints(cls)
        found = _FIELD_TYPES[cls] = tuple((f.name, hints[f.name]) for f in fields(cls))
    return found


def _fields_from_json(cls: type[M], data: JsonObject) -> M:
    """``_fields_to_json`` read back: each field by its type's ``from_json``."""
    return cls(**{name: kind.from_json(data[name]) for name, kind in _field_types(cls)})


@dataclass(frozen=True, slots=True)
class Measure:
    """A measure over a window: its value, None below its minimum (insufficient, never 0), and the count it rests on.

    Parameters:
      value: the measure (an int where it counts, a rounded float otherwise); None: insufficient.
      n: how many observations it rests on.
      why: while the value is None, what it needs and what the window has (``lib.market.insufficient``).
    """

    value: float | None
    n: int
    why: str | None = None

    def to_json(self) -> JsonObject:
        out: JsonObject = {"value": self.value, "n": self.n}
        if self.why is not None:
            out["why"] = self.why
        return out

    @classmethod
    def from_json(cls, data: JsonObject) -> Measure:
        if "interval" in data and cls is Measure:  # a count estimated where the pages could not see it (inflow)
            return Estimate.from_json(data)
        return cls(data["value"], data["n"], data.get("why"))


@dataclass(frozen=True, slots=True)
class Estimate(Measure):
    """A measure that estimates something, with its 95 % interval. Inflow and outflow are counts (``Measure``)
    where the crawls saw them, and estimates where their pages could not reach back (docs/concepts/measures.md,
    "Estimates"): their JSON then carries an ``interval``.

    Parameters:
      interval: (low, high); None while the value is insufficient, or where no interval of its kind exists.
    """

    interval: Interval | None = None

    def to_json(self) -> JsonObject:
        out: JsonObject = {"value": self.value, "n": self.n,
                           "interval": None if self.interval is None else list(self.interval)}
        if self.why is not None:
            out["why"] = self.why
        return out

    @classmethod
    def from_json(cls, data: JsonObject) -> Estimate:
        return cls(data["value"], data["n"], data.get("why"), _interval(data["interval"]))


@dataclass(frozen=True, slots=True)
class TimeToSell:
    """The time to sell (hours) of the listings created in the window: Kaplan–Meier quartiles and the curve.

    Parameters:
      p25, median, p75: the quartiles, each with its interval.
      listings: the listings created in the window (sold and censored).
      curve: (hours, share still unsold) steps; empty below the sales the quartiles need.
    """

    p25: Estimate
    median: Estimate
    p75: Estimate
    listings: int
    curve: tuple[tuple[float, float], ...]

    def to_json(self) -> JsonObject:
        return {"p25": self.p25.to_json(), "median": self.median.to_json(), "p75": self.p75.to_json(),
                "listings": self.listings, "curve": [list(step) for step in self.curve]}

    @classmethod
    def from_json(cls, data: JsonObject) -> TimeToSell:
        return cls(Estimate.from_json(data["p25"]), Estimate.from_json(data["median"]),
                   Estimate.from_json(data["p75"]), data["listings"], tuple((t, s) for t, s in data["curve"]))


@dataclass(frozen=True, slots=True)
class SegmentMeasures:
    """A segment's window measures: those of its listings (docs/concepts/measures.md, "Segments").

    Parameters:
      inflow, outflow: listings created and sold in the window (n: tracked hours).
      liquidity: outflow / inflow.
      median_price, p25_price, p75_price, trimmed_mean_price: the sold prices.
      sell_through: the share of the listings created in the window sold in it.
      time_to_sell_hours: ``TimeToSell``.
      price_cut_share, median_price_cut: the sales seen on sale first that sold below their first price, and by how
        much (a share of it).
    """

    inflow: Measure
    outflow: Measure
    liquidity: Measure
    median_price: Estimate
    p25_price: Estimate
    p75_price: Estimate
    trimmed_mean_price: Measure
    sell_through: Estimate
    time_to_sell_hours: TimeToSell
    price_cut_share: Measure
    median_price_cut: Measure

    def to_json(self) -> JsonObject:
        return _fields_to_json(self)

    @classmethod
    def from_json(cls, data: JsonObject) -> SegmentMeasures:
        return _fields_from_json(cls, data)


@dataclass(frozen=True, slots=True)
class WindowMeasures:
    """An IP's window measures (docs/concepts/measures.md, definitions 5 and 6).

    Parameters:
      inflow … median_price_cut: as ``SegmentMeasures``.
      supply: the on-sale search's total at the latest crawl.
      hours_of_supply: supply / the last 24 tracked hours' outflow per hour.
      coverage: observed sales against the growth of the sold search's total.
      heat: the heat score (0–100) with its interval.
      momentum: heat minus the previous window's, with its interval.
    """

    inflow: Measure
    outflow: Measure
    liquidity: Measure
    p25_price: Estimate
    median_price: Estimate
    p75_price: Estimate
    trimmed_mean_price: Measure
    sell_through: Estimate
    time_to_sell_hours: TimeToSell
    price_cut_share: Measure
    median_price_cut: Measure
    supply: Measure
    hours_of_supply: Measure
    coverage: Measure
    heat: Estimate
    momentum: Estimate

    def segment(self) -> SegmentMeasures:
        """The measures a segment has: those of its listings (the IP's search totals and heat are not its)."""
        return SegmentMeasures(self.inflow, self.outflow, self.liquidity, self.median_price, self.p25_price,
                               self.p75_price, self.trimmed_mean_price, self.sell_through, self.time_to_sell_hours,
                               self.price_cut_share, self.median_price_cut)

    def to_json(self) -> JsonObject:
        return _fields_to_json(self)

    @classmethod
    def from_json(cls, data: JsonObject) -> WindowMeasures:
        return _fields_from_json(cls, data)


@dataclass(frozen=True, slots=True)
class RowMeasures:
    """A leaderboard row's measures: each value (None: insufficient) and the counts behind them, flat, as the board
    sorts by them (``lib.market.window_rows.SORT_COLUMNS``).

    Parameters:
      heat, heat_n, heat_low: the heat, its n and its interval's low end (``heat_low``: heat, surely).
      momentum, inflow, outflow, liquidity, supply, coverage: the values of those measures.
      tracked_hours: the outflow's n.
      sell_through, sell_through_n, median_price, median_price_n: those values and their n.
      time_to_sell, time_to_sell_n: the median time to sell and its n.
      inflow_interval, outflow_interval: where the flow is an estimate (its pages could not reach back), its 95 %
        interval; None where it was counted.
    """

    heat: float | None
    heat_n: int
    heat_low: float | None
    momentum: float | None
    inflow: float | None
    outflow: float | None
    tracked_hours: int
    liquidity: float | None
    sell_through: float | None
    sell_through_n: int
    median_price: float | None
    median_price_n: int
    time_to_sell: float | None
    time_to_sell_n: int
    supply: float | None
    coverage: float | None
    inflow_interval: Interval | None = None
    outflow_interval: Interval | None = None

    @classmethod
    def of(cls, m: WindowMeasures) -> RowMeasures:
        tts = m.time_to_sell_hours.median
        return cls(heat=m.heat.value, heat_n=m.heat.n, heat_low=m.heat.interval[0] if m.heat.interval else None,
                   momentum=m.momentum.value, inflow=m.inflow.value, outflow=m.outflow.value,
                   tracked_hours=m.outflow.n, liquidity=m.liquidity.value, sell_through=m.sell_through.value,
                   sell_through_n=m.sell_through.n, median_price=m.median_price.value,
                   median_price_n=m.median_price.n, time_to_sell=tts.value, time_to_sell_n=tts.n,
                   supply=m.supply.value, coverage=m.coverage.value, inflow_interval=_estimated(m.inflow),
                   outflow_interval=_estimated(m.outflow))

    def sort_value(self, column: str) -> float | None:
        """The value of one of the columns a leaderboard sorts by (``window_rows.SORT_COLUMNS``)."""
        value: float | None = getattr(self, column)
        return value

    def to_json(self) -> JsonObject:
        return {"heat": self.heat, "heat_n": self.heat_n, "heat_low": self.heat_low, "momentum": self.momentum,
                "inflow": self.inflow, "outflow": self.outflow, "tracked_hours": self.tracked_hours,
                "liquidity": self.liquidity, "sell_through": self.sell_through,
                "sell_through_n": self.sell_through_n, "median_price": self.median_price,
                "median_price_n": self.median_price_n, "time_to_sell": self.time_to_sell,
                "time_to_sell_n": self.time_to_sell_n, "supply": self.supply, "coverage": self.coverage,
                "inflow_interval": _interval_json(self.inflow_interval),
                "outflow_interval": _interval_json(self.outflow_interval)}


def _estimated(m: Measure) -> Interval | None:
    """An estimated flow's interval; None for a counted one."""
    return m.interval if isinstance(m, Estimate) else None


def _interval_json(interval: Interval | None) -> list[float | None] | None:
    return None if interval is None else list(interval)


@dataclass(frozen=True, slots=True)
class IpRow:
    """One IP's leaderboard row.

    Parameters:
      ip_id, keyword, name: the IP.
      measures: its ``RowMeasures`` over the window.
    """

    ip_id: int
    keyword: str
    name: str
    measures: RowMeasures

    def to_json(self) -> JsonObject:
        return {"ip_id": self.ip_id, "keyword": self.keyword, "name": self.name, **self.measures.to_json()}


#: A segments export's columns (``SegmentRow.csv_row``): each measure's value and its n (time to sell: its quartiles,
#: one n).
SEGMENT_COLUMNS = ["key", "label", "inflow", "outflow", "tracked_hours", "liquidity", "median_price", "p25_price",
                   "p75_price", "price_n", "trimmed_mean_price", "sell_through", "sell_through_n",
                   "time_to_sell_median", "time_to_sell_p25", "time_to_sell_p75", "time_to_sell_n", "price_cut_share",
                   "price_cut_n", "median_price_cut"]


@dataclass(frozen=True, slots=True)
class SegmentRow:
    """One segment of an answer (an IP's segments, or the board across IPs).

    Parameters:
      key: the goods type's id, or the character's name.
      label: the goods type's Japanese name, or the character's name.
      measures: its ``SegmentMeasures`` over the window.
    """

    key: str
    label: str
    measures: SegmentMeasures

    def to_json(self) -> JsonObject:
        return {"key": self.key, "label": self.label, "measures": self.measures.to_json()}

    @classmethod
    def from_json(cls, data: JsonObject) -> SegmentRow:
        return cls(data["key"], data["label"], SegmentMeasures.from_json(data["measures"]))

    def csv_row(self) -> JsonObject:
        """The segment as a flat row of ``SEGMENT_COLUMNS``: the API's CSV export and the command line's."""
        m = self.measures
        tts = m.time_to_sell_hours
        return {"key": self.key, "label": self.label, "inflow": m.inflow.value, "outflow": m.outflow.value,
                "tracked_hours": m.outflow.n, "liquidity": m.liquidity.value, "median_price": m.median_price.value,
                "p25_price": m.p25_price.value, "p75_price": m.p75_price.value, "price_n": m.median_price.n,
                "trimmed_mean_price": m.trimmed_mean_price.value, "sell_through": m.sell_through.value,
                "sell_through_n": m.sell_through.n, "time_to_sell_median": tts.median.value,
                "time_to_sell_p25": tts.p25.value, "time_to_sell_p75": tts.p75.value, "time_to_sell_n": tts.median.n,
                "price_cut_share": m.price_cut_share.value, "price_cut_n": m.price_cut_share.n,
                "median_price_cut": m.median_price_cut.value}
