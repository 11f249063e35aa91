"""The models fitted on series of known structure (docs/concepts/forecasts.md, "The models"): a weekly cycle, a trend,
an intermittent series, a burst, and the intervals' coverage of simulated futures, each tail apart."""

from __future__ import annotations

from datetime import datetime, timedelta

import numpy as np
import pytest

from lib.forecast.fit import burst_days, burst_risk, count_quantiles, forecast, mixture_quantiles
from lib.forecast.values import HORIZON, OUTFLOW, History, Segment

START = datetime(2026, 3, 2)  # a Monday


def history(values, ip_id: int = 1) -> History:
    return History(ip_id, OUTFLOW, tuple(START + timedelta(days=i) for i in range(len(values))),
                   tuple(float(v) for v in values))


def test_a_weekly_cycle_is_carried_into_the_next_week():
    week = np.array([10, 10, 10, 10, 12, 30, 30])  # weekends sell three times as much
    rng = np.random.default_rng(3)
    values = rng.poisson(np.tile(week, 8))
    (f,) = forecast([history(values)], 0.0)
    assert [d.day for d in f.days] == [START + timedelta(days=56 + k) for k in range(HORIZON)]
    means = np.array([d.mean for d in f.days])
    # the days ahead are the next Monday to Sunday: the weekend forecast is the high one, each day near its mean
    assert means[5:].min() > 2 * means[:4].max()
    assert np.all(np.abs(means - week) <= 0.25 * week + 2)


def test_a_trend_is_carried_on():
    values = [20 + 2 * t for t in range(42)]  # two more a day, no noise
    (f,) = forecast([history(values)], 0.0)
    assert [round(d.mean) for d in f.days] == [20 + 2 * t for t in range(42, 42 + HORIZON)]


def test_a_segment_is_fitted_without_the_trended_forms():
    """A segment's series weighs the forms without a trend only (lib/forecast/fit.py): the same trend is not
    carried on, its level is followed instead; the IP's is carried on, both in one call."""
    values = [20 + 2 * t for t in range(42)]
    segment = History(1, OUTFLOW, history(values).days, history(values).values, Segment("goods", "plush"))
    own, of_segment = sorted(forecast([history(values), segment], 0.0), key=lambda f: f.segment is not None)
    assert own.segment is None and of_segment.segment == Segment("goods", "plush")
    assert [round(d.mean) for d in own.days] == [20 + 2 * t for t in range(42, 42 + HORIZON)]
    means = [d.mean for d in of_segment.days]
    assert max(means) - min(means) < 2 and 95 <= means[0] <= 104  # no climb: near its last values' level


def test_an_intermittent_series_is_forecast_at_its_rate_and_never_below_zero():
    rng = np.random.default_rng(5)
    values = rng.poisson(0.3, 60)  # a niche IP: a sale every three days
    (f,) = forecast([history(values)], 0.0)
    for d in f.days:
        assert 0 <= d.lo95 <= d.lo80 <= d.mean <= d.hi80 <= d.hi95
        assert 0.05 <= d.mean <= 0.8
        assert d.hi95 >= 1  # a sale on a day is within the interval


def test_a_one_day_burst_does_not_carry_the_week_ahead():
    rng = np.random.default_rng(7)
    values = rng.poisson(10, 42).astype(float)
    values[34] = 60  # an announcement a week ago
    (f,) = forecast([history(values)], 0.0)
    assert all(d.mean < 16 for d in f.days)


