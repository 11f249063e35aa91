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
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from lib.forecast.values import HORIZON, LEVELS, MEDIAN_PRICE, DayForecast, Forecast, History

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
    series = [list(h.values if season == 1 else without_bursts(h.values)) for h in histories]
    made = _library_forecast(series, season, MODEL, forms)
    out = []
    for i, history in enumerate(histories):
        rows, model = made[i], MODEL
        if not all(math.isfinite(float(r[c])) for r in rows for c in _columns(MODEL)):
            rows, model = _library_forecast([series[i]], season, NAIVE)[0], NAIVE
        origin = history.days[-1]
        days = tuple(_day(origin + timedelta(days=k), r, model, counts=counts) for k, r in enumerate(rows, start=1))
        out.append(Forecast(history.ip_id, history.measure, origin, len(history.days), model, fitted_at, days,
                            fingerprint=history.fingerprint(), segment=history.segment))
    return out


def _columns(model: str) -> tuple[str, ...]:
    return (model, f"{model}-lo-80", f"{model}-hi-80", f"{model}-lo-95", f"{model}-hi-95")


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


def _day(day: datetime, row: dict[str, Any], model: str, *, counts: bool) -> DayForecast:
    """One day ahead from the library's row. For counts (the flows) the day is a count: its intervals are the
    quantiles of a negative binomial with the point forecast as its mean (never below 0) and the variance the
    model's 95 % interval implies, or a Poisson count's where that is less (``count_quantiles``)."""
    mean, lo80, hi80, lo95, hi95 = (float(row[c]) for c in _columns(model))
    if not counts:
        return DayForecast(day, mean, lo80, hi80, lo95, hi95)
    mean = max(0.0, mean)
    q = count_quantiles(mean, (hi95 - lo95) / (2 * Z95), (0.1, 0.9, 0.025, 0.975))
    return DayForecast(day, mean, *q)


#: The standard normal's 97.5 % quantile: a 95 % interval's half-width in standard deviations.
Z95 = 1.959963984540054


def count_quantiles(mean: float, sd: float, levels: Sequence[float]) -> list[float]:
    """The quantiles of a day's count of mean ``mean`` and standard deviation ``sd``: a negative binomial, or a
    Poisson count where ``sd`` is below a Poisson count's. A day's sales vary at least as a Poisson count around
    their rate (the models' own intervals, fitted on a few weeks, were narrower than that on niche IPs), and a
    count's spread is skewed upward: the models' intervals, symmetric about the mean, left up to 3.7 % of ordinary
    days above the 95 % interval and 0.4 % below it, and more of the upward breakouts flagged on them were chance
    (``python -m bench forecast``, docs/benchmarks.md "Forecasts")."""
    from scipy.stats import nbinom, poisson

    rate = max(mean, 1e-9)
    var = sd * sd if math.isfinite(sd) else 0.0
    if var <= rate * (1 + 1e-9):
        return [float(poisson.ppf(level, rate)) for level in levels]
    p = rate / var
    return [float(nbinom.ppf(level, rate * rate / (var - rate), p)) for level in levels]


def without_bursts(values: Sequence[float]) -> list[float]:
    """The flows as fitted: each day but the last that is a burst (module docstring) at its expected value."""
    import statistics

    n = len(values)
    overall = statistics.median(values) if values else 0.0
    out = list(values)
    for t in range(n - 1):
        neighbours = [values[u] for u in range(max(0, t - 7), min(n, t + 8)) if u != t]
        weekday = [values[u] for u in range(t % WEEK, n, WEEK) if u != t]
        share = statistics.median(weekday) / overall if weekday and overall > 0 else 1.0
        expected = statistics.median(neighbours) * share if neighbours else values[t]
        if values[t] > expected * (1 + BURST_SHARE) + BURST_SIGMAS * max(expected, 1.0) ** 0.5:
            out[t] = expected
    return out
