"""The backtest's scores (lib/forecast/backtest.py) against their textbook definitions computed here: MASE with the
weekly seasonal naive scale (Hyndman and Koehler, 2006), coverage, the scaled pinball loss (M5), the seasonal naive
method; the cuts of a series at rolling origins; the coverage of a count's distribution with its steps smoothed out
by the randomized probability integral transform (Czado, Gneiting and Held, 2009)."""

from __future__ import annotations

import math
import random
from datetime import datetime

import pytest

from lib.forecast.backtest import Cut, backtest, cuts, score, seasonal_naive, smoothed, smoothed_held, summarize
from lib.forecast.fit import count_quantiles, law_cdf_many, mixture_quantiles
from lib.forecast.values import HORIZON, MEDIAN_PRICE, CountLaw, DayForecast


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


def pmf(law: CountLaw, x: int) -> float:
    """P(count = x) of ``law`` written out: a Poisson count, or a negative binomial of that mean and variance where
    the variance passes the mean, and with probability ``share`` the same with its mean ``ratio`` times as high."""
    def one(mean: float) -> float:
        var = law.sd * law.sd
        if var <= law.mean * (1 + 1e-9):
            return math.exp(-mean + x * math.log(mean) - math.lgamma(x + 1))
        r = law.mean * law.mean / (var - law.mean)  # the size is the ordinary day's, the mean the day's own
        p = r / (r + mean)
        return math.exp(math.lgamma(x + r) - math.lgamma(r) - math.lgamma(x + 1) + r * math.log(p)
                        + x * math.log(1 - p))
    return (1 - law.share) * one(law.mean) + law.share * one(law.mean * law.ratio)


def test_a_count_s_distribution_function_is_its_definition():
    laws = [CountLaw(0.3, 0.0), CountLaw(4.0, 1.0), CountLaw(12.0, 6.0), CountLaw(12.0, 6.0, 0.1, 2.5),
            CountLaw(3.0, 1.0, 0.2, 3.0)]
    for law in laws:
        xs = [-1, 0, 1, 3, 10, 25]
        want = [sum(pmf(law, k) for k in range(x + 1)) for x in xs]
        assert law_cdf_many([law] * len(xs), xs) == pytest.approx(want, abs=1e-9), law
    # the quantiles the intervals are drawn from are the least counts at which that function reaches each level
    for law in laws:
        levels = (0.025, 0.1, 0.9, 0.975)
        ends = (mixture_quantiles(law.mean, law.sd, law.share, law.ratio, levels) if law.share
                else count_quantiles(law.mean, law.sd, levels))
        for level, end in zip(levels, ends):
            assert law_cdf_many([law], [end])[0] >= level > law_cdf_many([law], [end - 1])[0]


def test_a_day_counts_as_held_by_the_share_of_its_step_in_the_central_range():
    # a count of mean 0.3 (Poisson): F(-1) = 0, F(0) = exp(-0.3) = 0.741, F(1) = 1.3 exp(-0.3) = 0.963
    f0, f1 = math.exp(-0.3), 1.3 * math.exp(-0.3)
    assert smoothed_held(0.0, f0, 0.8) == pytest.approx((f0 - 0.1) / f0)
    assert smoothed_held(f0, f1, 0.8) == pytest.approx((0.9 - f0) / (f1 - f0))
    assert smoothed_held(f1, 1.0, 0.8) == 0.0
    assert smoothed_held(0.3, 0.6, 0.8) == 1.0 and smoothed_held(0.3, 0.6, 0.95) == 1.0
    assert smoothed_held(0.95, 0.99, 0.95) == pytest.approx((0.975 - 0.95) / 0.04)
    # the interval [0, 1] of that count holds 96 % of its days; smoothed, any count's own days hold the level
    for law in (CountLaw(0.3, 0.0), CountLaw(7.0, 4.0, 0.1, 2.0)):
        cdf = [sum(pmf(law, k) for k in range(x + 1)) for x in range(80)]
        for level in (0.8, 0.95):
            held = sum(pmf(law, x) * smoothed_held(cdf[x - 1] if x else 0.0, cdf[x], level) for x in range(80))
            assert held == pytest.approx(level, abs=1e-9)


@pytest.mark.parametrize("law", [CountLaw(0.3, 0.0), CountLaw(1.5, 0.0), CountLaw(6.0, 4.0),
                                 CountLaw(2.0, 1.0, 0.1, 3.0)])
def test_smoothed_coverage_of_draws_from_the_law_is_its_level_where_the_intervals_hold_more(law):
    """Days drawn from the very distribution forecast: the intervals of a small count hold more than their level (a
    count cannot stop at 80 %), the smoothed coverage holds it within the draws' own noise."""
    rng = random.Random(5)
    cdf = [sum(pmf(law, k) for k in range(x + 1)) for x in range(200)]
    draws = [next(x for x in range(200) if cdf[x] >= u) for u in (rng.random() for _ in range(7 * 3000))]
    ends = (mixture_quantiles(law.mean, law.sd, law.share, law.ratio, (0.1, 0.9, 0.025, 0.975)) if law.share
            else count_quantiles(law.mean, law.sd, (0.1, 0.9, 0.025, 0.975)))
    day = DayForecast(datetime(2026, 1, 1), law.mean, *ends, law=law)
    held80 = smooth80 = smooth95 = 0.0
    for k in range(0, len(draws), HORIZON):
        week = draws[k:k + HORIZON]
        got = smoothed(week, [day] * HORIZON)
        assert got is not None
        smooth80, smooth95 = smooth80 + got[0], smooth95 + got[1]
        held80 += sum(ends[0] <= x <= ends[1] for x in week)
    n = len(draws)
    assert abs(smooth80 / n - 0.8) < 0.012 and abs(smooth95 / n - 0.95) < 0.006, (smooth80 / n, smooth95 / n)
    if law.mean < 2:
        assert held80 / n > 0.85  # the steps the smoothing takes out


def test_the_backtest_smooths_the_flows_coverage_and_not_the_price_median_s():
    rng = random.Random(4)
    week = [3, 3, 3, 4, 5, 8, 9]
    flows = {i: [float(sum(rng.random() < w / 10 for _ in range(10))) for w in week * 6] for i in range(4)}
    summary, scored = backtest(flows, [35], min_history=28)
    assert summary is not None and summary.smooth_coverage80 is not None and summary.smooth_coverage95 is not None
    assert summary.smooth_coverage80 == pytest.approx(sum(s.smooth80 for s in scored) / (HORIZON * len(scored)))
    assert 0 < summary.smooth_coverage80 < summary.smooth_coverage95 <= 1
    prices = {i: [900.0 + rng.uniform(-50, 50) for _ in range(42)] for i in range(4)}
    summary, _ = backtest(prices, [35], min_history=28, measure=MEDIAN_PRICE)
    assert summary is not None and summary.smooth_coverage80 is None and summary.smooth_coverage95 is None
    assert smoothed([1.0], [DayForecast(datetime(2026, 1, 1), 1, 0, 2, 0, 3)]) is None
