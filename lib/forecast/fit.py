"""The models fitted on the histories (docs/concepts/forecasts.md, "The models"): Nixtla's statsforecast, the one
module that imports it (with pandas, which it takes its series in, and scipy), so nothing else pays for their import.

Each measure's histories are fitted at once (statsforecast fits many series in one call): the flows with AutoETS
over a weekly season, the price median with AutoETS without one. AutoETS weighs every error, trend and season form
for an IP's series (``IP_FORMS``) and only the forms without a trend for a segment's (``SEGMENT_FORMS``): a
segment's series are most of the series there are, weighing the trended forms costs about eight times as much a
series, and without them the backtests held as well (``python -m bench forecast``, docs/benchmarks.md "Forecasts").
A series the model cannot fit (statsforecast's ``fallback_model``) is forecast by the naive method: its last value,
with intervals from its day-to-day changes.

A burst is not a cycle: fitted as it is, a seasonal model takes a one-day burst (an announcement) for a weekday
that sells more and forecasts it again a week later, and a level model carries it into the days ahead. So before
the flows are fitted, each day but the last is held against what its neighbours say it should be (``expected``:
the median of the 7 days on either side, times its weekday's share), and a day above that by more than half as
much again and three Poisson standard deviations is fitted at it (``without_bursts``). A lasting change of level
moves the neighbours' median with it within days, and the last day is fitted as it is.

A burst may come again, though, and a day ahead's interval says what the day will be, burst or not. A flow's day
ahead is a count of the model's mean (``count_quantiles``) on an ordinary day, and of that mean times the history's
bursts' mean ratio to their expected values on a burst day, which comes with the share of the history's days that
were bursts (``burst_risk``): its intervals are the quantiles of that mixture (``mixture_quantiles``), and those of
the ordinary day alone are kept beside them (``DayForecast.ordinary_lo95``, ``ordinary_hi95``): a breakout is a day
out of the ordinary (``lib.forecast.breakouts``). Without a burst in its history a day's intervals are the ordinary
ones. Scored by ``python -m bench forecast`` (docs/benchmarks.md "Forecasts").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from lib.forecast.values import HORIZON, LEVELS, MEDIAN_PRICE, CountLaw, DayForecast, Forecast, History

#: The weekly cycle of the flows, in days.
WEEK = 7
MODEL = "AutoETS"
#: The forms AutoETS weighs (its ``model`` argument: error, trend, season; Z: each it has), for an IP's series and for
#: a segment's (module docstring).
IP_FORMS, SEGMENT_FORMS = "ZZZ", "ZNZ"
#: The naive method's name, as statsforecast names its column.
NAIVE = "Naive"
#: A day above its expected value by this share of it and this many Poisson standard deviations is a burst
#: (module docstring).
BURST_SHARE = 0.5
BURST_SIGMAS = 3.0


def forecast(histories: Sequence[History], fitted_at: float) -> list[Forecast]:
    """A forecast ``HORIZON`` days ahead of each history (each long enough: ``series.enough``)."""
    out: list[Forecast] = []
    for price in (False, True):
        for forms, segments in ((IP_FORMS, False), (SEGMENT_FORMS, True)):
            group = [h for h in histories
                     if (h.measure == MEDIAN_PRICE) is price and (h.segment is not None) is segments and h.days]
            if group:
                out.extend(_fit(group, 1 if price else WEEK, fitted_at, counts=not price, forms=forms))
    return out


def _fit(histories: Sequence[History], season: int, fitted_at: float, counts: bool,
         forms: str = IP_FORMS) -> list[Forecast]:
    """Each history forecast by AutoETS; should one's forecast come out not finite, by the naive method instead
    (statsforecast warns of divisions by zero while it weighs models on a short history: the database and the JSON
    answers take no infinity)."""
    found = [burst_days(h.values) if season != 1 else [] for h in histories]
    series = [without_bursts(h.values, bursts) for h, bursts in zip(histories, found, strict=True)]
    made = _library_forecast(series, season, MODEL, forms)
    fitted: list[tuple[str, list[dict[str, Any]]]] = []
    for i in range(len(histories)):
        rows, model = made[i], MODEL
        if not all(math.isfinite(float(r[c])) for r in rows for c in _columns(MODEL)):
            rows, model = _library_forecast([series[i]], season, NAIVE)[0], NAIVE
        fitted.append((model, rows))
    if counts:
        days_of = _count_days(histories, fitted, found)
    else:
        days_of = [[_day(h.days[-1] + timedelta(days=k), r, model) for k, r in enumerate(rows, start=1)]
                   for h, (model, rows) in zip(histories, fitted, strict=True)]
    return [Forecast(h.ip_id, h.measure, h.days[-1], len(h.days), model, fitted_at, tuple(days),
                     fingerprint=h.fingerprint(), segment=h.segment)
            for h, (model, _), days in zip(histories, fitted, days_of, strict=True)]


def _columns(model: str) -> tuple[str, ...]:
    return (model, f"{model}-lo-80", f"{model}-hi-80", f"{model}-lo-95", f"{model}-hi-95")


def _day(day: datetime, row: dict[str, Any], model: str) -> DayForecast:
    """A day ahead as the library's row has it: its point forecast and intervals (the price median's)."""
    mean, lo80, hi80, lo95, hi95 = (float(row[c]) for c in _columns(model))
    return DayForecast(day, mean, lo80, hi80, lo95, hi95)


def _library_forecast(series: Sequence[Sequence[float]], season: int, model: str,
                      forms: str = IP_FORMS) -> list[list[dict[str, Any]]]:
    """statsforecast's forecast of each series (the library's rows, in order of the days ahead) by ``model`` (AutoETS
    weighing ``forms``)."""
    import warnings

    import pandas as pd
    from statsforecast import StatsForecast
    from statsforecast.models import AutoETS, Naive

    # the days as 0, 1, 2…: the price median's history may skip days, and a model sees the values in order
    frame = pd.DataFrame({"unique_id": [str(i) for i, values in enumerate(series) for _ in values],
                          "ds": [t for values in series for t in range(len(values))],
                          "y": [v for values in series for v in values]})
    fitted = AutoETS(season_length=season, model=forms) if model == MODEL else Naive()
    engine = StatsForecast(models=[fitted], freq=1, n_jobs=1, fallback_model=Naive())
    with warnings.catch_warnings():  # a series too short for its model's variance: not finite, handled by _fit
        warnings.simplefilter("ignore", RuntimeWarning)
        answer = engine.forecast(df=frame, h=HORIZON, level=list(LEVELS))
    by_series: dict[str, list[dict[str, Any]]] = {}
    for row in answer.to_dict("records"):
        by_series.setdefault(str(row["unique_id"]), []).append(row)
    return [sorted(by_series[str(i)], key=lambda r: int(r["ds"])) for i in range(len(series))]


#: The quantiles the intervals' ends stand for: 80 % (lo, hi), then 95 % (lo, hi).
ENDS = (0.1, 0.9, 0.025, 0.975)


def _count_days(histories: Sequence[History], fitted: Sequence[tuple[str, list[dict[str, Any]]]],
                found: Sequence[list[tuple[int, float]]]) -> list[list[DayForecast]]:
    """Each flow's days ahead from the library's rows: a count of the point forecast as its mean (never below 0) and
    the variance the model's 95 % interval implies (module docstring), all days of all series at once."""
    means, sds, shares, ratios = [], [], [], []
    for history, (model, rows), bursts in zip(histories, fitted, found, strict=True):
        share, ratio = burst_risk(history.values, bursts)
        for r in rows:
            mean, _, _, lo95, hi95 = (float(r[c]) for c in _columns(model))
            means.append(max(0.0, mean))
            sds.append((hi95 - lo95) / (2 * Z95))
            shares.append(share)
            ratios.append(ratio)
    ordinary = count_quantiles_many(means, sds, ENDS)
    risky = [k for k, share in enumerate(shares) if share > 0]  # the others' mixture is the ordinary day itself
    mixed = dict(zip(risky, mixture_quantiles_many([means[k] for k in risky], [sds[k] for k in risky],
                                                   [shares[k] for k in risky], [ratios[k] for k in risky], ENDS),
                     strict=True))
    out: list[list[DayForecast]] = []
    k = 0
    for history, (_, rows) in zip(histories, fitted, strict=True):
        days = []
        for ahead in range(1, len(rows) + 1):
            day = history.days[-1] + timedelta(days=ahead)
            law = CountLaw(means[k], sds[k], shares[k], ratios[k])
            if k in mixed:
                lo80, hi80, lo95, hi95 = mixed[k]
                days.append(DayForecast(day, means[k], lo80, hi80, lo95, hi95, ordinary_lo95=ordinary[k][2],
                                        ordinary_hi95=ordinary[k][3], law=law))
            else:
                lo80, hi80, lo95, hi95 = ordinary[k]
                days.append(DayForecast(day, means[k], lo80, hi80, lo95, hi95, law=law))
            k += 1
        out.append(days)
    return out


