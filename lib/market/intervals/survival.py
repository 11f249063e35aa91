"""Time to sell with censoring: the Kaplan–Meier curve's pointwise band from Greenwood's variance, and the
confidence interval of a Kaplan–Meier quantile (the median time to sell and its quartiles) read off that band.

The curve is ``lib.market.robust``'s (one computation; docs/concepts/measures.md, definition 5: a listing still on sale
or no longer seen is censored at its last sighting or the window's end). At each step t_j, with n_j listings at risk
and d_j sales:

* Greenwood's variance: Var Ŝ(t) = Ŝ(t)² · Σ_{t_j ≤ t} d_j / (n_j (n_j − d_j));
* the band is taken on the log(−log) scale, where Ŝ is nearer normal and the limits stay inside (0, 1):
  σ(t) = √(Σ d_j / (n_j (n_j − d_j))) / |ln Ŝ(t)|, and S(t) lies in [Ŝ(t)^exp(z·σ), Ŝ(t)^exp(−z·σ)];
* the ``q`` quantile's interval is the set of times whose band holds 1 − q (Brookmeyer & Crowley's inversion,
  here on the log-log scale): its lower end is the first step where the band's *lower* limit is ≤ 1 − q, its
  upper end the first step where the band's *upper* limit is ≤ 1 − q (no such step: unbounded above). This is
  the rule of R's ``survival`` package (``quantile.survfit``, after Miller 1981); statsmodels'
  ``SurvfuncRight.quantile_ci`` (``cloglog``) gives the same ends, except that it closes the upper end at a
  last step where Ŝ falls to 0, which here has no band (``survival_bands``). The point estimate
  (``robust.km_quantile``, the first step where Ŝ ≤ 1 − q) lies between the two ends whenever they exist.

References: Greenwood, "The natural duration of cancer", Reports on Public Health and Medical Subjects 33
(1926); Kalbfleisch & Prentice, *The Statistical Analysis of Failure Time Data* (1980) (the log-log band);
Klein & Moeschberger, *Survival Analysis* (2nd ed., 2003), §4.2–4.5 (Greenwood, transformed bands, the median's
interval); Brookmeyer & Crowley, "A confidence interval for the median survival time", Biometrics 38 (1982)
29–41.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from lib.market.intervals.level import LEVEL, z_of
from lib.market.robust import KmStep, kaplan_meier_steps

#: The crossing tolerance of ``robust.km_quantile``: the interval's ends read the band as the estimate reads Ŝ.
_EPSILON = 1e-12


@dataclass(frozen=True)
class SurvivalBand:
    """The Kaplan–Meier estimate at one step with its Greenwood standard error and log-log band.

    Parameters:
        time: the step's duration.
        survival: Ŝ(time).
        std_error: Greenwood's standard error of Ŝ(time) (None where Ŝ fell to 0: undefined there).
        low: the band's lower limit (None where Ŝ fell to 0).
        high: the band's upper limit (None where Ŝ fell to 0).
    """

    time: float
    survival: float
    std_error: float | None
    low: float | None
    high: float | None


def survival_bands(steps: Sequence[KmStep], level: float = LEVEL) -> list[SurvivalBand]:
    """Greenwood's standard error and the log-log ``level`` band at each Kaplan–Meier step (module docstring).

    At a step where Ŝ falls to 0 (every listing still at risk sold at once) Greenwood's variance is undefined
    (0 · ∞) and so is the log-log band: its standard error and limits are None, and no quantile interval ends
    there (R's ``survfit`` leaves them NA too). A band of [0, 0] would claim the curve known exactly where the
    last few listings sold, and give a quantile a zero-width interval at its last sale."""
    z = z_of(level)
    greenwood = 0.0
    bands: list[SurvivalBand] = []
    for step in steps:
        s = step.survival
        if step.events >= step.at_risk or s <= 0.0:
            bands.append(SurvivalBand(step.time, 0.0, None, None, None))
            continue
        greenwood += step.events / (step.at_risk * (step.at_risk - step.events))
        sigma = math.sqrt(greenwood) / abs(math.log(s))
        bands.append(SurvivalBand(step.time, s, s * math.sqrt(greenwood),
                                  s ** math.exp(z * sigma), s ** math.exp(-z * sigma)))
    return bands


def km_steps_quantile_interval(steps: Sequence[KmStep], q: float = 0.5,
                               level: float = LEVEL) -> tuple[float, float | None] | None:
    """The ``level`` confidence interval of the Kaplan–Meier ``q`` quantile (module docstring) from the curve's
    steps: (low, high), high None when the band's upper limit never reaches 1 − q (censoring leaves the quantile
    unbounded above). None when even the lower limit never reaches it: no interval (the point estimate is then
    insufficient too, or rests on a last step where every listing left sold, which has no band)."""
    return bands_quantile_interval(survival_bands(steps, level), q)


def bands_quantile_interval(bands: Sequence[SurvivalBand], q: float) -> tuple[float, float | None] | None:
    """``km_steps_quantile_interval`` read off the curve's bands (``survival_bands``, computed once for several
    quantiles)."""
    if not 0.0 < q < 1.0:
        raise ValueError(f"quantile {q} is not in (0, 1)")
    target = 1.0 - q + _EPSILON
    low = next((b.time for b in bands if b.low is not None and b.low <= target), None)
    if low is None:
        return None
    return low, next((b.time for b in bands if b.high is not None and b.high <= target), None)


def km_quantile_interval(durations: Sequence[tuple[float, bool]], q: float = 0.5,
                         level: float = LEVEL) -> tuple[float, float | None] | None:
    """``km_steps_quantile_interval`` of (duration, observed) pairs (``robust.kaplan_meier``'s input: observed
    False is a listing censored at that duration). The median time to sell's 95 % interval is
    ``km_quantile_interval(durations)``."""
    return km_steps_quantile_interval(kaplan_meier_steps(durations), q, level)
