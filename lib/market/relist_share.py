"""The shops' relists that inflow still counts as new goods, estimated from a random sample of them
(docs/concepts/measures.md, "Estimates").

A busy IP's shops list copies of their goods faster than the crawls' item checks can decide which of them relist an
earlier listing (``lib.market.relists``): those stay undecided, and inflow counts them as new goods. Each undecided
listing is drawn into the IP's sample of checks with a chance π known when it is stored (``relists.sample_share``,
``relists.drawn``: a hash of its id, unrelated to whether it relists), and the drawn ones are checked first.

Of the N listings created in a window that were ever undecided, D were decided relists (out of the inflow already)
and U are still undecided. The drawn ones decided, by a check or a read back, estimate the share of relists among
all N: p̂ = Σ y/π ÷ Σ 1/π over them (a Hájek ratio; y = 1 for a relist, 0 for other goods). The relists still counted
as new are A = N·p̂ − D, kept between 0 and U. The checks take the oldest drawn listings first, so the drawn ones not
decided yet are the newest; but a read back may decide some of those, and which it decides depends on whether they
relist. So the sample is the drawn listings of the hours (of creation) whose drawn listings are all decided, and
those hours' share ρ of the drawn is a second phase of the sample, of chance ρ·π (a drawn listing whose check told
nothing leaves the sample: ``relists.decide_checked``). The linearized variance of p̂ is
Σ (1 − ρπ)·(y − p̃)²/π² ÷ (Σ 1/π)² over the sample, with p̃ = (k + 2)/(n + 4) (k relists among n: Agresti and
Coull's share, so that a sample of no relists is not taken for a certainty), and Var(A) = N²·Var(p̂). Where every
listing was drawn and decided, A is 0 with no variance: the count stands.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from lib.market import intervals
from lib.market.values import Estimate, Measure

HOUR = 3600.0


@dataclass(frozen=True, slots=True)
class RelistSample:
    """A window's listings that were ever undecided (``relist_undecided`` rows created in it), and its sample.

    Parameters:
      listings: all of them (N).
      relists: those decided relists (D), out of the inflow already.
      undecided: those still undecided (U), counted as new goods.
      drawn: those drawn into the sample.
      checked: the sample: the drawn ones of the hours whose drawn are all decided (n); ``checked_relists`` of them
        relists (k).
      weight, relist_weight: Σ 1/π over the n, and over the k.
      square, relist_square: Σ 1/π² over the n, and over the k.
    """

    listings: int
    relists: int
    undecided: int
    drawn: int
    checked: int
    checked_relists: int
    weight: float
    relist_weight: float
    square: float
    relist_square: float

    @classmethod
    def of(cls, rows: Iterable[tuple[float, float | None, bool | None]]) -> RelistSample:
        """The tallies of a window's rows: (created, π or None where not drawn, relist or None while undecided)."""
        listed = list(rows)
        open_hours = {int(created // HOUR) for created, share, relist in listed if share is not None and relist is None}
        sample = [(share, bool(relist)) for created, share, relist in listed
                  if share is not None and relist is not None and int(created // HOUR) not in open_hours]
        return cls(listings=len(listed), relists=sum(relist is True for _, _, relist in listed),
                   undecided=sum(relist is None for _, _, relist in listed),
                   drawn=sum(share is not None for _, share, _ in listed), checked=len(sample),
                   checked_relists=sum(relist for _, relist in sample),
                   weight=sum(1 / share for share, _ in sample),
                   relist_weight=sum(1 / share for share, relist in sample if relist),
                   square=sum(1 / share ** 2 for share, _ in sample),
                   relist_square=sum(1 / share ** 2 for share, relist in sample if relist))


def still_counted(sample: RelistSample) -> tuple[float, float] | None:
    """The relists among the window's undecided listings that inflow counts as new goods (A), and its variance; None
    where there is nothing to estimate from (none undecided, or no drawn listing decided)."""
    if sample.undecided <= 0 or sample.checked <= 0 or sample.weight <= 0:
        return None
    share = sample.relist_weight / sample.weight
    value = min(max(sample.listings * share - sample.relists, 0.0), float(sample.undecided))
    decided_share = sample.checked / max(sample.drawn, sample.checked)
    p = (sample.checked_relists + 2) / (sample.checked + 4)
    # Σ (y − p)²/π^j with y² = y: (1 − 2p)·Σ y/π^j + p²·Σ 1/π^j
    squares = (1 - 2 * p) * sample.relist_square + p * p * sample.square
    linear = (1 - 2 * p) * sample.relist_weight + p * p * sample.weight
    variance = sample.listings ** 2 * max(squares - decided_share * linear, 0.0) / sample.weight ** 2
    return value, variance


def without_relists(inflow: Measure, counted: int, sample: RelistSample | None) -> Measure:
    """``inflow`` (the count ``counted``, or an estimate of the listings created) less the relists it still counts as
    new goods: an estimate with its 95 % interval where a sample can tell (``still_counted``), ``inflow`` unchanged
    elsewhere. An estimated inflow's unseen spans hold as many of them for each listing as the count does. The
    interval is never below the count less every undecided listing, nor above ``inflow``'s own."""
    found = None if sample is None or counted <= 0 or inflow.value is None else still_counted(sample)
    if found is None or sample is None or inflow.value is None:
        return inflow
    relists, variance = found
    scale = inflow.value / counted
    value = inflow.value - relists * scale
    z = intervals.z_of(intervals.LEVEL)
    _, own_high = (inflow.interval if isinstance(inflow, Estimate) and inflow.interval is not None
                   else (inflow.value, inflow.value))
    own = ((own_high - inflow.value) / z) ** 2 if own_high is not None else 0.0
    half = z * math.sqrt(own * (1 - relists / counted) ** 2 + variance * scale ** 2)
    low = max(value - half, float(max(counted - sample.undecided, 0)))
    high = value + half if own_high is None else min(value + half, own_high)
    return Estimate(round(value, 1), inflow.n, interval=(round(min(low, value), 1), round(max(high, value), 1)))
