"""Distribution-free confidence intervals for a quantile (the sold-price median and quartiles) from order
statistics, with ranks from the binomial distribution.

Why it holds for any distribution: of n independent prices, the number B below the population's q quantile
ξ_q is Binomial(n, q) (for a continuous distribution). The l-th smallest price X₍l₎ is ≤ ξ_q exactly when
B ≥ l, and the u-th smallest X₍u₎ is ≥ ξ_q exactly when B ≤ u − 1, so

    P(X₍l₎ ≤ ξ_q ≤ X₍u₎) = P(l ≤ B ≤ u − 1) = 1 − P(B ≤ l − 1) − P(B ≥ u),

whatever the prices' distribution. With ties (prices such as ¥1,000 repeat) the closed interval covers at
least as often. References: Conover, *Practical Nonparametric Statistics* (3rd ed., 1999), §3.2 (confidence
interval for a quantile); Hahn & Meeker, *Statistical Intervals* (1991), §5.2; the median's ranks are tabled in
Campbell & Gardner, "Calculating confidence intervals for some non-parametric analyses", BMJ 296 (1988) 1454.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache

from lib.market.intervals.level import LEVEL, check_level


def _binomial_cdf(n: int, q: float) -> list[float]:
    """P(B ≤ k) for k = 0…n, B ~ Binomial(n, q), each term in log space (no overflow for large n; terms under
    about 1e-308 are 0, far below any tail the ranks compare with)."""
    log_q, log_1q = math.log(q), math.log1p(-q)
    log_n = math.lgamma(n + 1)
    cdf, total = [], 0.0
    for k in range(n + 1):
        total += math.exp(log_n - math.lgamma(k + 1) - math.lgamma(n - k + 1) + k * log_q + (n - k) * log_1q)
        cdf.append(min(total, 1.0))
    return cdf


@lru_cache(maxsize=4096)
def quantile_ranks(n: int, q: float, level: float = LEVEL) -> tuple[int, int] | None:
    """The 1-based ranks (l, u) of the order statistics bounding the ``q`` quantile of ``n`` values with at
    least ``level`` confidence, each tail at most α/2 (α = 1 − level), B ~ Binomial(n, q):

    * l = the largest k in 1…n with P(B ≤ k − 1) ≤ α/2;
    * u = the smallest k in 1…n with P(B ≥ k) ≤ α/2.

    None when either does not exist: no interval from order statistics reaches ``level`` (at 95 %: the median
    below n = 6, where P(B = 0) = 0.5ⁿ > 0.025; a quartile below n = 13, where 0.75ⁿ > 0.025). Equal tails
    make the median's ranks symmetric (u = n + 1 − l), as in the published tables: n = 10 → (2, 9), n = 20 →
    (6, 15). The coverage P(l ≤ B ≤ u − 1) is ≥ ``level`` and, B being discrete, above it for small n (the
    median at n = 10: 97.9 %).
    """
    if n < 1:
        return None
    if not 0.0 < q < 1.0:
        raise ValueError(f"quantile {q} is not in (0, 1)")
    tail = (1.0 - check_level(level)) / 2
    cdf = _binomial_cdf(n, q)
    # P(B ≤ k − 1) grows with k: the last k whose lower tail is still within α/2
    lows = [k for k in range(1, n + 1) if cdf[k - 1] <= tail]
    # P(B ≥ k) = 1 − P(B ≤ k − 1) shrinks with k: the first k whose upper tail is within α/2
    highs = [k for k in range(1, n + 1) if 1.0 - cdf[k - 1] <= tail]
    if not lows or not highs:
        return None
    return lows[-1], highs[0]


def quantile_interval(values: Sequence[float], q: float, level: float = LEVEL) -> tuple[float, float] | None:
    """The distribution-free ``level`` confidence interval [X₍l₎, X₍u₎] for the population's ``q`` quantile
    from a sample (module docstring; ranks by ``quantile_ranks``). None when the sample is too small for one.
    """
    ranks = quantile_ranks(len(values), q, level)
    if ranks is None:
        return None
    ordered = sorted(values)
    return float(ordered[ranks[0] - 1]), float(ordered[ranks[1] - 1])


def median_interval(values: Sequence[float], level: float = LEVEL) -> tuple[float, float] | None:
    """``quantile_interval`` of the median (q = 0.5): None below 6 values at 95 %."""
    return quantile_interval(values, 0.5, level)
