"""``python -m bench plan [--ips N] [--days N] [--warmup N] [--seed S] [--max-interval D] [--budget R|fixed]
[--jobs 1|2]`` (1,000 IPs, 1 scored day after 1 of warm-up by default; ``--jobs 2`` crawls the two runs side by
side): what each crawl plan costs in requests to the site and what it buys, on one realistic market of IPs drawn over
its size range (docs/concepts/simulator.md: new listings an hour heavy-tailed from 0.1 to 2,000).

The same market is crawled twice, each time from an empty store, as the scheduler's closed loop times each IP's
crawls (``ResultProcessor`` schedules the next one after each result; the IPs start a few seconds apart):

* **fixed**: every search read to its end or the page caps, the interval the heat's (``SCHEDULER_PAGE_PLAN=false``);
* **plans**: each crawl as deep as the IP's page plan, the interval the shorter of the heat's and the flow's
  (docs/concepts/crawling.md, "Pages that follow change"; docs/concepts/scheduling.md), with
  ``SCHEDULER_MAX_INTERVAL`` at ``--max-interval`` (default: as deployed, 2 hours), and with ``--budget R`` a request
  budget of R requests an hour that the schedule plans within (docs/concepts/scheduling.md, "Under the request
  budget"; the price is set every 10 simulated minutes, as the scheduler's tick sets it); ``--budget fixed``: the
  requests an hour the fixed run spent over the scored days (rounded down), for the plans at the same requests.

Pages are built from the simulator's search API answers as ``python -m bench accuracy`` builds them (no browser).
Per size class, for the scored days: the requests (pages) a day, each IP-day's inflow and outflow against the
market's truth (the median over IP-days of the relative error, and the share of the true sales the sold pages
showed: the sales counted, not estimated). A day's flows are read twice: settled, once every IP has been crawled
after the last scored day's end (a listing or sale falls in the hour the site dates it, so the next crawl completes
the day: what its daily row, chart and forecast hold), and at the day's end, as a board read at midnight shows
them (the hours since each IP's last crawl not seen yet). Requests grow with what changed: with the plans, a quiet
IP's crawl is a page or two of each search, and a busy IP's as many as its listings since the last crawl fill.
"""

from __future__ import annotations

import dataclasses
import heapq
import math
import multiprocessing
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from lib.core.clock import FrozenClock
from lib.core.db import bind_database, database
from lib.core.parsers import format_duration, parse_duration
from lib.core.redis_client import state_redis
from lib.core.settings import Settings, use_settings
from lib.crawling.page_plan import plan_for
from lib.market import windows
from lib.market.processing import CrawlResult, ResultProcessor
from lib.market.schema import create_tables
from lib.market.values import WindowMeasures
from lib.scheduling.budget_plan import price_if_due
from lib.scheduling.catalogue import Catalogue
from lib.scheduling.schedule import ScheduleStore
from lib.standins.simulator.model import DAY, MarketModel
from lib.standins.simulator.realistic import RealisticSearch
from lib.standins.simulator.truth import true_flows
from models import ListingEvent

from .accuracy import CLASSES, T0, Served, crawl, size_class
from .common import bench_settings, load_average

USAGE = ("usage: python -m bench plan [--ips N] [--days N] [--warmup N] [--seed S] [--max-interval DURATION] "
         "[--budget REQUESTS_AN_HOUR|fixed] [--jobs 1|2]")


@dataclass(frozen=True)
class Options:
    """What a run simulates.

    Parameters:
        ips: the IPs (sizes drawn from the market's traits); days: the days scored; warmup: the days crawled before
        them; seed: the market's; max_interval: the plans' SCHEDULER_MAX_INTERVAL (seconds; None: as deployed);
        budget: the plans' request budget, requests an hour (None: none); same_budget: the plans' budget is the
        fixed run's requests an hour instead; jobs: 2 crawls the two runs side by side in two processes, each on its
        own embedded Redis (not with same_budget, whose second run needs the first's requests).
    """

    ips: int = 1000
    days: int = 1
    warmup: int = 1
    seed: int = 1
    max_interval: float | None = None
    budget: int | None = None
    same_budget: bool = False
    jobs: int = 1


@dataclass
class IpDay:
    size: float
    requests: int
    inflow: float
    true_inflow: int
    outflow: float
    true_outflow: int
    sales_seen: int
    inflow_at_end: float
    outflow_at_end: float


