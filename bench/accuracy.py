"""``python -m bench accuracy [--days N] [--warmup N] [--sizes 0.3,1,1.5,2,3,5,40,250,1200] [--seed S] [--rows FILE]
[--fixed]``
(2 scored days after a warm-up of 4 by default): how close each measure comes to the realistic market's truth
(docs/concepts/simulator.md), per IP size class, with the requests it cost; ``--rows`` also writes each IP-day's
measures, intervals and truth as CSV. The small IPs of the default are the estimates' reference IPs (a deployment's
many small IPs): with one or two, the spread of ages at sale between IPs cannot be measured and the estimates'
intervals are wide.

The crawls start ``--warmup`` days before the first scored day, as a deployment has been crawling its IPs: a
relist is recognised only when its earlier listing was crawled (the market relists after 1 to 4 days), and the
outflow estimate learns the ages at sale from the sales seen before.

A market of IPs across the size range (new listings an hour, one of them with a ×4 burst) is crawled every hour,
each crawl as deep as the IP's page plan (``lib.market.page_plans``) within ``SCHEDULER_PAGES_ON_SALE`` on-sale +
``SCHEDULER_PAGES_SOLD`` sold pages (``--fixed``: every search to its end or those caps), its pages built
from the simulator's search API answers (``lib.standins.simulator.realistic``: the JSON the crawler parses, read by
``lib.crawling.listings.item_from_api``) instead of through Chromium, and each crawl goes through the worker's own
``ResultProcessor``. Then each IP-day's measures, read as the API reads them (the hourly rows, the events,
``window_measures`` over the day), are compared with the market's truth over the same day (``true_flows``).

Padded listings counted and relists counted as new are found by comparing what was counted with the truth of each
listing the pages served (padding, or a relist of earlier goods), not by any feature of the system.
"""

from __future__ import annotations

import csv
import dataclasses
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from lib.core.clock import FrozenClock
from lib.core.db import bind_database, database
from lib.core.redis_client import state_redis
from lib.core.settings import use_settings
from lib.crawling.item_read import answered_state
from lib.crawling.listings import item_from_api
from lib.crawling.page_plan import CrawlPlan, plan_for
from lib.market import windows
from lib.market.processing import CrawlResult, ResultProcessor
from lib.market.schema import create_tables
from lib.market.values import Estimate, Measure
from lib.scheduling.catalogue import Catalogue
from lib.scheduling.schedule import ScheduleStore
from lib.segments.relevance import title_matcher
from lib.standins.simulator.model import DAY, HOUR, MarketModel
from lib.standins.simulator.realistic import PAGE_SIZE, Page, RealisticSearch
from lib.standins.simulator.stories import ON_SALE, SOLD_OUT, TRADING, Burst
from lib.standins.simulator.truth import TrueFlow, true_flows
from models import ListingEvent, ListingRelist

from .common import bench_settings, load_average

#: A Monday 00:00 UTC, with a week of market behind it (the first crawl's pages hold older listings too).
T0 = 1_780_876_800.0
SIZES = (0.3, 1.0, 1.5, 2.0, 3.0, 5.0, 40.0, 250.0, 1200.0)
#: The IP of this size gets a ×4 burst of two days from the start of the second scored day.
BURST_SIZE = 40.0
SEARCHES = (("on_sale", frozenset({ON_SALE})), ("sold", frozenset({SOLD_OUT, TRADING})))
#: Size classes by new listings an hour: (upper bound, name).
CLASSES = ((1.0, "niche (<1/h)"), (10.0, "small (1-10/h)"), (100.0, "middling (10-100/h)"),
           (1000.0, "large (100-1000/h)"), (float("inf"), "huge (>=1000/h)"))


#: The sellers' hash key of the run (a deployment's own, as the crawlers use): relists recognised as they are.
SELLER_KEY = b"the accuracy benchmark's key of the sellers' hash"


def size_class(size: float) -> str:
    return next(name for bound, name in CLASSES if size < bound)


@dataclass
class Served:
    """What the pages served an IP over the run: the ids of padding and of relists (from the market's truth)."""

    padded: set[str] = field(default_factory=set)
    relists: set[str] = field(default_factory=set)
    #: every listing served, relist or not: the listing it relists (None: new goods)
    relist_of: dict[str, str | None] = field(default_factory=dict)
    requests: int = 0
    #: of the requests, the item checks (``lib.crawling.item_read``)
    checks: int = 0


