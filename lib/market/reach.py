"""Inflow and outflow where the pages cannot see them (docs/concepts/measures.md, "Estimates").

Both searches list newest-created first, and a crawl reads a fixed number of pages. So a crawl sees the listings
created back to its *reach*, the oldest ``created`` on the last page it read (None: the search ended on its pages,
so it saw everything):

- inflow: the listings created between the previous crawl and the on-sale reach are on no page (those still on
  sale; the ones already sold show on the sold pages). They are estimated from the rate of the listings seen in
  the visible span, reach to crawl, over the unseen span.
- outflow: a sale between the previous crawl and this one is on the sold pages only if its listing was created
  after the sold reach, at an age at sale below (sale time − reach). The sales seen are divided by the share of
  sales at those ages, from the IP's inflow of the hours before (a sale of age x needs a listing created x
  before) and a reference distribution of ages at sale observed where sold pages did reach back.

Each comes with a 95 % normal interval from the counts' Poisson variance and, for outflow, the reference share's
own variance (its sampling and the spread between IPs). Where the pages covered every crawl of the window the
measured count stands and no estimate is made.
"""

from __future__ import annotations

import bisect
import functools
import math
import statistics
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from lib.market import intervals
from lib.market.values import Estimate

HOUR = 3600.0
#: The ages at sale (hours) the share is summed over: a listing older than this is out of the search.
MAX_AGE_HOURS = 192


@dataclass(frozen=True, slots=True)
class CrawlReach:
    """How far one crawl's pages reached back, by creation time.

    Parameters:
      at: the crawl's time; previous: the IP's previous crawl (None: the first).
      on_sale, sold: the oldest ``created`` on the last page each search read, when its pages were all read and
        its results did not end on them; None: that search was read to its end (everything was seen). ``sold``
        is the furthest back this crawl's or any later crawl's sold pages read (``furthest_later``).
      newest: the newest ``created`` on the on-sale pages: the visible span ends there, not at the crawl, as a
        listing reaches the search a minute after it is listed (docs/concepts/simulator.md).
    """

    at: float
    previous: float | None
    on_sale: float | None
    sold: float | None
    newest: float | None = None


def furthest_later(reaches: Sequence[float | None]) -> list[float | None]:
    """For each crawl's sold reach (in time order; None: read to its end), the furthest back its pages or any
    later crawl's read. The sold search is a lasting record: a sale is on every later read that reaches back to its
    listing's creation, so a deep read every few crawls shows the sales of the crawls between
    (``lib.market.page_plans.sold_plan``)."""
    out: list[float | None] = []
    furthest: float | None = math.inf
    for far in reversed(reaches):
        if furthest is not None:
            furthest = None if far is None else min(furthest, far)
        out.append(furthest)
    return out[::-1]


@dataclass(frozen=True, slots=True)
class AgeReference:
    """The distribution of ages at sale (seconds) where the sold pages reached back over a listing's whole life,
    pooled over IPs, with the spread between them.

    Parameters:
      groups: each reference IP's ages at sale, sorted.
      priced: each reference IP's fixed-price sales as (age at sale, price), by age (the price estimate's).
      pace: the variance between IPs of their mean log age at sale (``pace_variance``).
    """

    groups: tuple[tuple[float, ...], ...]
    priced: tuple[tuple[tuple[float, float], ...], ...] = ()
    pace: float = 0.0

    @classmethod
    def of(cls, groups: Sequence[Sequence[float]],
           priced: Sequence[Sequence[tuple[float, float]]] = ()) -> AgeReference:
        kept = tuple(tuple(sorted(g)) for g in groups if g)
        return cls(kept, tuple(tuple(sorted(g)) for g in priced if g), pace_variance(kept))

    @property
    def sales(self) -> int:
        return sum(len(g) for g in self.groups)

    def share(self, age: float) -> tuple[float, float]:
        """The share of sales at an age ≤ ``age`` (seconds), and its variance as one more IP's: the pooled
        estimate's binomial variance plus the spread between IPs beyond their sampling, raised by ``predictive``:
        that spread is measured on few IPs. The spread is the larger of two measures of it: the shares' own at
        this age (a method-of-moments between-group variance), and the one the IPs' paces imply (``pace``, times
        the squared slope of the share against the log age: an IP whose goods sell faster has its ages shifted).
        The first is noisy where few sales fall below the age, and a handful of small reference IPs often
        measures it as none; the second is one number measured on every sale."""
        total = self.sales
        if total == 0:
            return 0.0, 0.25
        counts = [bisect.bisect_right(g, age) for g in self.groups]
        pooled = sum(counts) / total
        sampling = pooled * (1 - pooled)
        spread = sum((c / len(g) - pooled) ** 2 * len(g) for c, g in zip(counts, self.groups, strict=True)) / total
        between = max(0.0, spread - len(self.groups) * sampling / total)
        if self.pace > 0:
            low = sum(bisect.bisect_right(g, age * math.exp(-PACE_STEP)) for g in self.groups) / total
            high = sum(bisect.bisect_right(g, age * math.exp(PACE_STEP)) for g in self.groups) / total
            between = max(between, ((high - low) / (2 * PACE_STEP)) ** 2 * self.pace)
        return pooled, (sampling / total + between) * self.predictive

    @property
    def predictive(self) -> float:
        """How much a variance measured on the spread between the reference IPs is raised to be one more IP's
        (a prediction interval): (t/z)², t the Student quantile of as many degrees of freedom as reference IPs
        less one (at least one): with few reference IPs their spread is itself uncertain (×42 with one or two,
        ×1.7 with six, ×1.1 with thirty)."""
        return _prediction_factor(len(self.groups))


