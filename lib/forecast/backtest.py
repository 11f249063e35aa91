"""Rolling-origin backtests of the forecasts (docs/concepts/forecasts.md, "How good they are"): each series is cut
at several origins, forecast ``HORIZON`` days from the history before each cut by the same models as the stored
forecasts (``lib.forecast.fit``) and by the weekly seasonal naive method (each day ahead: the same weekday of the
last week), and both are scored against what followed.

The scores, each the textbook one:

* **MASE** (Hyndman and Koehler, 2006): the mean absolute error over the days ahead, divided by the in-sample mean
  absolute error of the weekly seasonal naive method over the history (|y_t - y_{t-7}|). A cut whose history never
  changed week to week (that scale is 0) is left out. Averaged over the cuts, as M4 does; ``mase_ratio`` is the
  model's over the seasonal naive method's.
* **Coverage**: the share of days ahead whose value lies in the 80 % (95 %) interval. A count's interval holds at
  least its level, more where the count is small: the 80 % interval of a count of mean 0.3 is [0, 1], which holds
  96 % of its days. So for the flows, whose days ahead keep their distribution (``DayForecast.law``), the coverage
  of that distribution is also given with the count's steps smoothed out, by the randomized probability integral
  transform (Czado, Gneiting and Held, 2009): a day of value x stands for a point drawn evenly between F(x − 1) and
  F(x), and counts as held by the share of that span inside the level's central range (10 % to 90 %, 2.5 % to
  97.5 %). A calibrated distribution holds its level exactly then, whatever its counts' sizes. A value between two
  counts (a flow scaled to a whole day) is taken at the count below it.
* **Scaled pinball loss** (M5's SPL): the quantile loss of the interval ends taken as the 2.5, 10, 90 and 97.5 %
  quantiles and of the point forecast as the median, over the days ahead, divided by the same scale as MASE;
  averaged over the five quantiles and the cuts.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from lib.forecast import fit
from lib.forecast.values import HORIZON, OUTFLOW, DayForecast, History, Segment

#: The quantiles the interval ends and the point forecast stand for, in the pinball loss.
QUANTILES = (0.025, 0.1, 0.5, 0.9, 0.975)
#: The first day of a backtest's synthetic calendar (a Monday): only the weekday matters to the models.
EPOCH = datetime(2024, 1, 1)
WEEK = 7
#: Days of history a cut needs (four weekly cycles).
MIN_HISTORY = 28


@dataclass(frozen=True, slots=True)
class Cut:
    """One series cut at one origin: the history before it and what followed."""

    key: Hashable
    origin: int  # the index of the first day ahead
    history: tuple[float, ...]
    actual: tuple[float, ...]


@dataclass(frozen=True, slots=True)
class Scored:
    """One cut's scores (``scale``: the in-sample seasonal naive MAE)."""

    key: Hashable
    origin: int
    scale: float
    mase: float
    naive_mase: float
    held80: int
    held95: int
    days: int
    pinball: float
    smooth80: float | None = None  # the days held at 80 % with the count's steps smoothed out (module docstring)
    smooth95: float | None = None


@dataclass(frozen=True, slots=True)
class Summary:
    """A backtest's scores over many cuts (module docstring)."""

    cuts: int
    mase: float
    naive_mase: float
    mase_ratio: float
    coverage80: float
    coverage95: float
    pinball: float
    smooth_coverage80: float | None = None  # None: a series without a count's distribution (the price median)
    smooth_coverage95: float | None = None


def cuts(series: Mapping[Hashable, Sequence[float]], origins: Sequence[int], min_history: int) -> list[Cut]:
    """Each series cut at each origin (an index into it) that leaves at least ``min_history`` days before it and
    ``HORIZON`` after."""
    return [Cut(key, o, tuple(values[:o]), tuple(values[o:o + HORIZON]))
            for key, values in series.items() for o in origins
            if o >= min_history and o + HORIZON <= len(values)]


def seasonal_scale(history: Sequence[float]) -> float:
    """The in-sample mean absolute error of the weekly seasonal naive method."""
    diffs = [abs(history[t] - history[t - WEEK]) for t in range(WEEK, len(history))]
    return statistics.fmean(diffs) if diffs else 0.0


def seasonal_naive(history: Sequence[float]) -> list[float]:
    """Each day ahead: the same weekday of the history's last week."""
    return [history[len(history) - WEEK + (h % WEEK)] for h in range(HORIZON)]


def pinball(actual: float, predicted: float, q: float) -> float:
    return (actual - predicted) * q if actual >= predicted else (predicted - actual) * (1 - q)


def forecasts(selected: Sequence[Cut], measure: str = OUTFLOW,
              kind: str | None = None) -> list[tuple[DayForecast, ...]]:
    """The models' forecast of each cut (``lib.forecast.fit``, all cuts fitted in one call), as the segments of
    ``kind`` are fitted (None: as IPs are)."""
    histories = [History(i, measure, tuple(EPOCH + timedelta(days=t) for t in range(len(c.history))), c.history,
                         None if kind is None else Segment(kind, str(c.key)))
                 for i, c in enumerate(selected)]
    made = {f.ip_id: f.days for f in fit.forecast(histories, 0.0)}
    return [made[i] for i in range(len(selected))]