def crawl(search: RealisticSearch, keyword: str, t: float, plan: CrawlPlan, base_url: str,
          served: Served) -> tuple[list[dict], dict[str, dict], dict[str, str]]:
    """One crawl at ``t``: each search's pages in turn until the plan's depth (``lib.crawling.page_plan``) or the
    last page, each answer's items as the crawler reads them; the totals as the crawler reports them; then the
    plan's checks, each listing's state as its page's item API answers (``lib.crawling.item_read``)."""
    items: dict[str, dict] = {}
    totals: dict[str, dict] = {}
    matcher = title_matcher(keyword)
    for label, statuses in SEARCHES:
        total = {"num_found": None, "pages": 0, "items": 0}
        read: set[str] = set()
        # the search's real results once, for all its pages (``search.page`` finds them again for each page);
        # past them, the pages as the search serves them (padding)
        depth = plan.search(label)
        wanted = depth.pages * PAGE_SIZE
        real = search.results(keyword, statuses, t, needed=wanted + 1)
        num_found = site_total(search, keyword, label, statuses, t)
        for number in range(1, depth.pages + 1):
            if len(real) > wanted:
                page = Page(tuple(real[(number - 1) * PAGE_SIZE:number * PAGE_SIZE]), num_found, True)
                search.record(page.items)
            else:
                page = search.page(keyword, statuses, number, t)
            answer = search.answer_of(page, number, t)
            served.requests += 1
            total["pages"] += 1
            total["num_found"] = int(answer["meta"]["numFound"])
            mine: list[dict] = []
            oldest: float | None = None
            for raw, one in zip(answer["items"], page.items, strict=True):
                # as the crawler reads a page (lib.crawling.crawl.add_page): the IP's listings only
                item = item_from_api(raw, base_url, label, SELLER_KEY)
                if not matcher.matches(str(item["title"])):
                    continue
                mine.append(item)
                if item["created"] is not None:
                    oldest = item["created"] if oldest is None else min(oldest, item["created"])
                if one.padded:
                    served.padded.add(item["source_id"])
                elif one.story.relist_of is not None:
                    served.relists.add(item["source_id"])
                if not one.padded:
                    served.relist_of[item["source_id"]] = one.story.relist_of
                read.add(item["source_id"])
                if item["source_id"] not in items or item["status"] == "sold":
                    items[item["source_id"]] = item
            if not page.has_next or (answer["items"] and not mine):  # past the real results: padding only
                total["ended"] = True
                break
            depth = depth.deepened(mine)
            if depth.reached(oldest):  # as deep as the plan needs (lib.crawling.crawl.after_page)
                break
        total.setdefault("ended", False)
        total["items"] = len(read)
        totals[label] = total
    checks = {source_id: answered_state(*search.item(source_id, t)) for source_id in plan.checks}
    served.requests += len(checks)
    served.checks += len(checks)
    return list(items.values()), totals, checks


#: The site's totals (``numFound``) of each IP's searches, by (keyword, search, quarter of a day).
_TOTALS: dict[tuple[str, str, int], int] = {}


