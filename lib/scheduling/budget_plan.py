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
its bounds; the price is the least that keeps the sum within the budget (bisection: the sum falls as the price
rises). The bounds are the adaptive interval's: no shorter than the IP's interval from its heat and its flow
(``schedule.planned_interval``: with a budget to spare, nothing changes) and no longer than
SCHEDULER_MAX_INTERVAL or the time its flow takes to fill the on-sale page cap (past it, listings would be lost,
not only late). So the budget lengthens intervals only when the IPs' own intervals would spend more than it,
quiet IPs first. Where even the longest intervals spend more, the rate limit and backpressure hold the rest.

The budget is ``SCHEDULER_BUDGET_SHARE`` of the addresses' request budgets (``lib.crawling.budget``: after a
429, the cut one), an hour. Each IP's cost is kept by the worker after each result (``CostStore``: one hash
field, so the planning reads every IP's in one command), and the price is set every ``PRICE_EVERY`` seconds by
the scheduler's tick (``price_if_due``), read by the worker's closed loop (``interval_at``).
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass

import redis

from lib.core import keys
from lib.core.settings import Settings
from lib.crawling import rate_limit
from lib.crawling.budget import RequestBudget
from lib.crawling.selectors import PAGE_SIZE

logger = logging.getLogger(__name__)

HOUR = 3600.0
#: Seconds between two settings of the price: the flows it rests on move over hours.
PRICE_EVERY = 600.0
#: A cost not renewed by a result within this long is left out of the planning (an IP paused or removed).
COST_TTL = 7 * 86400.0
#: A price above 0 that lengthens no IP with a flow: only those without one go to their longest.
TINY = 1e-9


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
    """

    flow: float
    pages: float
    least: float
    most: float
    at: float
    seen: float = 1.0

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
        return f"{self.flow:.6g} {self.pages:.6g} {self.least:.6g} {self.most:.6g} {self.at:.3f} {self.seen:.4g}"

    @classmethod
    def decode(cls, raw: bytes | str) -> CrawlCost:
        text = raw.decode() if isinstance(raw, bytes) else raw
        flow, pages, least, most, at, seen = (float(v) for v in text.split())
        if not (math.isfinite(flow) and flow >= 0 and pages > 0 and 0 < least <= most and 0 <= seen <= 1):
            raise ValueError(f"not a crawl cost: {text!r}")
        return cls(flow, pages, least, most, at, seen)


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
    """

    price: float
    budget: float
    planned: float
    ips: int
    lengthened: int
    unseen: float
    at: float
    reached: float | None = None

    @property
    def over(self) -> bool:
        """Whether even the longest intervals spend more than the budget (the rate limit holds the rest)."""
        return self.planned > self.budget * (1 + 1e-9)


def plan(costs: Iterable[CrawlCost], budget: float, at: float = 0.0) -> Price:
    """The least price at which the IPs' intervals spend at most ``budget`` requests an hour (all at their
    longest, if none does)."""
    costs = list(costs)
    price = _least_price(costs, budget)
    planned = [(c, c.interval_at(price)) for c in costs]
    return Price(price=price, budget=budget, planned=sum(c.requests_per_hour(t) for c, t in planned),
                 ips=len(costs), lengthened=sum(1 for c, t in planned if t > c.least * (1 + 1e-9)),
                 unseen=sum(c.unseen(t) for c, t in planned), at=at, reached=_reached(costs))


def _reached(costs: list[CrawlCost]) -> float | None:
    flow = sum(c.flow for c in costs)
    return sum(c.flow * c.seen for c in costs) / flow if flow > 0 else None


def _least_price(costs: list[CrawlCost], budget: float) -> float:
    """Exactly, in one sweep over the IPs' bounds sorted (n log n: a bisection would compute every IP's interval
    dozens of times). In ``s = sqrt(price)`` an IP's interval is ``k s`` (``k = sqrt(2 pages / flow)`` hours)
    between ``least / k`` and ``most / k``, so between two of those bounds the spend is
    ``fixed + held + a / s``: the IPs held at a bound spend a constant, the others ``pages / (k s)`` each."""
    fixed = sum(c.flow / PAGE_SIZE for c in costs)
    if fixed + sum(c.pages * HOUR / c.least for c in costs) <= budget:
        return 0.0
    held, free = 0.0, 0.0  # the spend of the IPs held at a bound; the sum of the others' pages / k
    events: list[tuple[float, float, float]] = []  # (s, change of held, change of free)
    for c in costs:
        if c.flow <= 0:  # at its longest at any price
            held += c.pages * HOUR / c.most
            continue
        k = math.sqrt(2 * c.pages / c.flow) * HOUR
        held += c.pages * HOUR / c.least
        events.append((c.least / k, -c.pages * HOUR / c.least, c.pages * HOUR / k))
        events.append((c.most / k, c.pages * HOUR / c.most, -c.pages * HOUR / k))
    events.sort()
    s = 0.0
    for at, held_change, free_change in events:
        # on [s, at] the spend is fixed + held + free / x, falling in x: the budget is met on it if at ``at``
        if free > 0 and fixed + held + free / at <= budget:
            room = budget - fixed - held
            return (max(s, free / room) if room > 0 else at) ** 2
        if free <= 0 and fixed + held <= budget:
            return max(s, TINY) ** 2  # above 0: the IPs without a flow at their longest
        s = at
        held, free = held + held_change, max(0.0, free + free_change)
    return s ** 2  # every IP at its longest; over budget if that spends more


def fleet_budget(settings: Settings, client: redis.Redis) -> float | None:
    """The requests an hour the schedule may plan: SCHEDULER_BUDGET_SHARE of the addresses' budgets now (a 429's
    cut included); None without a rate limit (CRAWL_RATE_LIMIT=0: no budget to plan)."""
    if not settings.crawl_rate_limit:
        return None
    addresses = ([rate_limit.proxy_label(p) for p in settings.proxy_urls]
                 or [rate_limit.proxy_label(None, settings.crawl_direct_address)])
    per_minute = sum(b.limit for b in RequestBudget(settings.crawl_rate_limit, lambda: client).all(addresses))
    return per_minute * 60.0 * settings.scheduler_budget_share


class CostStore:
    """Every IP's ``CrawlCost`` (one hash), and the price set from them."""

    def __init__(self, client: redis.Redis) -> None:
        self.client = client

    def put(self, ip_id: int, cost: CrawlCost) -> None:
        self.client.hset(keys.CRAWL_COSTS, str(ip_id), cost.encode())

    def remove(self, ip_id: int) -> None:
        self.client.hdel(keys.CRAWL_COSTS, str(ip_id))

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
    price = plan(store.all(now).values(), budget, at=now)
    store.set_price(price)
    if price.over and (last is None or not last.over):  # said once, when it starts
        logger.warning("the IPs' longest intervals spend %.0f requests an hour, over the budget of %.0f: the rate "
                       "limit holds the rest (more addresses, or a longer SCHEDULER_MAX_INTERVAL)",
                       price.planned, price.budget)
    return price
