"""The fleet's crawl intervals under its request budget (docs/concepts/scheduling.md, "Under the request budget").

Each IP's crawl costs requests: ``pages`` a crawl spends whatever its interval (each search's first page, a sold
search read back a listing's life, an on-sale search read whole) and, for an on-sale search read back to the last
crawl, a page per ``PAGE_SIZE`` listings created since. At interval ``T`` (hours) that is
``pages / T + flow / PAGE_SIZE`` requests an hour. What a longer interval costs is freshness: at any moment the
listings created since the IP's last crawl are on no page yet, ``flow × T / 2`` of them on average.

The planner minimises the listings not yet seen, summed over the IPs, within the budget: minimise
``Σ flow_i T_i / 2`` subject to ``Σ (pages_i / T_i + flow_i / PAGE_SIZE) ≤ budget``. With a price ``λ`` on a
request an hour, each IP's best interval is ``T_i = sqrt(2 λ pages_i / flow_i)`` (the square-root rule of
keeping copies fresh under a crawl budget: an IP listing four times as much is crawled twice as often), within
its bounds; the price is the least that keeps the sum within the budget (the sum falls as the price rises: found
exactly from the IPs sorted by their bounds, ``_Sweep``). The bounds are the adaptive interval's: no shorter
than the IP's interval from its heat and its flow (``schedule.planned_interval``: with a budget to spare, nothing
changes) and no longer than
SCHEDULER_MAX_INTERVAL or the time its flow takes to fill the on-sale page cap (past it, listings would be lost,
not only late). So the budget lengthens intervals only when the IPs' own intervals would spend more than it,
quiet IPs first. Where even the longest intervals spend more, the rate limit and backpressure hold the rest.

The budget is ``SCHEDULER_BUDGET_SHARE`` of the addresses' request budgets (``lib.crawling.budget``: after a
429, the cut one), an hour. Each IP's cost is kept by the worker after each result (``CostStore``: one hash
field, so the planning reads every IP's in one command), and the price is set every ``PRICE_EVERY`` seconds by
the scheduler's tick (``price_if_due``), read by the worker's closed loop (``interval_at``).
"""

from __future__ import annotations

import bisect
import itertools
import json
import logging
import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, replace

import redis

from lib.core import keys
from lib.core.settings import Settings
from lib.crawling import rate_limit
from lib.crawling.budget import RequestBudget
from lib.crawling.page_plan import spare_sold_pages
from lib.crawling.selectors import PAGE_SIZE

logger = logging.getLogger(__name__)

HOUR = 3600.0
#: Seconds between two settings of the price: the flows it rests on move over hours.
PRICE_EVERY = 600.0
#: A cost not renewed by a result within this long is left out of the planning (an IP paused or removed).
COST_TTL = 7 * 86400.0
#: A price above 0 that lengthens no IP with a flow: only those without one go to their longest.
TINY = 1e-9


#: The fields of a cost as stored: flow, pages, least, most, at, seen, outran (a cost stored before ``outran``
#: was kept has the first six: ``CrawlCost.decode``).
FIELDS = 7


def _valid(numbers: list[float]) -> bool:
    """Whether every cost of these stored fields is one ``CrawlCost.decode`` accepts."""
    flow, pages, least, most, _, seen, outran = (numbers[k::FIELDS] for k in range(FIELDS))
    return (not flow or (min(flow) >= 0 and math.isfinite(max(flow)) and min(pages) > 0 and min(least) > 0
                         and min(seen) >= 0 and max(seen) <= 1 and set(outran) <= {0.0, 1.0}
                         and all(low <= high for low, high in zip(least, most, strict=True))))


