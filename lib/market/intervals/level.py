"""The confidence level every interval defaults to, the normal quantile the score-based ones use, and Student's t."""

from __future__ import annotations

import math
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


def t_of(level: float, df: int) -> float:
    """The two-sided Student t quantile t with P(|T| ≤ t) = ``level`` for ``df`` degrees of freedom (≥ 1): exact
    for 1 and 2, else the Cornish–Fisher expansion in 1/df of Abramowitz and Stegun 26.7.5 (within 0.004 of the
    tables from 3 on at 95 %)."""
    if df < 1:
        raise ValueError(f"degrees of freedom {df} is not at least 1")
    q = 0.5 + check_level(level) / 2
    if df == 1:
        return math.tan(math.pi * (q - 0.5))
    if df == 2:
        return (2 * q - 1) / math.sqrt(2 * q * (1 - q))
    z = z_of(level)
    return (z + (z ** 3 + z) / (4 * df) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * df ** 2)
            + (3 * z ** 7 + 19 * z ** 5 + 17 * z ** 3 - 15 * z) / (384 * df ** 3)
            + (79 * z ** 9 + 776 * z ** 7 + 1482 * z ** 5 - 1920 * z ** 3 - 945 * z) / (92160 * df ** 4))
