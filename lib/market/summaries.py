"""Mergeable summaries of distributions for long windows (docs/operating/storage.md, docs/concepts/measures.md):
the sold prices, price cuts and times to sell of listings whose per-listing facts were pruned, kept by UTC day.

A :class:`Sketch` counts values by the buckets of DDSketch's logarithmic mapping (``ddsketch``): bucket ``k``
holds the values in (γ^(k−1), γ^k], γ = (1 + α)/(1 − α), and stands for them by 2γ^k/(1 + γ), which is within a
relative ``α`` of every value in it. The mapping is the library's (its documented relative-accuracy guarantee);
the counts are a plain mapping from bucket to count kept here, because DDSketch's Python object gives no public
access to its bins (the interpolated quantiles of docs/concepts/measures.md and trimmed mean need them, not its
lower-rank quantile) and serializes them densely through protobuf. Merging two sketches adds their counts: exact.

Why the bounds hold (deterministic, no probability involved): the bucket map is monotone, so the sketch's values
sorted are the exact values sorted, each replaced by its bucket's representative (within α). A quantile
interpolated between two order statistics and a trimmed mean of order statistics are then convex combinations
of numbers each within α of the exact ones: within α (relative) of the exact result.

Kaplan–Meier over bucketed durations (:func:`km_bounds`): within a bucket the order of sales and censorings is
lost. Counting a bucket's sales before its censorings (the estimate, as ``robust.kaplan_meier`` does for ties)
gives the highest survival at the bucket's upper edge any order inside the buckets could give, and censorings
first the lowest; the exact curve at every bucket edge lies between the two. So the exact quantile lies between
the lower edge of the bucket where the censorings-first curve reaches it and the upper edge of the bucket where
the sales-first curve does.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

from ddsketch.mapping import LogarithmicMapping

from lib.market.robust import KmStep

#: Relative accuracy of the summarized sold prices (0.5 %: ¥1 on ¥200).
PRICE_ACCURACY = 0.005
#: Relative accuracy of the summarized price cuts (as a fraction of the first on-sale price).
CUT_ACCURACY = 0.005
#: Relative accuracy of the summarized times to sell and censoring times.
DURATION_ACCURACY = 0.005
#: Values below a sketch's ``floor`` are counted as 0 exactly (bucket ``None``): durations under a second; cut
#: fractions under one millionth.
SECOND = 1.0
MILLIONTH = 1e-6

_MAPPINGS: dict[float, LogarithmicMapping] = {}


def mapping(accuracy: float) -> LogarithmicMapping:
    if accuracy not in _MAPPINGS:
        _MAPPINGS[accuracy] = LogarithmicMapping(accuracy)
    return _MAPPINGS[accuracy]


class SketchFormatError(ValueError):
    """A stored sketch that does not parse (a corrupt or foreign value)."""


@dataclass
class Sketch:
    """Counts of values by logarithmic bucket: mergeable, with every value known within ``accuracy`` (relative).

    Parameters:
        accuracy: the relative accuracy α (the mapping's ``relative_accuracy``).
        counts: bucket key → count.
        floor: values below it are held as 0 exactly (``zeros``).
        counts: bucket key → count.
        zeros: how many values were below ``floor``.
    """

    accuracy: float
    floor: float = SECOND
    counts: dict[int, int] = field(default_factory=dict)
    zeros: int = 0

    @property
    def count(self) -> int:
        return self.zeros + sum(self.counts.values())

    def key(self, value: float) -> int | None:
        return None if value < self.floor else int(mapping(self.accuracy).key(value))

    def add(self, value: float, count: int = 1) -> None:
        k = self.key(value)
        if k is None:
            self.zeros += count
        else:
            self.counts[k] = self.counts.get(k, 0) + count

    def update(self, values: Iterable[float]) -> Sketch:
        for v in values:
            self.add(v)
        return self

    def merge(self, other: Sketch) -> Sketch:
        if (other.accuracy, other.floor) != (self.accuracy, self.floor):
            raise ValueError(f"sketches of accuracy {self.accuracy}/{other.accuracy}, floor {self.floor}/"
                             f"{other.floor} do not merge")
        self.zeros += other.zeros
        for k, c in other.counts.items():
            self.counts[k] = self.counts.get(k, 0) + c
        return self

    def representative(self, key: int | None) -> float:
        return 0.0 if key is None else float(mapping(self.accuracy).value(key))

    def edges(self, key: int | None) -> tuple[float, float]:
        """The values bucket ``key`` holds: (lower, upper]."""
        if key is None:
            return 0.0, self.floor
        gamma = mapping(self.accuracy).gamma
        upper = self.representative(key) * (1 + gamma) / 2
        return upper / gamma, upper

    def buckets(self) -> list[tuple[int | None, int]]:
        """(key, count), smallest values first (``None``: the zeros)."""
        return ([(None, self.zeros)] if self.zeros else []) + sorted(self.counts.items())

    def sorted_values(self) -> list[tuple[float, int]]:
        return [(self.representative(k), c) for k, c in self.buckets()]

    def _at_rank(self, rank: int) -> float:
        seen = 0
        for value, c in self.sorted_values():
            seen += c
            if rank < seen:
                return value
        raise IndexError(rank)

    def at_rank(self, rank: int) -> float:
        """The represented value of 0-based ``rank`` in sorted order: within α of the exact one."""
        return self._at_rank(rank)

    def quantile(self, q: float) -> float | None:
        """``robust.quantile`` of the represented values: within α of the exact one (module docstring)."""
        n = self.count
        if not n:
            return None
        position = q * (n - 1)
        low = math.floor(position)
        high = min(low + 1, n - 1)
        a, b = self._at_rank(low), self._at_rank(high)
        return a + (b - a) * (position - low)

    def trimmed_mean(self, trim: float) -> float | None:
        """``robust.trimmed_mean`` of the represented values: within α of the exact one."""
        n = self.count
        if not n:
            return None
        k = math.floor(trim * n)
        lo, hi = k, n - k  # ranks kept: [lo, hi)
        total = 0.0
        seen = 0
        for value, c in self.sorted_values():
            kept = max(0, min(seen + c, hi) - max(seen, lo))
            total += kept * value
            seen += c
        return total / (hi - lo)

    def encode(self) -> str:
        """Text kept in the daily row: ``z<zeros>`` then ``key:count`` pairs, comma-separated."""
        pairs = [f"{k}:{c}" for k, c in sorted(self.counts.items())]
        return ",".join(([f"z{self.zeros}"] if self.zeros else []) + pairs)

    @classmethod
    def decode(cls, accuracy: float, text: str | None, floor: float = SECOND) -> Sketch:
        sketch = cls(accuracy, floor)
        if not text:
            return sketch
        try:
            for part in text.split(","):
                if part.startswith("z"):
                    sketch.zeros += int(part[1:])
                else:
                    k, c = part.split(":")
                    sketch.counts[int(k)] = sketch.counts.get(int(k), 0) + int(c)
        except ValueError as e:
            raise SketchFormatError(f"not a stored sketch: {text[:60]!r}") from e
        return sketch


def merged(accuracy: float, texts: Iterable[str | None], floor: float = SECOND) -> Sketch:
    total = Sketch(accuracy, floor)
    for text in texts:
        if text:
            total.merge(Sketch.decode(accuracy, text, floor))
    return total


def encode_counts(counts: dict[int, int]) -> str:
    """A small exact histogram (day offset → count) as text: ``offset:count`` pairs."""
    return ",".join(f"{k}:{c}" for k, c in sorted(counts.items()) if c)


def decode_counts(text: str | None) -> dict[int, int]:
    counts: dict[int, int] = {}
    if not text:
        return counts
    try:
        for part in text.split(","):
            k, c = part.split(":")
            counts[int(k)] = counts.get(int(k), 0) + int(c)
    except ValueError as e:
        raise SketchFormatError(f"not a stored histogram: {text[:60]!r}") from e
    return counts


def _km(sold: Sketch, censored: Sketch, sales_first: bool) -> list[tuple[int | None, float]]:
    """Survival at the upper edge of each bucket holding sales: [(key, S)]."""
    keys = sorted({k for k, _ in sold.buckets()} | {k for k, _ in censored.buckets()},
                  key=lambda k: -1 if k is None else k)
    events = dict(sold.buckets())
    lost = dict(censored.buckets())
    at_risk = sold.count + censored.count
    survival = 1.0
    curve = []
    for k in keys:
        e, c = events.get(k, 0), lost.get(k, 0)
        if e:
            risk = at_risk if sales_first else at_risk - c
            survival *= 1 - e / risk
            curve.append((k, survival))
        at_risk -= e + c
    return curve


def km_steps(sold: Sketch, censored: Sketch) -> list[KmStep]:
    """The Kaplan–Meier steps of the bucketed durations (module docstring), with the risk sets Greenwood's
    variance needs: one step at each bucket holding sales, at its representative duration, the bucket's
    censorings still at risk there (sales first, ``robust.kaplan_meier_steps``'s rule for ties). Its survivals
    are :func:`kaplan_meier`'s."""
    events, lost = dict(sold.buckets()), dict(censored.buckets())
    at_risk, survival, steps = sold.count + censored.count, 1.0, []
    for k in sorted(events.keys() | lost.keys(), key=lambda k: -1 if k is None else k):
        e, c = events.get(k, 0), lost.get(k, 0)
        if e:
            survival *= 1 - e / at_risk
            steps.append(KmStep(sold.representative(k), at_risk, e, survival))
        at_risk -= e + c
    return steps


def kaplan_meier(sold: Sketch, censored: Sketch) -> list[tuple[float, float]]:
    """The Kaplan–Meier curve of the bucketed durations, sales counted before the censorings of their bucket
    (``robust.kaplan_meier``'s rule for ties): [(representative duration, S)]."""
    return [(sold.representative(k), s) for k, s in _km(sold, censored, sales_first=True)]


@dataclass(frozen=True)
class KmQuantile:
    """A Kaplan–Meier quantile from bucketed durations: the ``estimate`` and the range the exact one lies in."""

    estimate: float | None
    lower: float | None
    upper: float | None


def km_quantile(sold: Sketch, censored: Sketch, q: float) -> KmQuantile:
    """The ``q`` quantile of time to sell (module docstring): the estimate, and [lower, upper] holding the exact
    quantile (None ends: the curve of that tie order never reaches ``q``)."""
    level = 1 - q + 1e-12
    # the first bucket reaching the level, as a 1-tuple: its key may be None (the zero bucket), never reaching is None
    high = next(((k,) for k, s in _km(sold, censored, sales_first=True) if s <= level), None)
    low = next(((k,) for k, s in _km(sold, censored, sales_first=False) if s <= level), None)
    return KmQuantile(None if high is None else sold.representative(high[0]),
                      None if low is None else sold.edges(low[0])[0], None if high is None else sold.edges(high[0])[1])
