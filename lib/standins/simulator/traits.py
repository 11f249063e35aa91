"""The realistic market's traits, read from ``market_traits.toml`` (each number with its source there)."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10 reads TOML with tomli (setup.cfg installs it there)
    import tomli as tomllib

TRAITS_FILE = Path(__file__).with_name("market_traits.toml")


@dataclass(frozen=True)
class Sizes:
    """New listings an hour of an IP: a Pareto of ``tail_index`` truncated to [``minimum``, ``maximum``], or the
    ``known`` size of a keyword."""

    minimum: float
    maximum: float
    tail_index: float
    known: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True)
class Cycle:
    """Flow multipliers by hour of the day and day of the week (Monday first), in local time."""

    utc_offset_hours: float
    daily: tuple[float, ...]
    weekly: tuple[float, ...]


@dataclass(frozen=True)
class Trend:
    """Each IP's slow rise and fall: ``amplitude_sd`` of its log-amplitude, its period's range in days."""

    amplitude_sd: float
    period_days: tuple[float, float]


@dataclass(frozen=True)
class BurstKind:
    """One kind of scheduled event: the flow times ``factor`` for ``days``; drawn with ``weight``."""

    name: str
    factor: float
    days: float
    weight: float


@dataclass(frozen=True)
class Bursts:
    period_days: float
    per_period: float
    kinds: tuple[BurstKind, ...]


@dataclass(frozen=True)
class IpSpread:
    """How IPs differ besides their size (standard deviations of log-normal levels) and their sellers."""

    price_level_sd: float
    liquidity_sd: float
    goods_mix_sd: float
    sellers_per_listing_hour: float
    min_sellers: int
    seller_zipf: float


@dataclass(frozen=True)
class Goods:
    """A goods type's weight in the mix, asking prices and sales."""

    weight: float
    median_price: float
    price_sd: float
    sell_chance: float
    median_hours: float


@dataclass(frozen=True)
class Selling:
    time_elasticity: float
    chance_elasticity: float
    max_chance: float
    time_sd: float
    trade_hours: tuple[float, float]
    life_hours: float
    sold_search_hours: float


@dataclass(frozen=True)
class PriceCuts:
    share: float
    after_hours: tuple[float, float]
    factor: tuple[float, float]


@dataclass(frozen=True)
class Relists:
    share: float
    after_days: tuple[int, int]
    same_title: float
    title_tweaks: tuple[str, ...]


@dataclass(frozen=True)
class Auctions:
    share: float
    duration_hours: tuple[float, float]
    start_factor: float
    mean_bids: float
    ended_state: str
    ongoing_state: str


@dataclass(frozen=True)
class Search:
    index_delay_seconds: tuple[float, float]
    padding_positions: int
    padding_keywords: tuple[str, ...]
    num_found_cap: int
    num_found_window_hours: float
    num_found_factor: tuple[float, float]
    empty_answer_share: float


@dataclass(frozen=True)
class RateLimit:
    """A token bucket per address: refilled at ``per_minute``, holding at most ``burst`` requests."""

    per_minute: float
    burst: float
    retry_after_seconds: int


@dataclass(frozen=True)
class Traits:
    """Everything the realistic market is made of.

    Parameters:
        sizes, cycle, trend, bursts, ips, goods, selling, price_cuts, relists, auctions, search, rate_limit: the
            sections of ``market_traits.toml`` of those names.
    """

    sizes: Sizes
    cycle: Cycle
    trend: Trend
    bursts: Bursts
    ips: IpSpread
    goods: tuple[tuple[str, Goods], ...]
    selling: Selling
    price_cuts: PriceCuts
    relists: Relists
    auctions: Auctions
    search: Search
    rate_limit: RateLimit


def _pair(value: Any) -> tuple[Any, Any]:
    first, second = value
    return first, second


def _normalised(values: list[float]) -> tuple[float, ...]:
    mean = sum(values) / len(values)
    return tuple(v / mean for v in values)


def parse_traits(raw: dict[str, Any]) -> Traits:
    """The traits of a parsed traits file."""
    sizes = raw["sizes"]
    cycle, bursts, ips, selling = raw["cycle"], raw["bursts"], raw["ips"], raw["selling"]
    cuts, relists, auctions, search = raw["price_cuts"], raw["relists"], raw["auctions"], raw["search"]
    if len(cycle["daily"]) != 24 or len(cycle["weekly"]) != 7:
        raise ValueError("the cycle needs 24 hourly and 7 daily multipliers")
    return Traits(
        sizes=Sizes(float(sizes["minimum"]), float(sizes["maximum"]), float(sizes["tail_index"]),
                    tuple((name, float(size)) for name, size in sizes.get("known", {}).items())),
        cycle=Cycle(float(cycle["utc_offset_hours"]), _normalised(cycle["daily"]), _normalised(cycle["weekly"])),
        trend=Trend(float(raw["trend"]["amplitude_sd"]), _pair(raw["trend"]["period_days"])),
        bursts=Bursts(float(bursts["period_days"]), float(bursts["per_period"]),
                      tuple(BurstKind(**kind) for kind in bursts["kinds"])),
        ips=IpSpread(**ips),
        goods=tuple((name, Goods(**values)) for name, values in raw["goods"].items()),
        selling=Selling(selling["time_elasticity"], selling["chance_elasticity"], selling["max_chance"],
                        selling["time_sd"], _pair(selling["trade_hours"]), selling["life_hours"],
                        selling["sold_search_hours"]),
        price_cuts=PriceCuts(cuts["share"], _pair(cuts["after_hours"]), _pair(cuts["factor"])),
        relists=Relists(relists["share"], _pair(relists["after_days"]), relists["same_title"],
                        tuple(relists["title_tweaks"])),
        auctions=Auctions(auctions["share"], _pair(auctions["duration_hours"]), auctions["start_factor"],
                          auctions["mean_bids"], auctions["ended_state"], auctions["ongoing_state"]),
        search=Search(_pair(search["index_delay_seconds"]), int(search["padding_positions"]),
                      tuple(search["padding_keywords"]), int(search["num_found_cap"]),
                      float(search["num_found_window_hours"]), _pair(search["num_found_factor"]),
                      float(search["empty_answer_share"])),
        rate_limit=RateLimit(**raw["rate_limit"]),
    )


@lru_cache(maxsize=8)  # one entry per traits file; the tests read a few
def load_traits(path: Path = TRAITS_FILE) -> Traits:
    """The traits of ``path`` (default: the shipped ``market_traits.toml``)."""
    with path.open("rb") as f:
        return parse_traits(tomllib.load(f))