def options(argv: Sequence[str]) -> Options:
    o = Options()
    rest = list(argv)
    while rest:
        if rest[:2] == ["--budget", "fixed"]:
            o = dataclasses.replace(o, same_budget=True, budget=None)
        elif len(rest) >= 2 and rest[0] == "--max-interval":
            try:
                o = dataclasses.replace(o, max_interval=parse_duration(rest[1]))
            except ValueError:
                raise SystemExit(USAGE) from None
        elif len(rest) < 2 or not rest[1].isdigit() or rest[0] not in ("--ips", "--days", "--warmup", "--seed",
                                                                        "--budget", "--jobs"):
            raise SystemExit(USAGE)
        else:
            o = dataclasses.replace(o, **{rest[0][2:]: int(rest[1])})
        rest = rest[2:]
    if o.ips < 1 or o.days < 1 or o.budget == 0 or o.jobs not in (1, 2) or (o.jobs == 2 and o.same_budget):
        raise SystemExit(USAGE)
    return o


def run(model: MarketModel, keywords: Sequence[str], o: Options, settings: Settings) -> list[IpDay]:
    """Crawl the market as the closed loop schedules it, from ``o.warmup`` days before T0 to ``o.days`` after."""
    bind_database(settings.database_url_resolved)
    create_tables()
    r = state_redis(settings)
    r.flushdb()
    start, end = T0 - o.warmup * DAY, T0 + o.days * DAY
    clock = FrozenClock(start)
    use_settings(settings)
    catalogue = Catalogue(ScheduleStore(r), settings, clock)
    processor = ResultProcessor(settings, r, clock)
    schedule = catalogue.schedule
    search = RealisticSearch(model)
    ids = {kw: catalogue.add(kw).id for kw in keywords}
    served = {kw: Served() for kw in keywords}
    requests: dict[tuple[str, int], int] = defaultdict(int)
    due = [(start + 3600.0 * k / len(keywords), k) for k in range(len(keywords))]
    settled: set[int] = set()
    heapq.heapify(due)
    crawls = 0
    day_end_reads: list[dict[int, WindowMeasures]] = []  # each scored day's measures, read at its end
    while due:
        t, k = heapq.heappop(due)
        if t >= end + settings.scheduler_max_interval or (t >= end and k in settled):
            continue
        while len(day_end_reads) < o.days and t >= T0 + (len(day_end_reads) + 1) * DAY:
            day_end = T0 + (len(day_end_reads) + 1) * DAY
            day_end_reads.append(windows.window_measures(list(ids.values()), 24, day_end - 1.0))
        if t >= end:  # each IP's first crawl past the last scored day's end settles that day's numbers
            settled.add(k)
        kw = keywords[k]
        clock.set(t)
        price_if_due(settings, r, t)
        before = served[kw].requests
        items, totals, checks = crawl(search, kw, t, plan_for(r, ids[kw], settings), settings.mercari_base_url,
                                      served[kw])
        if t >= T0:
            requests[(kw, int((t - T0) // DAY))] += served[kw].requests - before
        processor.apply(CrawlResult.parse(ids[kw], f"{kw}-{crawls}", t, items, sum(
            total["pages"] for total in totals.values()), None, totals, checks=checks))
        crawls += 1
        heapq.heappush(due, (schedule.time_of(ids[kw]) or t + settings.scheduler_max_interval, k))
    rows = []
    for day in range(o.days):
        day_end = T0 + (day + 1) * DAY
        measured = windows.window_measures(list(ids.values()), 24, day_end - 1.0)
        for kw in keywords:
            (truth,) = true_flows(model, kw, day_end - DAY, day_end, DAY)
            m, at_end = measured[ids[kw]], day_end_reads[day].get(ids[kw])
            seen = ListingEvent.select().where((ListingEvent.ip_id == ids[kw]) & (ListingEvent.kind == "sold")
                                               & (ListingEvent.event_at >= day_end - DAY)
                                               & (ListingEvent.event_at < day_end)).count()
            rows.append(IpDay(model.profile(kw).size, requests[(kw, day)], m.inflow.value or 0.0, truth.listed,
                              m.outflow.value or 0.0, truth.sold, seen,
                              (at_end.inflow.value or 0.0) if at_end else 0.0,
                              (at_end.outflow.value or 0.0) if at_end else 0.0))
    r.flushdb()
    database.close()
    return rows


def _error(pairs: list[tuple[float, int]]) -> str:
    errors = [abs(m - t) / t * 100 for m, t in pairs if t]
    return f"{statistics.median(errors):.1f} %" if errors else "–"


def table(runs: dict[str, list[IpDay]], days: int) -> list[str]:
    names = list(runs)
    lines = ["| IP size (new listings an hour) | IPs | " + " | ".join(
        f"{n}: requests a day | {n}: inflow error | {n}: outflow error | {n}: read at the day's end | "
        f"{n}: true sales seen" for n in names) + " |",
        "|---|---:|" + "---:|" * 5 * len(names)]
    for _, name in [*CLASSES, (None, "all")]:
        cells = []
        count = 0
        for n in names:
            rows = [x for x in runs[n] if name == "all" or size_class(x.size) == name]
            count = len(rows) // days
            true_sold = sum(x.true_outflow for x in rows)
            cells += [f"{sum(x.requests for x in rows) / days:,.0f}",
                      _error([(x.inflow, x.true_inflow) for x in rows]),
                      _error([(x.outflow, x.true_outflow) for x in rows]),
                      _error([(x.inflow_at_end, x.true_inflow) for x in rows]) + " / "
                      + _error([(x.outflow_at_end, x.true_outflow) for x in rows]),
                      f"{sum(x.sales_seen for x in rows) / true_sold:.0%}" if true_sold else "–"]
        if count:
            lines.append(f"| {name} | {count} | " + " | ".join(cells) + " |")
    return lines


def crawled(o: Options, planned: bool, private_redis: bool = False) -> list[IpDay]:
    """One run (the fixed plan, or the page plans when ``planned``) on a fresh store: its IP-days."""
    keywords = [f"ip{k}" for k in range(o.ips)]
    with (tempfile.TemporaryDirectory(prefix="bench-plan-") as tmp,
          bench_settings(Path(tmp), private_redis=private_redis) as settings):
        settings = dataclasses.replace(settings, scheduler_page_plan=planned, flow_estimates=True)
        if planned and o.max_interval is not None:
            settings = dataclasses.replace(settings, scheduler_max_interval=o.max_interval)
        if planned and o.budget is not None:  # one address whose budget's share is o.budget an hour
            limit = math.ceil(o.budget / 60)
            settings = dataclasses.replace(settings, crawl_rate_limit=limit,
                                           scheduler_budget_share=o.budget / (60 * limit))
        else:
            settings = dataclasses.replace(settings, crawl_rate_limit=0)
        return run(MarketModel(o.seed), keywords, o, settings)


def main(argv: list[str] | None = None) -> int:
    o = options(argv or [])
    bound = f", the plans' longest interval {format_duration(o.max_interval)}" if o.max_interval else ""
    bound += f", the plans' budget {o.budget:,} requests an hour" if o.budget else ""
    bound += ", the plans' budget the fixed run's requests an hour" if o.same_budget else ""
    bound += ", the two runs side by side" if o.jobs == 2 else ""
    print(f"plan: {o.ips} IPs (sizes drawn, seed {o.seed}) × {o.days} scored day(s) after {o.warmup} of warm-up, "
          f"crawls timed by the closed loop{bound}, load {load_average()}")
    runs: dict[str, list[IpDay]] = {}
    started = time.perf_counter()
    if o.jobs == 2:
        # spawned, not forked: each child binds its own settings, database and Redis from nothing
        with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
            futures = {name: pool.submit(crawled, o, planned, True) for name, planned in (("fixed", False),
                                                                                           ("plans", True))}
            for name, future in futures.items():
                runs[name] = future.result()
                print(f"  … {name} crawled ({time.perf_counter() - started:.0f} s)", file=sys.stderr, flush=True)
    for name, planned in (("fixed", False), ("plans", True)):
        if name in runs:
            continue
        runs[name] = crawled(o, planned)
        print(f"  … {name} crawled ({time.perf_counter() - started:.0f} s)", file=sys.stderr, flush=True)
        if o.same_budget and not planned:
            o = dataclasses.replace(o, budget=max(1, sum(x.requests for x in runs[name]) // (24 * o.days)))
            print(f"  the plans' budget: {o.budget:,} requests an hour, the fixed run's", flush=True)
    for line in table(runs, o.days):
        print(line)
    fixed, plans = (sum(x.requests for x in runs[n]) for n in ("fixed", "plans"))
    print(f"  plans / fixed requests: {plans / fixed:.2f}× ({time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
