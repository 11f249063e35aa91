"""The confidence level every interval defaults to, and the normal quantile the score-based ones use."""

from __future__ import annotations

from statistics import NormalDist

#: 95 %: the issue's (and docs/concepts/measures.md's) level for every interval.
LEVEL = 0.95


def check_level(level: float) -> float:
    if not 0.0 < level < 1.0:
        raise ValueError(f"confidence level {level} is not in (0, 1)")
    return level


def z_of(level: float) -> float:
    """The two-sided standard normal quantile z with P(|Z| ≤ z) = ``level`` (1.95996… at 95 %)."""
    return NormalDist().inv_cdf(0.5 + check_level(level) / 2)
