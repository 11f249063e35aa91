"""``python -m bench estimates [--seeds 1-8] [--references 6] [--days 3] [--sizes 20,40,80,150,250,600]``: how often
the outflow estimate's 95 % interval (docs/concepts/measures.md, "Estimates") holds the realistic market's true
outflow, over many IP-days.

For each seed, a market (docs/concepts/simulator.md) of ``--references`` small IPs (1 to 5 new listings an hour,
whose sold pages see every sale: the reference ages at sale) and one IP per size, none with a burst, is crawled
every hour as the pages show it (``bench.reach_crawls``: each search's reach, the listings and sales seen; no
browser, no database: the estimators of ``lib.market.reach`` alone). Each day of each sized IP is estimated from
the crawls, with the reference's ages of the sales of the references' crawls before, and held against
``true_flows``' sales. Printed per size: IP-days, how many intervals held, the estimates' sum over the truth's,
and the errors in units of the interval's half-width over 1.96 (mean and spread: 0 and 1 for an unbiased estimate
whose interval is as wide as it should be).
"""

from __future__ import annotations

import statistics
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, replace

from lib.market.reach import AgeReference, outflow_estimate
from lib.standins.simulator.model import DAY, MarketModel
from lib.standins.simulator.truth import true_flows

from .reach_crawls import crawl_hourly

#: A UTC midnight.
T0 = 1_800_000_000.0 - (1_800_000_000.0 % DAY)
REFERENCE_SIZES = (1.0, 1.5, 2.0, 2.5, 1.2, 1.8, 3.0, 4.0, 0.8, 5.0)
USAGE = ("usage: python -m bench estimates [--seeds 1-8] [--references 6] [--days 3] "
         "[--sizes 20,40,80,150,250,600]")


@dataclass(frozen=True)
class Options:
    """What a run simulates.

    Parameters:
        seeds: the markets' seeds; references: how many small IPs give the reference (at most 10); days: the
        days estimated per IP; sizes: the estimated IPs' new listings an hour.
    """

    seeds: tuple[int, ...] = tuple(range(1, 9))
    references: int = 6
    days: int = 3
    sizes: tuple[float, ...] = (20.0, 40.0, 80.0, 150.0, 250.0, 600.0)


@dataclass(frozen=True)
class Held:
    """One IP-day: the estimate, its interval and the truth."""

    size: float
    value: float
    low: float
    high: float
    truth: int

    @property
    def held(self) -> bool:
        return self.low <= self.truth <= self.high

    @property
    def z(self) -> float:
        half = (self.high - self.low) / 2
        return (self.value - self.truth) / (half / 1.96) if half > 0 else 0.0


def options(argv: list[str]) -> Options:
    o = Options()
    rest = list(argv)
    while rest:
        if len(rest) < 2:
            raise SystemExit(USAGE)
        name, value = rest[0], rest[1]
        try:
            if name == "--seeds":
                low, _, high = value.partition("-")
                seeds = tuple(range(int(low), int(high or low) + 1))
                if not seeds:
                    raise SystemExit(USAGE)
                o = replace(o, seeds=seeds)
            elif name == "--references" and 1 <= int(value) <= len(REFERENCE_SIZES):
                o = replace(o, references=int(value))
            elif name == "--days" and int(value) > 0:
                o = replace(o, days=int(value))
            elif name == "--sizes":
                o = replace(o, sizes=tuple(float(s) for s in value.split(",")))
            else:
                raise SystemExit(USAGE)
        except ValueError:
            raise SystemExit(USAGE) from None
        rest = rest[2:]
    return o


def run_seed(seed: int, o: Options) -> list[Held]:
    references = {f"small{k}": size for k, size in enumerate(REFERENCE_SIZES[:o.references])}
    sizes = {f"mid{k}": size for k, size in enumerate(o.sizes)}
    model = MarketModel(seed, sizes=references | sizes, bursts={kw: () for kw in references | sizes})
    reference = AgeReference.of([crawl_hourly(model, kw, T0 - 8 * DAY, T0 + o.days * DAY).reference_ages
                                 for kw in references])
    out = []
    for keyword, size in sizes.items():
        seen = crawl_hourly(model, keyword, T0 - DAY, T0 + o.days * DAY)
        inflow = seen.inflow_by_hour()
        for truth in true_flows(model, keyword, T0, T0 + o.days * DAY):
            got = outflow_estimate(list(seen.sales.values()), seen.crawls, inflow, reference, truth.start,
                                   truth.end)
            if got is None or got.interval is None or got.value is None:
                continue
            low, high = got.interval
            out.append(Held(size, got.value, low if low is not None else 0.0,
                            high if high is not None else float("inf"), truth.sold))
    return out


def table(rows: list[Held]) -> list[str]:
    by_size: dict[float, list[Held]] = defaultdict(list)
    for row in rows:
        by_size[row.size].append(row)
    lines = ["| new listings an hour | IP-days | intervals held | estimated / true | error / (half-width / 1.96): "
             "mean, spread |", "|---:|---:|---:|---:|---:|"]
    for size in sorted(by_size):
        days = by_size[size]
        zs = [d.z for d in days]
        lines.append(f"| {size:g} | {len(days)} | {sum(d.held for d in days)} "
                     f"({sum(d.held for d in days) / len(days):.0%}) "
                     f"| {sum(d.value for d in days) / sum(d.truth for d in days):.3f}× "
                     f"| {statistics.mean(zs):+.2f}, {statistics.pstdev(zs):.2f} |")
    held = sum(d.held for d in rows)
    lines.append(f"| all | {len(rows)} | {held} ({held / len(rows):.0%}) | "
                 f"{sum(d.value for d in rows) / sum(d.truth for d in rows):.3f}× | |")
    return lines


def main(argv: list[str] | None = None) -> int:
    o = options(argv or [])
    started = time.perf_counter()
    print(f"estimates: outflow intervals, seeds {o.seeds[0]}-{o.seeds[-1]}, {o.references} reference IPs, "
          f"{o.days} days, IPs of {', '.join(f'{s:g}' for s in o.sizes)} new listings an hour")
    rows: list[Held] = []
    for seed in o.seeds:
        rows += run_seed(seed, o)
        print(f"  … seed {seed} done", file=sys.stderr, flush=True)
    for line in table(rows):
        print(line)
    print(f"  ({time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
