"""The daily summaries' sketches hold the bounds docs/operating/storage.md states, against exact
computations written here from the definitions of docs/concepts/measures.md (never lib.market.robust): a sold-price
quantile or trimmed mean within α (relative) of the exact one; a time-to-sell quantile between the bucket edges where
the exact curve's two tie orders reach it, the exact quantile inside them; merging is exact; a bad stored value is
refused."""

from __future__ import annotations

import math
import random

import pytest

from lib.market.intervals import km_steps_quantile_interval
from lib.market.summaries import (
    DURATION_ACCURACY,
    MILLIONTH,
    PRICE_ACCURACY,
    Sketch,
    SketchFormatError,
    decode_counts,
    encode_counts,
    km_quantile,
    km_steps,
    merged,
)

from .scripted import km
from .test_intervals import SIX_MP, SIX_MP_TABLE, assert_coverage, covered, km_interval_by_hand, simulated_listings


def exact_quantile(values: list[float], q: float) -> float:
    """docs/concepts/measures.md, definition 4: linear interpolation between the order statistics at q·(n−1)."""
    ordered = sorted(values)
    position = q * (len(ordered) - 1)
    low = int(math.floor(position))
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def exact_trimmed_mean(values: list[float]) -> float:
    """docs/concepts/measures.md, definition 5: ⌊0.1·n⌋ values dropped from each end."""
    ordered = sorted(values)
    k = math.floor(0.1 * len(ordered))
    kept = ordered[k:len(ordered) - k]
    return sum(kept) / len(kept)


def markets(seed: int) -> list[float]:
    """Sold prices as a market shows them: a few price points, a long tail, placeholder prices, repeats."""
    rng = random.Random(seed)
    n = rng.choice([5, 7, 40, 333, 2000])
    kind = seed % 3
    if kind == 0:
        return [float(rng.choice([300, 500, 800, 1200, 9000]) + rng.randrange(0, 100)) for _ in range(n)]
    if kind == 1:
        return [float(int(rng.lognormvariate(8, 1.5)) + 300) for _ in range(n)]
    return [float(rng.choice([300, 9_999_999, 4500, 4500, 4501])) for _ in range(n)]


@pytest.mark.parametrize("seed", range(30))
def test_price_quantiles_and_trimmed_mean_are_within_alpha(seed):
    prices = markets(seed)
    sketch = Sketch(PRICE_ACCURACY).update(prices)
    assert sketch.count == len(prices)
    worst = 0.0
    for q in (0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0):
        exact = exact_quantile(prices, q)
        got = sketch.quantile(q)
        assert got is not None
        worst = max(worst, abs(got - exact) / exact)
        assert abs(got - exact) <= PRICE_ACCURACY * exact * (1 + 1e-9), (q, got, exact)
    exact = exact_trimmed_mean(prices)
    got = sketch.trimmed_mean(0.1)
    assert got is not None and abs(got - exact) <= PRICE_ACCURACY * exact * (1 + 1e-9), (got, exact)
    assert worst > 0  # the values are not kept exactly: the bound is what holds them


@pytest.mark.parametrize("seed", range(10))
def test_merging_is_exact_and_the_stored_text_round_trips(seed):
    rng = random.Random(seed)
    parts = [[rng.uniform(0, 10 ** rng.randint(1, 7)) for _ in range(rng.randint(0, 300))] for _ in range(5)]
    whole = Sketch(DURATION_ACCURACY).update(v for p in parts for v in p)
    texts = [Sketch(DURATION_ACCURACY).update(p).encode() for p in parts]
    again = merged(DURATION_ACCURACY, texts)
    assert (again.counts, again.zeros) == (whole.counts, whole.zeros)
    assert again.count == sum(len(p) for p in parts)
    assert Sketch.decode(DURATION_ACCURACY, whole.encode()) == whole
    cuts = Sketch(PRICE_ACCURACY, MILLIONTH).update([0.2, 0.2, 0.05, 1e-9])
    assert cuts.zeros == 1 and cuts.quantile(0.5) == pytest.approx(0.125, rel=PRICE_ACCURACY)
    with pytest.raises(ValueError):
        Sketch(PRICE_ACCURACY).merge(cuts)  # another floor: another meaning of its buckets
    assert decode_counts(encode_counts({0: 3, 2: 1, 5: 0})) == {0: 3, 2: 1}