def site_total(search: RealisticSearch, keyword: str, label: str, statuses: frozenset[str], t: float) -> int:
    """The search's ``numFound``, as the site reports it, read anew every 6 hours: counting it is most of the cost
    of building a large IP's pages, and no measure in the table reads it (supply does; coverage only where
    outflow is counted)."""
    key = (keyword, label, int(t // (6 * HOUR)))
    if key not in _TOTALS:
        _TOTALS[key] = search.num_found(keyword, statuses, t)
    return _TOTALS[key]


@dataclass(frozen=True)
class DayRow:
    """One IP-day: each measure as the system reports it and the truth."""

    keyword: str
    size: float
    day: int
    inflow: float
    true_inflow: int
    outflow: float
    true_outflow: int
    price: float | None
    true_price: float | None
    sell_through: float | None
    true_sell_through: float | None
    time_to_sell: float | None
    true_time_to_sell: float | None
    heat: float | None
    true_heat: float | None
    padded_counted: int
    relists_created: int
    relists_counted: int
    #: whether the sold-price median's 95 % interval held the true median (None: no median)
    price_held: bool | None = None
    #: relists recognised (links made to an earlier listing), and of them those the truth says are that relist
    links: int = 0
    links_right: int = 0
    #: per flow: None where it was counted, else whether the estimate's 95 % interval held the truth
    inflow_held: bool | None = None
    outflow_held: bool | None = None
    #: the estimates' 95 % intervals (None: counted, or no value)
    inflow_interval: tuple[float | None, float | None] | None = None
    outflow_interval: tuple[float | None, float | None] | None = None
    price_interval: tuple[float | None, float | None] | None = None


def interval(m: Measure) -> tuple[float | None, float | None] | None:
    return m.interval if isinstance(m, Estimate) else None


def held(m: Measure, truth: int) -> bool | None:
    """None for a counted flow; for an estimated one, whether its interval holds ``truth``."""
    if not isinstance(m, Estimate) or m.interval is None:
        return None
    low, high = m.interval
    return (low is None or low <= truth) and (high is None or truth <= high)


def true_heat(truth: TrueFlow, baseline: Sequence[TrueFlow]) -> float | None:
    """The heat (docs/concepts/measures.md, definition 6) of the market's true flows: the window's outflow against
    the true outflow of the same baseline days the system had tracked, and the true sell-through."""
    if not baseline:
        return None
    flows = windows._Flows(truth.listed, truth.sold, 24)
    base = windows._Flows(sum(b.listed for b in baseline), sum(b.sold for b in baseline),
                          24 * len(baseline))
    return windows._heat(flows, base, truth.sell_through, truth.cohort).heat.value


def run_market(model: MarketModel, keywords: Sequence[str], days: int, settings, progress: bool = True,
               warmup: int = 0) -> tuple[list[DayRow], dict[str, Served]]:
    """Crawl each IP hourly from ``warmup`` days before T0 (a baseline crawl then) to ``days`` days after it, each
    crawl as deep as the IP's page plan says (``SCHEDULER_PAGE_PLAN``; off: the caps), and compare each day from T0;
    the requests counted are those of the scored days."""
    bind_database(settings.database_url_resolved)
    create_tables()
    r = state_redis(settings)
    r.flushdb()
    clock = FrozenClock(T0)
    catalogue = Catalogue(ScheduleStore(r), settings, clock)
    settings = dataclasses.replace(settings, flow_estimates=True)  # FLOW_ESTIMATES, for the processor and the reads
    use_settings(settings)
    processor = ResultProcessor(settings, r, clock)
    search = RealisticSearch(model)
    _TOTALS.clear()
    ids = {kw: catalogue.add(kw).id for kw in keywords}
    served = {kw: Served() for kw in keywords}
    for hour in range(-warmup * 24, days * 24 + 1):
        if hour == 0:
            for kw in keywords:  # from the crawl at T0 on, as a run without a warm-up counts them
                served[kw].requests = served[kw].checks = 0
        for k, kw in enumerate(keywords):
            t = T0 + hour * HOUR + 60.0 * k  # the IPs a minute apart, as a scheduler spreads them
            clock.set(t)
            items, totals, checks = crawl(search, kw, t, plan_for(r, ids[kw], settings), settings.mercari_base_url,
                                          served[kw])
            processor.apply(CrawlResult.parse(ids[kw], f"{kw}-{hour}", t, items, sum(
                total["pages"] for total in totals.values()), None, totals, checks=checks))
        if progress and hour % 24 == 0:
            print(f"  … day {hour // 24} of {days} crawled (from {-warmup})", file=sys.stderr, flush=True)
    rows = []
    for kw in keywords:
        truths = true_flows(model, kw, T0, T0 + days * DAY)
        relists_by_id = served[kw].relists
        for day, truth in enumerate(truths):
            start, end = truth.start, truth.end
            m = windows.window_measures([ids[kw]], 24, end - 1.0)[ids[kw]]
            inflow, outflow = m.inflow.value or 0.0, m.outflow.value or 0.0
            created = {sid for (sid,) in ListingEvent.select(ListingEvent.source_id).where(
                (ListingEvent.ip_id == ids[kw]) & (ListingEvent.kind == "created") & (ListingEvent.event_at >= start)
                & (ListingEvent.event_at < end)).tuples()}
            linked = list(ListingRelist.select(ListingRelist.source_id, ListingRelist.relist_of).where(
                (ListingRelist.ip_id == ids[kw]) & (ListingRelist.relisted_at >= start)
                & (ListingRelist.relisted_at < end)).tuples())
            counted = {sid for (sid,) in ListingEvent.select(ListingEvent.source_id).where(
                (ListingEvent.ip_id == ids[kw]) & (ListingEvent.event_at >= start)
                & (ListingEvent.event_at < end)).tuples()}
            rows.append(DayRow(
                kw, model.profile(kw).size, day, inflow, truth.listed, outflow, truth.sold,
                m.median_price.value, truth.sold_price_median, m.sell_through.value, truth.sell_through,
                m.time_to_sell_hours.median.value, truth.time_to_sell_median_hours, m.heat.value,
                true_heat(truth, truths[max(0, day - 7):day]) if m.heat.value is not None else None,
                len(counted & served[kw].padded), truth.relisted, len(created & relists_by_id),
                inflow_held=held(m.inflow, truth.listed), outflow_held=held(m.outflow, truth.sold),
                price_held=(held(m.median_price, truth.sold_price_median)
                            if truth.sold_price_median is not None else None), links=len(linked),
                inflow_interval=interval(m.inflow), outflow_interval=interval(m.outflow),
                price_interval=interval(m.median_price),
                links_right=sum(1 for sid, earlier in linked if served[kw].relist_of.get(sid) == earlier)))
    r.flushdb()
    database.close()
    return rows, served


def _ratio(measured: float, true: float) -> str:
    return f"{measured / true:.2f}×" if true else "–"


def _median_error(pairs: list[tuple[float | None, float | None]], points: bool = False) -> str:
    """The median over IP-days of the error: relative (%), or in points for a share."""
    errors = [(m - t) * 100 if points else (m - t) / t * 100 for m, t in pairs
              if m is not None and t is not None and (points or t)]
    if not errors:
        return "–"
    return f"{statistics.median(errors):+.1f}{' pt' if points else ' %'}"


def _within(pairs: list[tuple[float, float]], tolerance: float) -> str:
    days = [(m, t) for m, t in pairs if t]
    if not days:
        return "–"
    return f"{sum(1 for m, t in days if abs(m - t) <= tolerance * t) / len(days):.0%}"


HEADER = ("| IP size (new listings an hour) | IP-days | requests | inflow measured/true (days within ±3 %) "
          "| inflow estimated: interval held the truth | outflow measured/true (days within ±5 %) "
          "| outflow estimated: interval held the truth | sold-price median error (interval held) | sell-through error "
          "| time to sell error | heat error | padded counted | relists counted as new | relist links right |")


def table(rows: list[DayRow], served: dict[str, Served]) -> list[str]:
    """The accuracy table, one line per size class (Markdown, as docs/benchmarks.md carries it)."""
    by_class: dict[str, list[DayRow]] = defaultdict(list)
    for row in rows:
        by_class[size_class(row.size)].append(row)
    lines = [HEADER, "|---|" + "---:|" * 13]
    for _, name in CLASSES:
        days = by_class.get(name)
        if not days:
            continue
        sizes = sorted({row.size for row in days})
        keywords = {row.keyword for row in days}
        requests = sum(served[kw].requests for kw in keywords)
        inflow = (sum(r.inflow for r in days), sum(r.true_inflow for r in days))
        outflow = (sum(r.outflow for r in days), sum(r.true_outflow for r in days))
        relists = sum(r.relists_created for r in days)
        lines.append(
            f"| {name}: {', '.join(f'{s:g}' for s in sizes)} | {len(days)} | {requests:,} "
            f"| {_ratio(*inflow)} ({_within([(r.inflow, r.true_inflow) for r in days], 0.03)}) "
            f"| {_held([r.inflow_held for r in days])} "
            f"| {_ratio(*outflow)} ({_within([(r.outflow, r.true_outflow) for r in days], 0.05)}) "
            f"| {_held([r.outflow_held for r in days])} "
            f"| {_median_error([(r.price, r.true_price) for r in days])} ({_held([r.price_held for r in days], '–')}) "
            f"| {_median_error([(r.sell_through, r.true_sell_through) for r in days], points=True)} "
            f"| {_median_error([(r.time_to_sell, r.true_time_to_sell) for r in days])} "
            f"| {_heat_error(days)} "
            f"| {sum(r.padded_counted for r in days):,} "
            f"| {sum(r.relists_counted for r in days):,} of {relists:,} "
            f"| {sum(r.links_right for r in days):,} of {sum(r.links for r in days):,} |")
    return lines


def write_rows(rows: Sequence[DayRow], path: Path) -> None:
    """Each IP-day's row as CSV, an interval as its two ends."""
    names = [f.name for f in dataclasses.fields(DayRow)]
    with path.open("w", newline="") as out:
        writer = csv.writer(out)
        header: list[str] = []
        for name in names:
            header += [f"{name}_low", f"{name}_high"] if name.endswith("_interval") else [name]
        writer.writerow(header)
        for row in rows:
            cells: list[object] = []
            for name in names:
                value = getattr(row, name)
                if name.endswith("_interval"):
                    cells += list(value) if value is not None else ["", ""]
                else:
                    cells.append("" if value is None else value)
            writer.writerow(cells)


def _held(held: list[bool | None], none: str = "counted") -> str:
    """How many of the IP-days with an estimate had its interval hold the truth (``none``: no IP-day had one)."""
    estimated = [h for h in held if h is not None]
    return f"{sum(estimated)} of {len(estimated)}" if estimated else none


def _heat_error(days: list[DayRow]) -> str:
    errors = [r.heat - r.true_heat for r in days if r.heat is not None and r.true_heat is not None]
    return f"{statistics.median(errors):+.1f}" if errors else "–"


@dataclass(frozen=True)
class Options:
    """What a run simulates.

    Parameters:
        days: the days scored; warmup: the days crawled before them; sizes: the IPs' new listings an hour (one IP
        each); seed: the market's; rows: where each IP-day's row is written as CSV (None: nowhere); fixed: every
        crawl reads both searches to their end or their caps (``SCHEDULER_PAGE_PLAN=false``), not the IP's plan.
    """

    days: int = 2
    warmup: int = 4
    sizes: tuple[float, ...] = SIZES
    seed: int = 1
    rows: Path | None = None
    fixed: bool = False


USAGE = ("usage: python -m bench accuracy [--days N] [--warmup N] [--sizes 0.3,1,1.5,2,3,5,40,250,1200] [--seed S] "
         "[--rows FILE] [--fixed]")


def options(argv: list[str]) -> Options:
    days, warmup, sizes, seed = Options.days, Options.warmup, Options.sizes, Options.seed
    rows: Path | None = None
    fixed = False
    rest = list(argv)
    while rest:
        if rest[0] == "--fixed":
            fixed, rest = True, rest[1:]
            continue
        if len(rest) >= 2 and rest[0] == "--days" and rest[1].isdigit() and int(rest[1]) > 0:
            days = int(rest[1])
        elif len(rest) >= 2 and rest[0] == "--warmup" and rest[1].isdigit():
            warmup = int(rest[1])
        elif len(rest) >= 2 and rest[0] == "--sizes":
            sizes = tuple(float(s) for s in rest[1].split(","))
        elif len(rest) >= 2 and rest[0] == "--seed" and rest[1].isdigit():
            seed = int(rest[1])
        elif len(rest) >= 2 and rest[0] == "--rows":
            rows = Path(rest[1])
        else:
            raise SystemExit(USAGE)
        rest = rest[2:]
    return Options(days, warmup, sizes, seed, rows, fixed)


def market(sizes: Sequence[float], seed: int) -> tuple[MarketModel, list[str]]:
    """The benchmark's market: one IP per size, the one of ``BURST_SIZE`` (or the middle one) with a ×4 burst of
    two days from the second scored day."""
    keywords = [f"ip{k}-{size:g}" for k, size in enumerate(sizes)]
    bursty = keywords[sizes.index(BURST_SIZE)] if BURST_SIZE in sizes else keywords[len(keywords) // 2]
    # every other IP without bursts, so a class's numbers are of its size, not of a drawn event
    bursts = {kw: () for kw in keywords} | {bursty: (Burst("announcement", T0 + DAY, T0 + 3 * DAY, 4.0),)}
    return MarketModel(seed, sizes=dict(zip(keywords, sizes, strict=True)), bursts=bursts), keywords


def main(argv: list[str] | None = None) -> int:
    o = options(argv or [])
    model, keywords = market(o.sizes, o.seed)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp, bench_settings(Path(tmp)) as settings:
        settings = dataclasses.replace(settings, scheduler_page_plan=not o.fixed)
        depth = "each IP's page plan" if settings.scheduler_page_plan else "both searches to their end"
        print(f"accuracy: {len(keywords)} IPs × {o.days} days after {o.warmup} of warm-up, hourly crawls of "
              f"{depth}, at most {settings.scheduler_pages_on_sale} on-sale + {settings.scheduler_pages_sold} sold "
              f"pages, seed {o.seed}, load {load_average()}")
        rows, served = run_market(model, keywords, o.days, settings, warmup=o.warmup)
    for line in table(rows, served):
        print(line)
    checks = sum(s.checks for s in served.values())
    print(f"  of the {sum(s.requests for s in served.values()):,} requests, {checks:,} item checks")
    if o.rows is not None:
        write_rows(rows, o.rows)
    print(f"  ({time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