#: The step (in log age) of the pooled distribution's slope, dF/d(log age).
PACE_STEP = 0.25


def pace_variance(groups: Sequence[Sequence[float]]) -> float:
    """The variance between IPs of their pace, their mean log age at sale, beyond what their own sampling explains:
    the method-of-moments estimate of a one-way random-effects model with groups of unequal sizes,
    (Q − (k − 1)·s²) / (N − Σn²/N), Q the groups' weighted squared deviations from the grand mean, s² the pooled
    variance within them (0 when negative). An IP whose goods sell faster or slower than the reference's has its
    whole age distribution shifted. Ages under a minute count as a minute (the search shows a change about then)."""
    logs = [[math.log(max(age, 60.0)) for age in g] for g in groups if g]
    if len(logs) < 2:
        return 0.0
    sizes = [len(g) for g in logs]
    total = sum(sizes)
    means = [sum(g) / len(g) for g in logs]
    grand = sum(m * n for m, n in zip(means, sizes, strict=True)) / total
    within = sum((v - m) ** 2 for g, m in zip(logs, means, strict=True) for v in g) / max(1, total - len(logs))
    q = sum(n * (m - grand) ** 2 for m, n in zip(means, sizes, strict=True))
    scale = total - sum(n * n for n in sizes) / total
    return max(0.0, (q - (len(logs) - 1) * within) / scale) if scale > 0 else 0.0


@functools.lru_cache(maxsize=64)  # share() asks it once per hour of a listing's life, for every estimate
def _prediction_factor(references: int) -> float:
    level = intervals.LEVEL
    return (intervals.t_of(level, max(1, references - 1)) / intervals.z_of(level)) ** 2


#: A reference IP gives a price shift with at least this many priced sales on each side of the visible age.
MIN_SHIFT_SALES = 10


def price_shift(reference: AgeReference, visible_age: float) -> tuple[float, float] | None:
    """How much higher the sold prices of the sales at an age at or above ``visible_age`` (seconds) run than those
    below it, as the log ratio of their medians, and its variance as one IP's, from the reference IPs: each IP's
    own ratio (so their price levels cancel), their mean weighted by sales, and a variance of the spread between
    them beyond their sampling (method of moments) plus the mean's own. A ratio's sampling variance is
    (π/2)·s²·(1/k + 1/m) for k and m sales on each side of log-price variance s². None without a reference IP
    with ``MIN_SHIFT_SALES`` on each side."""
    ratios: list[tuple[float, float, int]] = []  # (ratio, its sampling variance, sales)
    for sales in reference.priced:
        logs = [(age, math.log(price)) for age, price in sales if price > 0]
        k = bisect.bisect_left([age for age, _ in logs], visible_age)
        if k < MIN_SHIFT_SALES or len(logs) - k < MIN_SHIFT_SALES:
            continue
        young, old = [v for _, v in logs[:k]], [v for _, v in logs[k:]]
        s2 = statistics.pvariance([v for _, v in logs])
        ratios.append((statistics.median(old) - statistics.median(young),
                       math.pi / 2 * s2 * (1 / len(young) + 1 / len(old)), len(logs)))
    if not ratios:
        return None
    total = sum(n for _, _, n in ratios)
    mean = sum(r * n for r, _, n in ratios) / total
    sampling = sum(v * n for _, v, n in ratios) / total
    if len(ratios) == 1:
        return mean, 2 * sampling  # no spread between IPs to measure: the one IP's sampling, twice
    spread = sum((r - mean) ** 2 * n for r, _, n in ratios) / total * len(ratios) / (len(ratios) - 1)
    return mean, max(spread - sampling, 0.0) + sampling / len(ratios)


