"""The backtest's scores (lib/forecast/backtest.py) against their textbook definitions computed here: MASE with the
weekly seasonal naive scale (Hyndman and Koehler, 2006), coverage, the scaled pinball loss (M5), the seasonal naive
method; the cuts of a series at rolling origins."""

from __future__ import annotations

import random
from datetime import datetime

import pytest

from lib.forecast.backtest import Cut, backtest, cuts, score, seasonal_naive, summarize
from lib.forecast.values import HORIZON, DayForecast


def test_cuts_leave_the_history_asked_for_and_a_full_horizon():
    series = {"a": list(range(50)), "b": list(range(30))}
    got = cuts(series, [20, 28, 43, 44], min_history=28)
    assert [(c.key, c.origin) for c in got] == [("a", 28), ("a", 43)]
    assert got[0].history == tuple(range(28)) and got[0].actual == tuple(range(28, 35))


def test_the_scores_are_the_textbook_ones():
    rng = random.Random(2)
    history = tuple(float(rng.randint(0, 30)) for _ in range(35))
    actual = tuple(float(rng.randint(0, 30)) for _ in range(HORIZON))
    days = [DayForecast(datetime(2026, 1, 1), m, m - 3, m + 3, m - 6, m + 6)
            for m in (rng.uniform(5, 25) for _ in range(HORIZON))]
    s = score(Cut("x", 35, history, actual), days)
    assert s is not None

    # written out here from the definitions
    n, m = len(history), 7
    scale = sum(abs(history[t] - history[t - m]) for t in range(m, n)) / (n - m)
    naive = [history[n - m + h % m] for h in range(HORIZON)]
    mase = sum(abs(a - d.mean) for a, d in zip(actual, days)) / HORIZON / scale
    naive_mase = sum(abs(a - f) for a, f in zip(actual, naive)) / HORIZON / scale

    def loss(y, q_value, q):
        return max(q * (y - q_value), (q - 1) * (y - q_value))

    spl = sum(loss(a, v, q) for a, d in zip(actual, days)
              for q, v in ((0.025, d.lo95), (0.1, d.lo80), (0.5, d.mean), (0.9, d.hi80), (0.975, d.hi95))) \
        / (5 * HORIZON) / scale
    assert seasonal_naive(history) == naive
    assert (s.scale, s.mase, s.naive_mase, s.pinball) == pytest.approx((scale, mase, naive_mase, spl))
    assert s.held80 == sum(d.lo80 <= a <= d.hi80 for a, d in zip(actual, days))
    assert s.held95 == sum(d.lo95 <= a <= d.hi95 for a, d in zip(actual, days))

    total = summarize([s, s])
    assert total is not None and total.mase_ratio == pytest.approx(mase / naive_mase)
    assert total.coverage95 == s.held95 / HORIZON


def test_a_history_that_never_changed_week_to_week_is_not_scored():
    assert score(Cut("flat", 28, (4.0,) * 28, (4.0,) * HORIZON), [DayForecast(datetime(2026, 1, 1), 4, 4, 4, 4, 4)]
                 * HORIZON) is None


def test_the_models_beat_the_seasonal_naive_method_on_a_noisy_weekly_series():
    rng = random.Random(8)
    import numpy as np

    week = [20, 20, 20, 22, 26, 40, 44]
    np_rng = np.random.default_rng(rng.randint(0, 10**6))
    series = {i: [float(v) for v in np_rng.poisson([week[t % 7] for t in range(70)])] for i in range(20)}
    summary, scored = backtest(series, [49, 56, 63], min_history=28)
    assert summary is not None and summary.cuts == 60
    assert summary.mase_ratio < 0.8  # the naive method carries last week's noise; a fitted cycle does not
