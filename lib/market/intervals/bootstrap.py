"""Percentile bootstrap intervals over hours, for the measures no closed form covers (heat and momentum: a
clamped log ratio of outflow rates mixed with a sell-through).

The hours are the resampled units: each resample draws, with replacement, as many hours as the data has from
the data's hours (within each stratum separately), and the statistic is computed on it as on the data. The
interval is the middle ``level`` of the resampled statistics. It treats the hours as exchangeable within a
stratum: a daily cycle in outflow widens the interval (it is counted as noise), while bursts lasting several
hours narrow it (they are counted as independent hours).

Deterministic: the resamples come from ``random.Random(seed)``, so the same hours, statistic and seed give the
same interval (on a given Python version: ``random.choices`` draws ⌊random() · n⌋).

References: Efron & Tibshirani, *An Introduction to the Bootstrap* (1993), ch. 13 (the percentile interval; they
advise 1,000 or more resamples for an interval's ends, against 50–200 for a standard error); Davison & Hinkley,
*Bootstrap Methods and their Application* (1997), §3.2 (stratified resampling).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from typing import TypeVar

from lib.market.intervals.level import LEVEL, check_level

T = TypeVar("T")

#: Resamples per interval: at 95 % the ends are the 50th smallest and 50th largest of 2,000 (enough that the ends'
#: Monte Carlo error is small against the interval's width; Efron & Tibshirani ask for at least 1,000).
RESAMPLES = 2000
#: The default seed: an interval is a function of its data.
SEED = 0


def stratified_bootstrap_interval(strata: Sequence[Sequence[T]],
                                  statistic: Callable[[Sequence[Sequence[T]]], float | None], *,
                                  resamples: int = RESAMPLES, seed: int = SEED,
                                  level: float = LEVEL) -> tuple[float, float] | None:
    """The percentile bootstrap ``level`` interval of ``statistic`` over hours resampled within each stratum.

    ``strata``: the hours' values, by stratum (each keeps its size in every resample); ``statistic``: the
    measure computed from strata of hours, None where it is insufficient. Heat resamples the window's hours
    and its baseline's as two strata; momentum's four ranges overlap (a 24-hour window's previous window lies
    inside its baseline), so pass the cells of their partition, each hour carrying the ranges it belongs to,
    and let the statistic sum each range from the cells.

    With B = ``resamples`` statistics computed, k = max(1, ⌊B·α/2⌋), α = 1 − ``level``: the interval runs from
    the k-th smallest to the k-th largest (at 95 % with B = 2,000: the 50th from each end). Resamples where the
    statistic is None are left out, and the interval is None when the statistic of the data itself is None or
    more than B·α/2 resamples are (one tail of the resampled distribution is then not known).
    """
    if resamples < 1:
        raise ValueError(f"{resamples} resamples")
    tail = (1.0 - check_level(level)) / 2
    if statistic(strata) is None:
        return None
    rng = random.Random(seed)
    values = []
    for _ in range(resamples):
        value = statistic([rng.choices(stratum, k=len(stratum)) if stratum else [] for stratum in strata])
        if value is not None:
            values.append(value)
    if resamples - len(values) > resamples * tail:
        return None
    values.sort()
    k = max(1, math.floor(len(values) * tail))
    return values[k - 1], values[-k]


def bootstrap_interval(hours: Sequence[T], statistic: Callable[[Sequence[T]], float | None], *,
                       resamples: int = RESAMPLES, seed: int = SEED,
                       level: float = LEVEL) -> tuple[float, float] | None:
    """``stratified_bootstrap_interval`` with every hour in one stratum: ``statistic`` takes the hours' values."""
    return stratified_bootstrap_interval([hours], lambda strata: statistic(strata[0]),
                                         resamples=resamples, seed=seed, level=level)