def mixture_quantile(seen: Sequence[float], unseen_share: float, shift: float, q: float) -> float | None:
    """The ``q`` quantile of all sales' prices when the sales seen (prices ``seen``) are a share 1 − u of them
    and the others, a share u, are priced as the seen ones raised by the log ratio ``shift``: the x where
    (1 − u)·G(x) + u·G(x·e^−shift) = q, G the seen prices' distribution (by bisection on the log scale)."""
    if not seen:
        return None
    ordered = sorted(math.log(p) for p in seen if p > 0)
    if not ordered:
        return None
    u = min(max(unseen_share, 0.0), 1.0)

    def share_below(x: float) -> float:
        def g(v: float) -> float:
            return bisect.bisect_right(ordered, v) / len(ordered)
        return (1 - u) * g(x) + u * g(x - shift)

    low, high = ordered[0] + min(shift, 0.0), ordered[-1] + max(shift, 0.0)
    for _ in range(60):
        middle = (low + high) / 2
        if share_below(middle) >= q:
            high = middle
        else:
            low = middle
    return math.exp(high)


def unseen_spans(crawls: Sequence[CrawlReach]) -> Iterator[tuple[CrawlReach, float, float]]:
    """Each crawl whose on-sale pages did not reach back to the crawl before, with its unseen span (begin, reach):
    the listings created in it are on none of the two crawls' on-sale pages. The span begins at the previous
    crawl's newest listing, not at its time: the ones listed in the minute before that crawl were not in its
    search yet, and are older than this crawl's reach."""
    newest = {c.at: c.newest for c in crawls}
    for c in crawls:
        if c.previous is None or c.on_sale is None:
            continue
        before = newest.get(c.previous)
        begin = c.previous if before is None else min(before, c.previous)
        if c.on_sale > begin:
            yield c, begin, c.on_sale


def inflow_estimate(created: Sequence[float], crawls: Sequence[CrawlReach], start: float,
                    end: float) -> Estimate | None:
    """The inflow of [start, end) where some crawl's on-sale pages did not reach back to the previous crawl;
    None where they all did (the count ``created``, the creation times seen, stands).

    Each unseen span (previous crawl → reach) gets the rate of its visible span (reach → newest) times its length,
    in place of the listings seen in it (the sold ones); the variance of that part is λ·g·(g/v + 1) (the rate's
    Poisson estimate over v, the span's own Poisson count over g), with λ from the visible count (at least 1)."""
    times = sorted(created)

    def count(low: float, high: float) -> int:
        return bisect.bisect_left(times, high) - bisect.bisect_left(times, low)

    observed = count(start, end)
    added, variance, gaps = 0.0, 0.0, 0
    for c, begin, reach in unseen_spans(crawls):
        low, high = max(begin, start), min(reach, end)
        if high <= low:
            continue
        last = c.newest if c.newest is not None else c.at
        visible = last - reach
        if visible <= 0:
            continue
        # the listings strictly after the oldest one, over the span from it: the spacing of a Poisson process
        seen = count(reach, last + 1e-6) - 1
        rate = max(seen, 0) / visible
        gap = high - low
        added += rate * gap - count(low, high)
        variance += max(seen, 1) / visible * gap * (gap / visible + 1)
        gaps += 1
    if not gaps:
        return None
    value = observed + max(added, 0.0)
    return _interval(value, variance, observed, observed)


#: An hour whose crawls' on-sale pages saw less than this share of it is not scaled up from what they saw (too
#: few listings to scale); it counts as the mean of the hours around it.
MIN_SEEN_SHARE = 0.1