#: The standard normal's 97.5 % quantile: a 95 % interval's half-width in standard deviations.
Z95 = 1.959963984540054


def count_quantiles(mean: float, sd: float, levels: Sequence[float]) -> list[float]:
    """The quantiles of a day's count of mean ``mean`` and standard deviation ``sd``: a negative binomial, or a
    Poisson count where ``sd`` is below a Poisson count's. A day's sales vary at least as a Poisson count around
    their rate (the models' own intervals, fitted on a few weeks, were narrower than that on niche IPs), and a
    count's spread is skewed upward: the models' intervals, symmetric about the mean, left up to 3.7 % of ordinary
    days above the 95 % interval and 0.4 % below it, and more of the upward breakouts flagged on them were chance
    (``python -m bench forecast``, docs/benchmarks.md "Forecasts")."""
    return count_quantiles_many([mean], [sd], levels)[0]


def _shape(means: Sequence[float], sds: Sequence[float]) -> tuple[Any, Any, Any]:
    """Each count's rate, and its negative binomial's size where its variance passes its rate (else NaN: Poisson)."""
    import numpy as np

    rate = np.maximum(np.asarray(means, dtype=float), 1e-9)
    sd = np.asarray(sds, dtype=float)
    var = np.where(np.isfinite(sd), sd * sd, 0.0)
    over = var > rate * (1 + 1e-9)
    size = np.where(over, rate * rate / np.where(over, var - rate, 1.0), np.nan)
    return rate, size, over


