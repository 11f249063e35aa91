"""Robust summaries the market measures use: quantiles, the trimmed mean, the median absolute deviation and the
Kaplan–Meier estimate of time to sell. Definitions in the README ("Market measures")."""

from __future__ import annotations

import math
from collections.abc import Sequence

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


def kaplan_meier(durations: Sequence[tuple[float, bool]]) -> list[tuple[float, float]]:
    """The survival curve of (duration, observed) pairs: [(t, S(t))] at each observed duration, S falling by
    the share of those at risk at t that sold at t. Censored durations (``observed`` False) leave the risk set
    after the events at the same time."""
    at_risk = len(durations)
    curve: list[tuple[float, float]] = []
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
            curve.append((t, survival))
        at_risk -= removed
    return curve


def km_quantile(curve: list[tuple[float, float]], q: float) -> float | None:
    """The smallest time by which a share ``q`` has sold (S(t) ≤ 1 − q); None when the curve never gets there
    (too many censored)."""
    for t, survival in curve:
        if survival <= 1 - q + 1e-12:
            return t
    return None