@pytest.mark.parametrize("text", ["3:x", "z", "1:2,,3:4", "abc"])
def test_a_corrupt_stored_sketch_is_refused(text):
    with pytest.raises(SketchFormatError):
        Sketch.decode(PRICE_ACCURACY, text)
    with pytest.raises(SketchFormatError):
        decode_counts(text)


def bucket(x: float, alpha: float) -> int | None:
    """docs/operating/storage.md: bucket k holds (γ^(k−1), γ^k], γ = (1+α)/(1−α); durations under a second: the zero
    bucket."""
    if x < 1.0:
        return None
    return math.ceil(math.log(x) / math.log1p(2 * alpha / (1 - alpha)))


def bracket(durations: list[tuple[float, bool]], q: float, alpha: float) -> tuple[float | None, float | None]:
    """Where the exact Kaplan–Meier quantile must lie (docs/operating/storage.md): the lower edge of the bucket where
    the curve of the bucketed durations, censorings first, reaches q, and the upper edge of the one where, sales first,
    it does."""
    gamma = (1 + alpha) / (1 - alpha)

    def edge(k: int | None, upper: bool) -> float:
        if k is None:
            return 1.0 if upper else 0.0
        return gamma ** k if upper else gamma ** (k - 1)

    counts: dict[int | None, list[int]] = {}
    for d, sold in durations:
        counts.setdefault(bucket(d, alpha), [0, 0])[0 if sold else 1] += 1

    def reached(sales_first: bool) -> int | None | str:
        at_risk, s = len(durations), 1.0
        for k in sorted(counts, key=lambda k: -1 if k is None else k):
            e, c = counts[k]
            if e:
                s *= 1 - e / (at_risk if sales_first else at_risk - c)
                if s <= 1 - q + 1e-12:
                    return k
            at_risk -= e + c
        return "never"
    low, high = reached(False), reached(True)
    return (None if low == "never" else edge(low, False),  # type: ignore[arg-type]
            None if high == "never" else edge(high, True))  # type: ignore[arg-type]


def listings(seed: int) -> list[tuple[float, bool]]:
    """(time to sell or censoring, sold) of a cohort: sales after hours to days, many censored, ties."""
    rng = random.Random(seed)
    out = []
    for _ in range(rng.choice([6, 30, 200, 1500])):
        d = rng.choice([0.0, 0.4, rng.expovariate(1 / 36_000), rng.expovariate(1 / 400_000), 3600.0])
        out.append((d, rng.random() < (0.3 if seed % 2 else 0.8)))
    return out


@pytest.mark.parametrize("seed", range(40))
def test_time_to_sell_quantiles_are_within_their_buckets(seed):
    durations = listings(seed)
    sold = Sketch(DURATION_ACCURACY).update(d for d, s in durations if s)
    censored = Sketch(DURATION_ACCURACY).update(d for d, s in durations if not s)
    curve = km(durations)
    for q in (0.25, 0.5, 0.75):
        exact = next((t for t, s in curve if s <= 1 - q + 1e-12), None)
        low, high = bracket(durations, q, DURATION_ACCURACY)
        got = km_quantile(sold, censored, q)
        for mine, theirs in ((got.lower, low), (got.upper, high)):
            assert (mine is None) == (theirs is None) and (mine is None or mine == pytest.approx(theirs))
        if exact is None:
            assert low is None or high is None  # the exact curve does not reach q: the bounds say it may not
            continue
        assert low is not None and low <= exact * (1 + 1e-12)
        if high is not None:
            assert exact <= high * (1 + 1e-12)
            assert got.estimate is not None and low <= got.estimate <= high
        if got.lower is not None and got.upper is not None and got.upper <= got.lower * (1 + 3 * DURATION_ACCURACY):
            # one bucket: the estimate is its representative, within α of the exact quantile
            # (the zero bucket holds [0, 1 s) as 0)
            assert got.estimate is not None and abs(got.estimate - exact) <= max(DURATION_ACCURACY * exact, 1.0)


# ---- the 95 % interval of a time to sell read from the summaries (docs/concepts/measures.md, definition 8) ----

WEEK = 7 * 24 * 3600.0


