"""95 % intervals of the measures (docs/concepts/measures.md, definition 8): each gives (low, high), or None where
no interval of its kind exists for the data (too few values; the minimums of docs/concepts/measures.md are separate).

* sold-price median and quartiles: distribution-free order-statistic intervals (``order_statistics``);
* sell-through: the Wilson score interval (``proportion``);
* time to sell: Kaplan–Meier with Greenwood's variance, log-log band, and the quantiles' intervals read off it
  (``survival``);
* heat and momentum: the percentile bootstrap over hours (``bootstrap``).
"""

from lib.market.intervals.bootstrap import RESAMPLES, SEED, bootstrap_interval, stratified_bootstrap_interval
from lib.market.intervals.level import LEVEL, t_of, z_of
from lib.market.intervals.order_statistics import median_interval, quantile_interval, quantile_ranks
from lib.market.intervals.proportion import wilson_interval
from lib.market.intervals.survival import (
    SurvivalBand,
    bands_quantile_interval,
    km_quantile_interval,
    km_steps_quantile_interval,
    survival_bands,
)

__all__ = [
    "LEVEL", "RESAMPLES", "SEED", "SurvivalBand", "bands_quantile_interval", "bootstrap_interval",
    "km_quantile_interval", "km_steps_quantile_interval", "median_interval", "quantile_interval", "quantile_ranks",
    "stratified_bootstrap_interval", "survival_bands", "t_of", "wilson_interval", "z_of",
]
