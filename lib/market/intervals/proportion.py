"""The Wilson score interval for a proportion (sell-through: of the listings created in the window, the share
seen sold before its end — docs/concepts/measures.md, definition 5)."""

from __future__ import annotations

import math

from lib.market.intervals.level import LEVEL, z_of


def wilson_interval(successes: int, trials: int, level: float = LEVEL) -> tuple[float, float] | None:
    """The Wilson score interval for a proportion p from ``successes`` of ``trials``: the p whose score test
    |p̂ − p| / √(p(1 − p)/n) ≤ z does not reject, that is

        (p̂ + z²/2n ± z·√(p̂(1 − p̂)/n + z²/4n²)) / (1 + z²/n),   p̂ = successes/trials, z = z_(1−α/2)

    (no continuity correction). It stays inside [0, 1] and is not degenerate at 0 or n successes, unlike the
    Wald interval. None when ``trials`` is 0. References: Wilson, "Probable inference, the law of succession,
    and statistical inference", JASA 22 (1927) 209–212; Newcombe, "Two-sided confidence intervals for the
    single proportion: comparison of seven methods", Statistics in Medicine 17 (1998) 857–872 (method 3).
    """
    if not 0 <= successes <= trials:
        raise ValueError(f"{successes} successes of {trials} trials")
    if trials == 0:
        return None
    z = z_of(level)
    n, p = trials, successes / trials
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    # at 0 or n successes the exact limit is 0 or 1: rounding must not push it outside
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == trials else min(1.0, centre + half)
    return low, high