def represented(durations: list[tuple[float, bool]], alpha: float) -> list[tuple[float, bool]]:
    """Each duration as the summaries hold it (docs/operating/storage.md): its bucket's representative 2γ^k/(1+γ),
    0 for the zero bucket."""
    gamma = (1 + alpha) / (1 - alpha)

    def value(d: float) -> float:
        k = bucket(d, alpha)
        return 0.0 if k is None else 2 * gamma ** k / (1 + gamma)
    return [(value(d), sold) for d, sold in durations]


def summary_interval(durations: list[tuple[float, bool]], q: float) -> tuple[float, float | None] | None:
    sold = Sketch(DURATION_ACCURACY).update(d for d, s in durations if s)
    censored = Sketch(DURATION_ACCURACY).update(d for d, s in durations if not s)
    return km_steps_quantile_interval(km_steps(sold, censored), q)


def test_summarized_six_mp_keeps_the_textbooks_risk_sets_and_intervals():
    """The 6-MP group's weeks, summarized as seconds: weeks 1 % or more apart fall in different buckets, so the
    steps are Klein & Moeschberger's (at risk, relapses, Ŝ), at the weeks within α, and the intervals the
    textbook's: median (13 weeks, unbounded), first quartile (6, 22) weeks."""
    durations = [(t * WEEK, observed) for t, observed in SIX_MP]
    sold = Sketch(DURATION_ACCURACY).update(d for d, s in durations if s)
    censored = Sketch(DURATION_ACCURACY).update(d for d, s in durations if not s)
    steps = km_steps(sold, censored)
    assert [(s.at_risk, s.events, round(s.survival, 3)) for s in steps] == [
        (n, d, survival) for _, n, d, survival, _ in SIX_MP_TABLE]
    for step, (t, *_) in zip(steps, SIX_MP_TABLE):
        assert abs(step.time - t * WEEK) <= DURATION_ACCURACY * t * WEEK
    median = summary_interval(durations, 0.5)
    assert median is not None and median[1] is None
    assert abs(median[0] - 13 * WEEK) <= DURATION_ACCURACY * 13 * WEEK
    quartile = summary_interval(durations, 0.25)
    assert quartile is not None and quartile[1] is not None
    assert abs(quartile[0] - 6 * WEEK) <= DURATION_ACCURACY * 6 * WEEK
    assert abs(quartile[1] - 22 * WEEK) <= DURATION_ACCURACY * 22 * WEEK


@pytest.mark.parametrize("seed", range(40))
def test_summary_intervals_are_greenwoods_over_the_bucketed_durations(seed):
    """The definition, brute force (tests/market/test_intervals.py's ``km_interval_by_hand``), over the durations
    replaced by their buckets' representatives: ties of a bucket are sales first, as there."""
    durations = listings(seed)
    by_hand_of = represented(durations, DURATION_ACCURACY)
    for q in (0.25, 0.5, 0.75):
        got, expected = summary_interval(durations, q), km_interval_by_hand(by_hand_of, q)
        assert (got is None) == (expected is None), (q, got, expected)
        if got is None or expected is None:
            continue
        assert got[0] == pytest.approx(expected[0], rel=1e-9)
        assert (got[1] is None) == (expected[1] is None) and (got[1] is None or got[1] == pytest.approx(expected[1],
                                                                                                         rel=1e-9))


@pytest.mark.parametrize("q,n", [(0.5, 40), (0.5, 120), (0.25, 40), (0.75, 120)])
def test_summary_interval_coverage_on_simulated_listings(q, n):
    """Listings as tests/market/test_intervals.py simulates them (Weibull times to sell, about a third censored),
    summarized into sketches: the 95 % interval read from them holds the true quantile in 93–97 % of 2,000
    draws (a missing interval is a miss)."""
    rng = random.Random(int(q * 100) + n + 7)
    shape, median_hours = 0.8, 48.0
    truth = median_hours / math.log(2) ** (1 / shape) * (-math.log(1 - q)) ** (1 / shape) * 3600.0
    draws = 2000
    hits = sum(covered(summary_interval([(h * 3600.0, s) for h, s in simulated_listings(rng, n, median_hours, shape)],
                                        q), truth)
               for _ in range(draws))
    assert_coverage(hits, draws)