@dataclass(frozen=True, slots=True)
class CrawlCost:
    """What one IP's crawls cost and see, as the planner reckons them.

    Parameters:
      flow: its new listings an hour (the page plan's, ``lib.market.page_plans.new_flow``).
      pages: the requests a crawl spends whatever its interval.
      least: its own interval (seconds): from its heat and flow, or the one pinned (``least == most``).
      most: the longest interval it may have (seconds): SCHEDULER_MAX_INTERVAL, or less where its flow would fill
        the on-sale page cap sooner; never below ``least``.
      at: when it was reckoned (Unix seconds, the crawl's time).
      seen: the share of its new listings since the crawl before that its last crawl's on-sale pages reached (1:
        all; less where they outran the page cap).
      outran: its last crawl's sold search outran its pages (``lib.market.page_plans.sold_outran``): ``pages``
        counts SCHEDULER_PAGES_SOLD for it, and spare requests may read it deeper (``Price.sold_pages``).
    """

    flow: float
    pages: float
    least: float
    most: float
    at: float
    seen: float = 1.0
    outran: bool = False

    def requests_per_hour(self, interval: float) -> float:
        return self.pages * HOUR / interval + self.flow / PAGE_SIZE

    def unseen(self, interval: float) -> float:
        """The listings created since its last crawl, on average over the interval."""
        return self.flow * interval / HOUR / 2

    def interval_at(self, price: float) -> float:
        """Its best interval (seconds) at ``price`` (listing-hours not seen per request an hour), within its
        bounds."""
        if price <= 0:
            return self.least
        if self.flow <= 0:
            return self.most
        best = math.sqrt(2 * price * self.pages / self.flow) * HOUR
        return min(max(best, self.least), self.most)

    def encode(self) -> str:
        return (f"{self.flow:.6g} {self.pages:.6g} {self.least:.6g} {self.most:.6g} {self.at:.3f} {self.seen:.4g} "
                f"{int(self.outran)}")

    @classmethod
    def decode(cls, raw: bytes | str) -> CrawlCost:
        text = raw.decode() if isinstance(raw, bytes) else raw
        numbers = [float(v) for v in text.split()]
        if len(numbers) == FIELDS - 1:  # stored before ``outran`` was kept
            numbers.append(0.0)
        if len(numbers) != FIELDS:
            raise ValueError(f"not a crawl cost: {text!r}")
        flow, pages, least, most, at, seen, outran = numbers
        if not (math.isfinite(flow) and flow >= 0 and pages > 0 and 0 < least <= most and 0 <= seen <= 1
                and outran in (0.0, 1.0)):
            raise ValueError(f"not a crawl cost: {text!r}")
        return cls(flow, pages, least, most, at, seen, outran == 1.0)


    def lengthened_why(self, price: Price) -> str | None:
        """Why ``price`` makes its interval longer than its own, in words an operator reads (``animetop ip list``);
        None where it does not."""
        from lib.core.parsers import format_duration as d

        interval = self.interval_at(price.price)
        if interval <= self.least * (1 + 1e-9):
            return None
        bound = ", held at its longest" if interval >= self.most * (1 - 1e-9) else ""
        return (f"request budget: the IPs' own intervals would spend more than {price.budget:.0f} requests an hour; "
                f"{self.flow:g} new listings an hour, {self.pages:g} pages a crawl: every {d(round(interval))} "
                f"instead of {d(round(self.least))}{bound}")


@dataclass(frozen=True, slots=True)
class Price:
    """The budget's price now and what it buys.

    Parameters:
      price: listing-hours not seen that a request an hour is worth; 0: the budget does not bind.
      budget: the requests an hour the schedule may plan (SCHEDULER_BUDGET_SHARE of the addresses' budgets).
      planned: the requests an hour the IPs' intervals at that price spend.
      ips: the IPs planned; lengthened: those whose interval the budget made longer than their own.
      unseen: the listings not yet seen at any moment, on average, at that price (summed over the IPs).
      at: when it was set (Unix seconds).
      reached: of the IPs' new listings (weighted by their flows), the share their last crawls' on-sale pages
        reached (``CrawlCost.seen``); None without a flow.
      sold_pages: the pages the sold search of an IP that outruns its cap reads, deeper than the cap where the
        budget has requests to spare at the IPs' own intervals (``planned`` includes them); 0: no deeper.
      deepened: the IPs whose sold search outruns its cap (read ``sold_pages`` deep when that is above 0).
      relist_reads: the requests an hour the reads back and item checks for undecided relists spend whatever the
        intervals (``RelistReads``: over the last day), in ``planned``; the intervals share what is left of the
        budget.
    """

    price: float
    budget: float
    planned: float
    ips: int
    lengthened: int
    unseen: float
    at: float
    reached: float | None = None
    sold_pages: int = 0
    deepened: int = 0
    relist_reads: float = 0.0

    @property
    def over(self) -> bool:
        """Whether even the longest intervals spend more than the budget (the rate limit holds the rest)."""
        return self.planned > self.budget * (1 + 1e-9)