def _cdf(x: Any, rate: Any, size: Any, over: Any) -> Any:
    """P(count ≤ x) of counts of mean ``rate``: negative binomial of ``size`` where ``over``, else Poisson."""
    import numpy as np
    from scipy.stats import nbinom, poisson

    safe = np.where(over, size, 1.0)
    return np.where(over, nbinom.cdf(x, safe, safe / (safe + rate)), poisson.cdf(x, rate))


def _ppf(level: Any, rate: Any, size: Any, over: Any) -> Any:
    import numpy as np
    from scipy.stats import nbinom, poisson

    safe = np.where(over, size, 1.0)
    return np.where(over, nbinom.ppf(level, safe, safe / (safe + rate)), poisson.ppf(level, rate))


def count_quantiles_many(means: Sequence[float], sds: Sequence[float], levels: Sequence[float]) -> list[list[float]]:
    """``count_quantiles`` of many counts at once."""
    import numpy as np

    if not means:
        return []
    rate, size, over = _shape(means, sds)
    columns = [_ppf(level, rate, size, over) for level in levels]
    quantiles: list[list[float]] = np.stack(columns, axis=1).astype(float).tolist()
    return quantiles


def mixture_quantiles(mean: float, sd: float, share: float, ratio: float, levels: Sequence[float]) -> list[float]:
    """The quantiles of a day's count that is, with probability ``share``, a burst day's: the ordinary day's count
    (``count_quantiles``: mean ``mean``, standard deviation ``sd``) with its mean ``ratio`` times as high and the
    same negative binomial size (a Poisson count stays one); else the ordinary day's. The least whole x at which
    (1 − share)·F(x) + share·F_burst(x) reaches each level."""
    return mixture_quantiles_many([mean], [sd], [share], [ratio], levels)[0]