def filled_inflow(inflow: Mapping[int, float], crawls: Sequence[CrawlReach]) -> dict[int, float]:
    """The IP's listings created by hour (``int(t // 3600)``), each hour's count scaled up by the share of it that
    the crawls' on-sale pages did not reach back to (the unseen spans ``inflow_estimate`` fills): a busy IP's
    evening hours are counted short, and the outflow estimate weighs ages at sale by them. An hour seen less than
    ``MIN_SEEN_SHARE`` counts as the mean of the other hours within 12 hours of it."""
    unseen: dict[int, float] = defaultdict(float)
    for _, low, high in unseen_spans(crawls):
        while low < high:
            hour = int(low // HOUR)
            edge = min(high, (hour + 1) * HOUR)
            unseen[hour] += edge - low
            low = edge
    filled = {hour: count for hour, count in inflow.items()}
    blind: set[int] = set()
    for hour, gap in unseen.items():
        seen = 1 - min(gap, HOUR) / HOUR
        if seen < MIN_SEEN_SHARE:
            blind.add(hour)
        elif hour in filled:
            filled[hour] = filled[hour] / seen
    for hour in sorted(blind):
        around = [filled[h] for h in range(hour - 12, hour + 13) if h in filled and h not in blind]
        if around:
            filled[hour] = sum(around) / len(around)
    return filled


def outflow_estimate(sales: Sequence[float], crawls: Sequence[CrawlReach], inflow: Mapping[int, float],
                     reference: AgeReference, start: float, end: float) -> Estimate | None:
    """The outflow of [start, end) where some crawl's sold pages did not reach back over a listing's life; None
    where they all did (the sales seen, ``sales``, stand) or no reference exists.

    ``inflow``: the IP's listings created by hour (``int(t // 3600)``; an hour missing counts as the mean of those
    given). For the sales between the previous crawl and a crawl with sold reach s, at their middle t, the share
    seen is p = Σ_x λ(t − x)·ΔF(x) over ages x ≤ t − s against the same sum over every age (the reference's F);
    the sales seen are divided by p. Its variance: o·(1 − p)/p² per crawl, plus (Σ o·sd(p)/p²)², the shares'
    errors taken as one (they come from one reference)."""
    if reference.sales == 0:
        return None
    times = sorted(sales)

    def count(low: float, high: float) -> int:
        return bisect.bisect_right(times, high) - bisect.bisect_right(times, low)

    mean_inflow = sum(inflow.values()) / len(inflow) if inflow else 1.0
    steps = [reference.share(x * HOUR) for x in range(MAX_AGE_HOURS + 1)]
    observed = count(start - 1e-9, end - 1e-9)  # sales in [start, end)
    estimated, poisson, shared, crawled = 0.0, 0.0, 0.0, 0
    seen_in_crawls = 0
    for c in crawls:
        if c.previous is None or c.sold is None:
            continue
        low, high = max(c.previous, start), min(c.at, end)
        if high <= low:
            continue
        middle = (low + high) / 2
        visible_age = middle - c.sold
        if visible_age >= MAX_AGE_HOURS * HOUR:
            continue
        p, var_p = _visible_share(middle, visible_age, inflow, mean_inflow, steps)
        o = count(low - 1e-9, high - 1e-9)
        seen_in_crawls += o
        if p <= 0:
            p, var_p = 1.0 / (o + 1), 0.25
        estimated += o / p
        poisson += max(o, 1) * (1 - p) / p ** 2
        shared += max(o, 1) * math.sqrt(var_p) / p ** 2
        crawled += 1
    if not crawled:
        return None
    value = observed - seen_in_crawls + estimated
    return _interval(value, poisson + shared ** 2, observed, observed)


def _visible_share(t: float, visible_age: float, inflow: Mapping[int, float], mean_inflow: float,
                   steps: Sequence[tuple[float, float]]) -> tuple[float, float]:
    """The share of sales at ``t`` of age ≤ ``visible_age``, weighting the reference's age distribution by the
    IP's inflow of the hours the listings were created in, and its variance (the reference's, scaled alike)."""
    hour = int(t // HOUR)
    seen = total = 0.0
    for x in range(MAX_AGE_HOURS):
        (f_low, _), (f_high, _) = steps[x], steps[x + 1]
        mass = f_high - f_low
        if mass <= 0:
            continue
        weight = inflow.get(hour - x, mean_inflow)
        total += weight * mass
        edge = x * HOUR
        if edge + HOUR <= visible_age:
            seen += weight * mass
        elif edge < visible_age:
            seen += weight * mass * (visible_age - edge) / HOUR
    if total <= 0:
        return 0.0, 0.25
    p = seen / total
    f, var_f = steps[min(MAX_AGE_HOURS, int(visible_age // HOUR))]
    # the reference's variance at the visible age, carried to the weighted share in proportion
    var_seen = var_f * (p / f) ** 2 if f > 0 else 0.25
    return p, var_seen


def _interval(value: float, variance: float, low_floor: float, n: int) -> Estimate:
    half = intervals.z_of(intervals.LEVEL) * math.sqrt(max(variance, 0.0))
    return Estimate(round(value, 1), n, interval=(round(max(low_floor, value - half), 1), round(value + half, 1)))