@dataclass(frozen=True, slots=True)
class Costs:
    """Every IP's ``CrawlCost`` as columns, one list per field: the planner's form (at 100,000 IPs a pass over
    columns costs a fraction of one over objects)."""

    flow: list[float]
    pages: list[float]
    least: list[float]
    most: list[float]
    seen: list[float]
    outran: list[float]  # 1.0 or 0.0

    @classmethod
    def of(cls, costs: Iterable[CrawlCost]) -> Costs:
        rows = list(costs)
        return cls([c.flow for c in rows], [c.pages for c in rows], [c.least for c in rows],
                   [c.most for c in rows], [c.seen for c in rows], [float(c.outran) for c in rows])

    def __len__(self) -> int:
        return len(self.flow)


def plan(costs: Iterable[CrawlCost] | Costs, budget: float, at: float = 0.0,
         sold: tuple[int, int] = (1, 1), fixed: float = 0.0) -> Price:
    """The least price at which the IPs' intervals spend at most ``budget`` requests an hour (all at their
    longest, if none does), and what they spend and see at it. ``sold``: the sold page cap and the most pages
    (``lib.crawling.page_plan.spare_sold_pages``) that requests the budget has to spare may read the sold search of
    the IPs that outrun the cap (``spare_depth``); ``fixed``: the requests an hour spent whatever the intervals (the
    reads back and item checks for undecided relists), which the intervals leave of the budget."""
    if fixed > 0:
        price = plan(costs, max(0.0, budget - fixed), at, sold)
        return replace(price, budget=budget, planned=price.planned + fixed, relist_reads=fixed)
    c = costs if isinstance(costs, Costs) else Costs.of(costs)
    total = sum(c.flow)
    reached = sum(f * s for f, s in zip(c.flow, c.seen, strict=True)) / total if total > 0 else None
    own = sum(p * HOUR / least for p, least in zip(c.pages, c.least, strict=True)) + total / PAGE_SIZE
    deepened = int(sum(c.outran))
    if own <= budget:
        # the outrunning IPs' crawls an hour: each sold page deeper costs that many requests an hour
        crawls = sum(HOUR / least for least, o in zip(c.least, c.outran, strict=True) if o)
        depth = spare_depth(budget - own, crawls, *sold)
        return Price(price=0.0, budget=budget, planned=own + (depth - sold[0]) * crawls if depth else own,
                     ips=len(c), lengthened=0,
                     unseen=sum(f * least for f, least in zip(c.flow, c.least, strict=True)) / HOUR / 2, at=at,
                     reached=reached, sold_pages=depth, deepened=deepened)
    root = _Sweep(c).least_root(budget)
    planned = unseen = 0.0
    lengthened = 0
    for flow, pages, least, most in zip(c.flow, c.pages, c.least, c.most, strict=True):
        # CrawlCost.interval_at at root ** 2, inline
        t = most if flow <= 0 else min(max(math.sqrt(2 * pages / flow) * root * HOUR, least), most)
        planned += pages * HOUR / t
        unseen += flow * t
        lengthened += t > least * (1 + 1e-9)
    return Price(price=root ** 2, budget=budget, planned=planned + total / PAGE_SIZE, ips=len(c),
                 lengthened=lengthened, unseen=unseen / HOUR / 2, at=at, reached=reached, deepened=deepened)