def mixture_quantiles_many(means: Sequence[float], sds: Sequence[float], shares: Sequence[float],
                           ratios: Sequence[float], levels: Sequence[float]) -> list[list[float]]:
    """``mixture_quantiles`` of many counts at once (a count without bursts, share 0, gets ``count_quantiles``)."""
    import numpy as np

    if not means:
        return []
    rate, size, over = _shape(means, sds)
    share = np.asarray(shares, dtype=float)
    burst = rate * np.maximum(np.asarray(ratios, dtype=float), 1.0)
    columns = []
    for level in levels:
        # the mixture's quantile lies between the ordinary day's and the burst day's (F_burst ≤ F)
        lo = _ppf(level, rate, size, over)
        hi = np.maximum(_ppf(level, burst, size, over), lo)
        while bool((lo < hi).any()):
            mid = np.floor((lo + hi) / 2)
            reached = _mixture_cdf(mid, rate, burst, share, size, over) >= level
            hi = np.where(reached, mid, hi)
            lo = np.where(reached, lo, mid + 1)
        columns.append(lo)
    quantiles: list[list[float]] = np.stack(columns, axis=1).astype(float).tolist()
    return quantiles


def law_cdf_many(laws: Sequence[CountLaw], xs: Sequence[float]) -> list[float]:
    """P(count ≤ x) of each day's count (its ``CountLaw``: the mixture ``mixture_quantiles`` takes the quantiles of)
    at the matching ``x``; 0 below 0."""
    import numpy as np

    if not laws:
        return []
    rate, size, over = _shape([law.mean for law in laws], [law.sd for law in laws])
    share = np.asarray([law.share for law in laws], dtype=float)
    burst = rate * np.maximum(np.asarray([law.ratio for law in laws], dtype=float), 1.0)
    x = np.floor(np.asarray(xs, dtype=float))
    cdf: list[float] = np.where(x < 0, 0.0, _mixture_cdf(x, rate, burst, share, size, over)).astype(float).tolist()
    return cdf


def _mixture_cdf(x: Any, rate: Any, burst: Any, share: Any, size: Any, over: Any) -> Any:
    """P(count ≤ x) of a day that is, with probability ``share``, a burst day's count (mean ``burst``), else an
    ordinary day's (mean ``rate``), both of negative binomial ``size`` where ``over`` (``_cdf``)."""
    return (1 - share) * _cdf(x, rate, size, over) + share * _cdf(x, burst, size, over)


def burst_risk(values: Sequence[float], bursts: Sequence[tuple[int, float]]) -> tuple[float, float]:
    """A history's chance of a burst day and a burst day's size: the share of its days checked (all but the last)
    that were bursts (``burst_days``), and their mean ratio to their expected values; (0, 1) without one."""
    ratios = [values[t] / expected for t, expected in bursts if expected > 0]
    if not ratios or len(values) < 2:
        return 0.0, 1.0
    return len(ratios) / (len(values) - 1), sum(ratios) / len(ratios)


def without_bursts(values: Sequence[float], bursts: Sequence[tuple[int, float]] | None = None) -> list[float]:
    """The flows as fitted: each day but the last that is a burst (module docstring) at its expected value;
    ``bursts``: those days, if ``burst_days`` found them already."""
    out = list(values)
    for t, expected in burst_days(values) if bursts is None else bursts:
        out[t] = expected
    return out


def burst_days(values: Sequence[float]) -> list[tuple[int, float]]:
    """The days but the last that are bursts (module docstring), each with its expected value."""
    import statistics

    n = len(values)
    overall = statistics.median(values) if values else 0.0
    out: list[tuple[int, float]] = []
    for t in range(n - 1):
        neighbours = [values[u] for u in range(max(0, t - 7), min(n, t + 8)) if u != t]
        weekday = [values[u] for u in range(t % WEEK, n, WEEK) if u != t]
        share = statistics.median(weekday) / overall if weekday and overall > 0 else 1.0
        expected = statistics.median(neighbours) * share if neighbours else values[t]
        if values[t] > expected * (1 + BURST_SHARE) + BURST_SIGMAS * max(expected, 1.0) ** 0.5:
            out.append((t, expected))
    return out