def smoothed_held(below: float, at: float, level: float) -> float:
    """How much a day counts as held by a ``level`` interval when its value x has F(x − 1) = ``below`` and F(x) =
    ``at`` (module docstring, "Coverage"): the share of [below, at] inside the level's central range."""
    low, high = (1 - level) / 2, (1 + level) / 2
    if at - below <= 1e-12:
        return float(low <= at <= high)
    return max(0.0, min(at, high) - max(below, low)) / (at - below)


def smoothed(actual: Sequence[float], days: Sequence[DayForecast]) -> tuple[float, float] | None:
    """The days held at 80 % and at 95 % with the count's steps smoothed out; None where a day has no distribution."""
    laws = [d.law for d in days if d.law is not None]
    if not laws or len(laws) != len(days):
        return None
    xs = [math.floor(a) for a in actual]
    cdf = fit.law_cdf_many(laws + laws, xs + [x - 1 for x in xs])  # F(x), then F(x - 1), in one pass
    at, below = cdf[:len(xs)], cdf[len(xs):]
    return (sum(smoothed_held(b, a, 0.8) for b, a in zip(below, at, strict=True)),
            sum(smoothed_held(b, a, 0.95) for b, a in zip(below, at, strict=True)))


def score(cut: Cut, days: Sequence[DayForecast]) -> Scored | None:
    """One cut's scores against its forecast (None: its scale is 0)."""
    scale = seasonal_scale(cut.history)
    if scale == 0:
        return None
    naive = seasonal_naive(cut.history)
    mae = statistics.fmean(abs(a - d.mean) for a, d in zip(cut.actual, days, strict=True))
    naive_mae = statistics.fmean(abs(a - n) for a, n in zip(cut.actual, naive, strict=True))
    losses = [pinball(a, q_value, q) for a, d in zip(cut.actual, days, strict=True)
              for q, q_value in zip(QUANTILES, (d.lo95, d.lo80, d.mean, d.hi80, d.hi95), strict=True)]
    smooth = smoothed(cut.actual, days)
    return Scored(cut.key, cut.origin, scale, mae / scale, naive_mae / scale,
                  sum(d.lo80 <= a <= d.hi80 for a, d in zip(cut.actual, days, strict=True)),
                  sum(d.lo95 <= a <= d.hi95 for a, d in zip(cut.actual, days, strict=True)),
                  len(cut.actual), statistics.fmean(losses) / scale,
                  *(smooth if smooth is not None else (None, None)))


def backtest(series: Mapping[Hashable, Sequence[float]], origins: Sequence[int], min_history: int = MIN_HISTORY,
             measure: str = OUTFLOW, kind: str | None = None) -> tuple[Summary | None, list[Scored]]:
    """Every cut of these series scored (module docstring), fitted as the segments of ``kind`` are (None: as IPs
    are); the summary is None without a cut to score."""
    selected = cuts(series, origins, min_history)
    scored = [s for c, days in zip(selected, forecasts(selected, measure, kind), strict=True)
              if (s := score(c, days)) is not None]
    return summarize(scored), scored


def summarize(scored: Sequence[Scored]) -> Summary | None:
    if not scored:
        return None
    mase = statistics.fmean(s.mase for s in scored)
    naive = statistics.fmean(s.naive_mase for s in scored)
    days = sum(s.days for s in scored)
    smooth = all(s.smooth80 is not None and s.smooth95 is not None for s in scored)
    return Summary(len(scored), mase, naive, mase / naive if naive else float("inf"),
                   sum(s.held80 for s in scored) / days, sum(s.held95 for s in scored) / days,
                   statistics.fmean(s.pinball for s in scored),
                   sum(s.smooth80 or 0.0 for s in scored) / days if smooth else None,
                   sum(s.smooth95 or 0.0 for s in scored) / days if smooth else None)


def stored(today: datetime, origins_back: int, measures: Sequence[str]) -> dict[str, tuple[Summary | None, int]]:
    """A deployment's own history backtested: each active IP's history of each flow measure (``lib.forecast.series``,
    before ``today``) cut at ``origins_back`` weekly origins ending a week before its last day. Returns each
    measure's summary and how many IPs had the history for at least one cut."""
    from lib.forecast.series import histories
    from lib.market.statistics import tuples
    from models import IpMetadata

    ip_ids = [i for (i,) in tuples(IpMetadata.select(IpMetadata.id).order_by(IpMetadata.id))]
    found = histories(ip_ids, today) if ip_ids else {}
    out: dict[str, tuple[Summary | None, int]] = {}
    for measure in measures:
        selected: list[Cut] = []
        for ip_id, h in found.items():
            values = h[measure].values
            selected += cuts({ip_id: values}, [len(values) - HORIZON - WEEK * k for k in range(origins_back)],
                             MIN_HISTORY)
        scored = [s for c, days in zip(selected, forecasts(selected, measure), strict=True)
                  if (s := score(c, days)) is not None]
        out[measure] = (summarize(scored), len({s.key for s in scored}))
    return out
