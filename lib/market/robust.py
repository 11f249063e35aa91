"""Robust summaries the market measures use: quantiles, the trimmed mean, the median absolute deviation and the
Kaplan–Meier estimate of time to sell. Definitions in docs/concepts/measures.md."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

#: Share cut from each end for the trimmed mean.
TRIM = 0.1
#: MAD × this estimates a normal distribution's standard deviation.
MAD_SCALE = 1.4826


def quantile(values: Sequence[float], q: float) -> float | None:
    """The ``q`` quantile by linear interpolation between the order statistics at position q·(n−1) (the
    "inclusive" method; the median of an even count is the mean of the two middle values). None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    position = q * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def median(values: Sequence[float]) -> float | None:
    return quantile(values, 0.5)


def trimmed_mean(values: Sequence[float], trim: float = TRIM) -> float | None:
    """The mean after dropping floor(trim·n) values from each end (a placeholder price or one set sale does not
    move it). None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    k = math.floor(trim * len(ordered))
    kept = ordered[k:len(ordered) - k]
    return sum(kept) / len(kept)


def mad(values: Sequence[float]) -> float | None:
    """Median absolute deviation from the median (unscaled)."""
    centre = median(values)
    if centre is None:
        return None
    return median([abs(v - centre) for v in values])


@dataclass(frozen=True)
class KmStep:
    """One step of a Kaplan–Meier curve: at ``time``, ``events`` of the ``at_risk`` durations ended in a sale,
    and ``survival`` is S just after it (the product of 1 − events/at_risk over the steps up to it).

    Parameters:
        time: the duration the step is at.
        at_risk: the durations not ended before ``time`` (censorings at ``time`` included: they leave after).
        events: the sales at ``time`` (at least 1).
        survival: S(time).
    """

    time: float
    at_risk: int
    events: int
    survival: float


def kaplan_meier_steps(durations: Sequence[tuple[float, bool]]) -> list[KmStep]:
    """The Kaplan–Meier steps of (duration, observed) pairs, one at each observed duration, with the counts
    the variance (``lib.market.intervals.survival``) needs. Censored durations (``observed`` False) leave the
    risk set after the events at the same time."""
    at_risk = len(durations)
    steps: list[KmStep] = []
    survival = 1.0
    ordered = sorted(durations, key=lambda d: (d[0], not d[1]))
    i = 0
    while i < len(ordered):
        t = ordered[i][0]
        events = removed = 0
        while i < len(ordered) and ordered[i][0] == t:
            events += ordered[i][1]
            removed += 1
            i += 1
        if events:
            survival *= 1 - events / at_risk
            steps.append(KmStep(t, at_risk, events, survival))
        at_risk -= removed
    return steps


def kaplan_meier(durations: Sequence[tuple[float, bool]]) -> list[tuple[float, float]]:
    """The survival curve of (duration, observed) pairs: [(t, S(t))] at each observed duration, S falling by
    the share of those at risk at t that sold at t (``kaplan_meier_steps``)."""
    return curve_of(kaplan_meier_steps(durations))


def curve_of(steps: Sequence[KmStep]) -> list[tuple[float, float]]:
    """The survival curve [(t, S(t))] of Kaplan–Meier steps (``kaplan_meier`` of their durations)."""
    return [(step.time, step.survival) for step in steps]


def km_quantile(curve: list[tuple[float, float]], q: float) -> float | None:
    """The smallest time by which a share ``q`` has sold (S(t) ≤ 1 − q); None when the curve never gets there
    (too many censored)."""
    for t, survival in curve:
        if survival <= 1 - q + 1e-12:
            return t
    return None