def spare_depth(spare: float, crawls: float, cap: int, most: int) -> int:
    """The sold pages that ``spare`` requests an hour pay for at ``crawls`` crawls an hour of IPs whose sold search
    outruns its ``cap``: every such IP read to one depth, at most ``most``; 0 where that is no deeper than the cap.

    One depth for all: which of them a page deeper buys most sales for is not known before it is read, and a
    depth shared stays put while their number moves a little (the plan is set again every ``PRICE_EVERY``)."""
    if crawls <= 0 or spare <= 0 or most <= cap:
        return 0
    pages = min(most, cap + int(spare // crawls))
    return pages if pages > cap else 0


class _Sweep:
    """The IPs' spend as a function of ``s = sqrt(price)``, exactly, from prefix sums over the IPs sorted by their
    bounds (each evaluation two bisections; building it, two sorts: ``python -m bench schedule_tick`` times it at
    100,000 IPs). An IP with a flow has its interval ``k s`` (``k = sqrt(2 pages / flow)`` hours) held
    within ``[least, most]``: at ``least`` while ``s`` is at most ``lo = least / k``, at ``most`` from
    ``hi = most / k``, spending ``pages / (k s)`` requests an hour between. One without a flow is at its longest
    at any price above 0."""

    def __init__(self, c: Costs) -> None:
        # columns, not rows: comprehensions over columns and index sorts stay at C speed at 100,000 IPs
        moving = [k for k, f in enumerate(c.flow) if f > 0]
        flow, pages, least, most = ([column[k] for k in moving] for column in (c.flow, c.pages, c.least, c.most))
        self.fixed = sum(c.flow) / PAGE_SIZE + sum(p * HOUR / m for f, p, m in zip(c.flow, c.pages, c.most,
                                                                                 strict=True) if f <= 0)
        kk = [math.sqrt(2 * p / f) * HOUR for f, p in zip(flow, pages, strict=True)]
        lo = [low / k for low, k in zip(least, kk, strict=True)]
        hi = [m / k for m, k in zip(most, kk, strict=True)]
        free = [p * HOUR / k for p, k in zip(pages, kk, strict=True)]
        by_lo = sorted(range(len(lo)), key=lo.__getitem__)
        by_hi = sorted(range(len(hi)), key=hi.__getitem__)
        self.lo, self.hi = [lo[k] for k in by_lo], [hi[k] for k in by_hi]
        # by lo: the spend at their least of those from j on, and the part between the bounds of those before j;
        # by hi: the spend at their most of those before h, and their part between the bounds
        self.least_after = _suffix([pages[k] * HOUR / least[k] for k in by_lo])
        self.free_lo = _prefix([free[k] for k in by_lo])
        self.most_before = _prefix([pages[k] * HOUR / most[k] for k in by_hi])
        self.free_hi = _prefix([free[k] for k in by_hi])
        self.points = sorted(self.lo + self.hi)

    def _parts(self, s: float) -> tuple[float, float]:
        """The spend at ``s`` as ``held + free / s``."""
        j, h = bisect.bisect_left(self.lo, s), bisect.bisect_right(self.hi, s)
        return (self.fixed + self.least_after[j] + self.most_before[h], self.free_lo[j] - self.free_hi[h])

    def spend(self, s: float) -> float:
        held, free = self._parts(s)
        return held + free / s

    def least_root(self, budget: float) -> float:
        """The least ``s`` at which the spend is within ``budget`` (the greatest bound, if none)."""
        points = self.points
        if not points or self.spend(min(TINY, points[0])) <= budget:
            return min(TINY, points[0]) if points else TINY
        low, high = 0, len(points) - 1  # the first point at which the spend is within the budget
        if self.spend(points[high]) > budget:
            return points[high]
        while low < high:
            middle = (low + high) // 2
            if self.spend(points[middle]) <= budget:
                high = middle
            else:
                low = middle + 1
        left, right = (points[low - 1] if low > 0 else 0.0), points[low]
        held, free = self._parts((left + right) / 2)  # constant on the open segment
        room = budget - held
        return max(left, min(right, free / room)) if free > 0 and room > 0 else right


def _prefix(values: list[float]) -> list[float]:
    return [0.0, *itertools.accumulate(values)]


def _suffix(values: list[float]) -> list[float]:
    return [*itertools.accumulate(reversed(values), initial=0.0)][::-1]


def fleet_budget(settings: Settings, client: redis.Redis) -> float | None:
    """The requests an hour the schedule may plan: SCHEDULER_BUDGET_SHARE of the addresses' budgets now (a 429's
    cut included); None without a rate limit (CRAWL_RATE_LIMIT=0: no budget to plan)."""
    if not settings.crawl_rate_limit:
        return None
    per_minute = sum(b.limit for b in RequestBudget(settings.crawl_rate_limit, lambda: client)
                     .all(rate_limit.addresses(settings)))
    return per_minute * 60.0 * settings.scheduler_budget_share


class CostStore:
    """Every IP's ``CrawlCost`` (one hash), and the price set from them."""

    def __init__(self, client: redis.Redis) -> None:
        self.client = client

    def put(self, ip_id: int, cost: CrawlCost) -> None:
        self.client.hset(keys.CRAWL_COSTS, str(ip_id), cost.encode())

    def remove(self, ip_id: int) -> None:
        self.client.hdel(keys.CRAWL_COSTS, str(ip_id))

    def columns(self, now: float) -> Costs:
        """The costs renewed within COST_TTL as columns, parsed in one pass over all of them; where any cannot be
        read, one by one (``all``)."""
        raw: list[bytes] = list(self.client.hvals(keys.CRAWL_COSTS))
        tokens = b" ".join(raw).split()
        try:
            numbers = list(map(float, tokens)) if len(tokens) == FIELDS * len(raw) else None
        except ValueError:
            numbers = None
        if numbers is None or not _valid(numbers):
            return Costs.of(self.all(now).values())
        flow, pages, least, most, made, seen, outran = (numbers[k::FIELDS] for k in range(FIELDS))
        if min(made, default=now) < now - COST_TTL:
            keep = [k for k, t in enumerate(made) if now - t <= COST_TTL]
            flow, pages, least, most, seen, outran = ([column[k] for k in keep]
                                                      for column in (flow, pages, least, most, seen, outran))
        return Costs(flow, pages, least, most, seen, outran)

    def all(self, now: float) -> dict[int, CrawlCost]:
        """The costs renewed within COST_TTL (an unreadable one is left out, and said)."""
        out: dict[int, CrawlCost] = {}
        raw: Mapping[bytes, bytes] = self.client.hgetall(keys.CRAWL_COSTS)
        for field, value in raw.items():
            try:
                cost = CrawlCost.decode(value)
            except ValueError:
                logger.warning("crawl cost of IP %s unreadable (%r): left out of the planning", field, value[:80])
                continue
            if now - cost.at <= COST_TTL:
                out[int(field)] = cost
        return out

    def price(self) -> Price | None:
        raw = self.client.get(keys.CRAWL_PRICE)
        if raw is None:
            return None
        try:
            return Price(**json.loads(raw))
        except (ValueError, TypeError):
            logger.warning("crawl price unreadable (%r): the IPs' own intervals stand", raw[:80])
            return None

    def set_price(self, price: Price) -> None:
        self.client.set(keys.CRAWL_PRICE, json.dumps(asdict(price)))

    def clear_price(self) -> None:
        self.client.delete(keys.CRAWL_PRICE)


class RelistReads:
    """The requests the reads back (``lib.market.page_plans.relists_read``) and the item checks
    (``lib.crawling.item_read``) for undecided relists spend, by hour, fleet-wide: one hash, kept two days. They
    follow the undecided listings, whatever the IPs' intervals, so the planner takes their mean over the last day off
    the budget before it plans the intervals."""

    KEPT = 48

    def __init__(self, client: redis.Redis) -> None:
        self.client = client

    def record(self, at: float, requests: float) -> None:
        hour = int(at // HOUR)
        self.client.hincrbyfloat(keys.RELIST_READS, str(hour), requests)
        old = [f for f in self.client.hkeys(keys.RELIST_READS) if not f.isdigit() or int(f) < hour - self.KEPT]
        if old:
            self.client.hdel(keys.RELIST_READS, *old)

    def per_hour(self, now: float) -> float:
        """The requests an hour they spent over the 24 hours before ``now``."""
        hour = int(now // HOUR)
        spent: Mapping[bytes, bytes] = self.client.hgetall(keys.RELIST_READS)
        total = 0.0
        for field, value in spent.items():
            try:
                if hour - 24 <= int(field) < hour:
                    total += float(value)
            except ValueError:
                continue
        return total / 24


def price_if_due(settings: Settings, client: redis.Redis, now: float) -> Price | None:
    """Set the price from every IP's cost and the fleet's budget, when the last one is PRICE_EVERY old (the
    scheduler's tick); the price set, or None when it was not due. Without a budget the price is removed: the
    IPs' own intervals stand."""
    store = CostStore(client)
    last = store.price()
    if last is not None and 0 <= now - last.at < PRICE_EVERY:
        return None
    budget = fleet_budget(settings, client)
    if budget is None:
        store.clear_price()
        return None
    price = plan(store.columns(now), budget, at=now,
                 sold=(settings.scheduler_pages_sold, spare_sold_pages(settings)),
                 fixed=RelistReads(client).per_hour(now))
    store.set_price(price)
    if price.over and (last is None or not last.over):  # said once, when it starts
        logger.warning("the IPs' longest intervals spend %.0f requests an hour, over the budget of %.0f: the rate "
                       "limit holds the rest (more addresses, or a longer SCHEDULER_MAX_INTERVAL)",
                       price.planned, price.budget)
    return price