@pytest.mark.slow  # fits hundreds of series
def test_the_intervals_hold_simulated_futures_about_as_often_as_they_claim():
    """200 IPs of 20-100 sales a day with a weekly cycle and a gentle trend, 8 weeks of history: the share of the
    next 7 days' true counts inside each interval is near its level."""
    rng = np.random.default_rng(11)
    week = np.array([1.0, 0.9, 0.85, 0.9, 1.0, 1.3, 1.4])
    histories, futures = [], []
    for i in range(200):
        base, trend = rng.uniform(20, 100), rng.normal(0, 0.005)
        rate = base * np.tile(week, 9) * np.exp(trend * np.arange(63))
        counts = rng.poisson(rate)
        histories.append(history(counts[:56], ip_id=i))
        futures.append(counts[56:])
    held = {80: 0, 95: 0}
    for f, future in zip(forecast(histories, 0.0), futures, strict=True):
        for d, truth in zip(f.days, future, strict=True):
            held[80] += d.lo80 <= truth <= d.hi80
            held[95] += d.lo95 <= truth <= d.hi95
    n = 200 * HORIZON
    assert 0.74 <= held[80] / n <= 0.86, held[80] / n
    assert 0.91 <= held[95] / n <= 0.98, held[95] / n


def test_bursts_are_fitted_at_their_expected_value_but_the_last_day_and_a_new_level_are_not():
    from lib.forecast.fit import without_bursts

    values = [10.0] * 35
    for day in (20, 33, 34):
        burst = list(values)
        burst[day] = 60.0
        assert without_bursts(burst)[day] == (60.0 if day == 34 else 10.0)
    shifted = [10.0] * 21 + [30.0] * 14  # a franchise that took off three weeks in: its new level stays
    assert without_bursts(shifted)[-10:] == [30.0] * 10
    noisy = [10.0 + (t * 7) % 5 for t in range(35)]
    assert without_bursts(noisy) == noisy  # ordinary days are left alone


def test_a_days_count_has_the_quantiles_of_its_definition():
    """At most a Poisson count's spread, a Poisson count's quantiles; more, a gamma-Poisson mixture's of that mean and
    variance (a negative binomial), drawn here: each quantile q the least count with P(X <= q) >= its level."""
    rng = np.random.default_rng(3)
    levels = (0.025, 0.1, 0.9, 0.975)

    def drawn_quantiles(draws):
        return [float(np.sort(draws)[int(np.ceil(level * len(draws))) - 1]) for level in levels]

    assert count_quantiles(20.0, 3.0, levels) == drawn_quantiles(rng.poisson(20.0, 400_000))  # sd below √20
    assert count_quantiles(0.0, 0.0, levels) == [0.0] * 4
    mean, sd = 20.0, 9.0
    shape = mean * mean / (sd * sd - mean)
    mixture = rng.poisson(rng.gamma(shape, mean / shape, 400_000))
    lo95, lo80, hi80, hi95 = count_quantiles(mean, sd, levels)
    want = drawn_quantiles(mixture)
    assert all(abs(got - w) <= 1 for got, w in zip((lo95, lo80, hi80, hi95), want, strict=True)), want
    assert hi95 - mean > mean - lo95  # skewed upward, as counts are


def test_a_day_that_may_burst_has_the_quantiles_of_its_mixture():
    """With a chance s of a burst of ratio r, a day's count is the ordinary one (a Poisson count, or a negative
    binomial of that mean and variance) with probability 1 - s, and one of r times its mean (the same size) with
    probability s: drawn here, each quantile the least count with P(X <= q) >= its level."""
    rng = np.random.default_rng(5)
    levels = (0.025, 0.1, 0.9, 0.975)

    def drawn_quantiles(draws):
        return [float(np.sort(draws)[int(np.ceil(level * len(draws))) - 1]) for level in levels]

    burst = rng.random(400_000) < 0.08
    poisson = rng.poisson(np.where(burst, 20.0 * 3, 20.0))
    got = mixture_quantiles(20.0, 3.0, 0.08, 3.0, levels)
    assert all(abs(g - w) <= 1 for g, w in zip(got, drawn_quantiles(poisson), strict=True)), got
    mean, sd = 20.0, 9.0
    shape = mean * mean / (sd * sd - mean)
    gamma = rng.poisson(rng.gamma(shape, np.where(burst, 3 * mean, mean) / shape))
    got = mixture_quantiles(mean, sd, 0.08, 3.0, levels)
    assert all(abs(g - w) <= 1 for g, w in zip(got, drawn_quantiles(gamma), strict=True)), got
    assert mixture_quantiles(mean, sd, 0.0, 1.0, levels) == count_quantiles(mean, sd, levels)


def test_a_historys_burst_risk_is_the_share_and_size_of_its_bursts():
    values = [10.0] * 36
    values[10], values[20] = 40.0, 30.0  # two bursts, 4 and 3 times their expected 10; the last day is not checked
    assert [t for t, _ in burst_days(values)] == [10, 20]
    assert burst_risk(values, burst_days(values)) == (2 / 35, 3.5)
    assert burst_risk([10.0] * 36, []) == (0.0, 1.0)


@pytest.mark.slow  # fits hundreds of series
def test_the_intervals_hold_futures_with_bursts_about_as_often_as_they_claim():
    """120 IPs of 20-100 sales a day with a weekly cycle whose days burst (three times the flow) with a chance of 8 %,
    history and future alike: the intervals, holding the history's bursts, are near their level (92.7 % held at
    95 %, 4.2 % of the days above it; the ordinary day's interval alone held 86.7 %, 10.5 % above), and the ordinary
    day's interval is kept beside them for breakouts."""
    rng = np.random.default_rng(17)
    week = np.array([1.0, 0.9, 0.85, 0.9, 1.0, 1.3, 1.4])
    histories, futures = [], []
    for i in range(120):
        rate = rng.uniform(20, 100) * np.tile(week, 9) * np.where(rng.random(63) < 0.08, 3.0, 1.0)
        counts = rng.poisson(rate)
        histories.append(history(counts[:56], ip_id=i))
        futures.append(counts[56:])
    held = {80: 0, 95: 0}
    above = 0
    for f, future in zip(forecast(histories, 0.0), futures, strict=True):
        for d, truth in zip(f.days, future, strict=True):
            held[80] += d.lo80 <= truth <= d.hi80
            held[95] += d.lo95 <= truth <= d.hi95
            above += truth > d.hi95
            lo, hi = d.ordinary95
            assert d.lo95 >= lo and d.hi95 >= hi
    n = 120 * HORIZON
    assert 0.77 <= held[80] / n <= 0.86, held[80] / n
    assert 0.92 <= held[95] / n <= 0.98 and above / n <= 0.045, (held[95] / n, above / n)


@pytest.mark.slow  # fits hundreds of series
def test_the_upper_tail_of_an_overdispersed_count_holds_no_more_than_its_share():
    """200 IPs whose daily sales vary more than a Poisson count (a gamma-Poisson mixture around a weekly cycle): the
    95 % interval leaves 1-4.2 % of the next week's days above it (the symmetric intervals left more) and 1-5 %
    below."""
    rng = np.random.default_rng(13)
    week = np.array([1.0, 0.9, 0.85, 0.9, 1.0, 1.3, 1.4])
    histories, futures = [], []
    for i in range(200):
        rate = rng.uniform(15, 80) * np.tile(week, 9)
        counts = rng.poisson(rng.gamma(30.0, rate / 30.0))  # a day's rate varies by a fifth around the cycle
        histories.append(history(counts[:56], ip_id=i))
        futures.append(counts[56:])
    above = below = 0
    for f, future in zip(forecast(histories, 0.0), futures, strict=True):
        for d, truth in zip(f.days, future, strict=True):
            above += truth > d.hi95
            below += truth < d.lo95
    n = 200 * HORIZON
    # the models' own intervals, symmetric about the mean and widened to a Poisson count's, left 4.6 % above and
    # 2.7 % below (4.9 % and 2.9 % with the next seed); as a count's, 2.9 % and 3.8 % (3.1 % and 3.9 %): the model's
    # variance, fitted with the bursts set aside, is a little short of a rate that varies this much
    assert 0.01 <= above / n <= 0.042 and 0.01 <= below / n <= 0.05, (above / n, below / n)
