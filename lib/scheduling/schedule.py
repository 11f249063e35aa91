"""The crawl schedule (docs/concepts/scheduling.md): when each IP is due (the IPs with a crawl in flight:
``lib.messaging.in_flight``)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import redis

from lib.core import keys
from lib.core.clock import Clock, to_timestamp
from lib.core.settings import Settings
from lib.crawling.selectors import PAGE_SIZE

if TYPE_CHECKING:
    from models import IpMetadata

#: Name of the crawl job in the execution-state store (param: the IP id).
CRAWL_JOB = "crawl_ip"


def interval_for(weight: float, settings: Settings) -> float:
    """clamp(BaseInterval / weight, MinInterval, MaxInterval); weight ≤ 0 means the base interval."""
    base = settings.scheduler_base_interval
    interval = base / weight if weight and weight > 0 else base
    return min(max(interval, settings.scheduler_min_interval), settings.scheduler_max_interval)


class Scheduled(Protocol):
    """What an IP's interval is read from (``models.IpMetadata``, ``IpDue``)."""

    @property
    def weight(self) -> float: ...

    @property
    def pinned_interval(self) -> float | None: ...


def ip_interval(ip: Scheduled, settings: Settings) -> float:
    """An IP's interval: the one an operator pinned (``animetop ip pin``), else ``interval_for`` its weight."""
    return ip.pinned_interval if ip.pinned_interval else interval_for(ip.weight, settings)


def interval_reason(ip: Scheduled, settings: Settings, flow: float | None = None) -> str:
    """Why ``planned_interval`` is what it is, in words an operator reads (``animetop ip list``)."""
    from lib.core.parsers import format_duration as d

    if ip.pinned_interval:
        return "pinned by an operator"
    by_flow = flow_interval(flow, settings)
    if by_flow is not None and by_flow < interval_for(ip.weight, settings):
        raw = _filled_in(flow, settings) if flow else by_flow
        held = ", held at the least interval" if raw < settings.scheduler_min_interval else ""
        return (f"flow: {flow:g} new listings an hour fill {FILL:.0%} of {settings.scheduler_pages_on_sale} pages in "
                f"{d(round(raw))}{held}")
    base, low, high = settings.scheduler_base_interval, settings.scheduler_min_interval, settings.scheduler_max_interval
    if not ip.weight or ip.weight <= 0:
        return f"weight {ip.weight:g}: the base interval {d(base)}"
    raw = base / ip.weight
    bound = f", held at the {'least' if raw < low else 'most'} interval" if not low <= raw <= high else ""
    return f"heat: weight {ip.weight:.2f}, base {d(base)} / weight = {d(round(raw))}{bound}"


#: The share of the on-sale page cap an interval's new listings may fill: the flow can double (a burst) before
#: the next crawl's pages stop reaching back to the last one.
FILL = 0.5


def flow_interval(flow: float | None, settings: Settings) -> float | None:
    """The longest interval at which ``flow`` (new listings an hour) fills ``FILL`` of the on-sale page cap, within
    SCHEDULER_MIN_INTERVAL and SCHEDULER_MAX_INTERVAL; None with no flow known."""
    if flow is None:
        return None
    if flow <= 0:
        return settings.scheduler_max_interval
    return min(max(_filled_in(flow, settings), settings.scheduler_min_interval), settings.scheduler_max_interval)


def _filled_in(flow: float, settings: Settings) -> float:
    """Seconds in which ``flow`` new listings an hour fill ``FILL`` of the on-sale page cap."""
    return FILL * settings.scheduler_pages_on_sale * PAGE_SIZE / flow * 3600.0


def planned_interval(ip: Scheduled, flow: float | None, settings: Settings) -> float:
    """An IP's interval after a crawl: the one pinned, else the shorter of its heat's (``interval_for``) and its
    flow's (``flow_interval``): a busy IP is crawled before its new listings outrun its pages."""
    if ip.pinned_interval:
        return ip.pinned_interval
    by_flow = flow_interval(flow, settings)
    by_heat = interval_for(ip.weight, settings)
    return by_heat if by_flow is None else min(by_heat, by_flow)


def longest_interval(flow: float | None, least: float, settings: Settings) -> float:
    """The longest interval the request budget may give an IP whose own interval is ``least``
    (``lib.scheduling.budget_plan``): SCHEDULER_MAX_INTERVAL, or the time its flow takes to fill the whole on-sale
    page cap if sooner (a longer one would lose listings, not only see them late); never below ``least``."""
    most = settings.scheduler_max_interval
    if flow is not None and flow > 0:
        most = min(most, settings.scheduler_pages_on_sale * PAGE_SIZE / flow * 3600.0)
    return max(most, least)


def startup_offset(ip_id: int, window: float) -> float:
    """A fixed offset in [0, window) per IP, so a rebuilt schedule spreads overdue IPs the same way every time."""
    return window * ((ip_id * 2654435761) % 2**32) / 2**32


class ScheduleStore:
    """The ZSET ``animetop:schedule:pending``: member the IP id, score its next crawl time."""

    def __init__(self, client: redis.Redis, key: str = keys.SCHEDULE_PENDING) -> None:
        self.client = client
        self.key = key

    def pause(self) -> None:
        """Stop sending crawls: ticks do nothing until ``resume``, and the chain of delayed ticks ends, so with
        the periodic scheduler stopped no tick comes again (how the demo stops before draining the crawls; an
        operator's ``animetop schedule pause``). The schedule itself is kept."""
        self.client.set(keys.SCHEDULE_PAUSED, "1")

    def resume(self) -> None:
        """Ticks send crawls again (the periodic scheduler's next tick, within a minute, restarts the chain)."""
        self.client.delete(keys.SCHEDULE_PAUSED)

    def paused(self) -> bool:
        return bool(self.client.exists(keys.SCHEDULE_PAUSED))

    def schedule(self, ip_id: int, at: float) -> None:
        """Set or move the IP's next crawl time."""
        self.client.zadd(self.key, {str(ip_id): at})

    def schedule_many(self, times: dict[int, float]) -> None:
        items = list(times.items())
        for start in range(0, len(items), 5000):
            self.client.zadd(self.key, {str(ip): at for ip, at in items[start:start + 5000]})

    def due(self, now: float, limit: int | None = None) -> list[tuple[int, float]]:
        """IPs whose time has come, earliest first: (ip id, due time)."""
        rows = self.client.zrangebyscore(self.key, "-inf", now, start=0 if limit else None,
                                         num=limit, withscores=True)
        return [(int(member), score) for member, score in rows]

    def next_time(self) -> float | None:
        rows = self.client.zrange(self.key, 0, 0, withscores=True)
        return rows[0][1] if rows else None

    def time_of(self, ip_id: int) -> float | None:
        score: float | None = self.client.zscore(self.key, str(ip_id))
        return score

    def remove(self, ip_id: int) -> None:
        self.client.zrem(self.key, str(ip_id))

    def count(self) -> int:
        return int(self.client.zcard(self.key))

    def all(self) -> dict[int, float]:
        return {int(m): s for m, s in self.client.zrange(self.key, 0, -1, withscores=True)}


@dataclass(frozen=True)
class IpDue:
    """What the schedule needs to know about one IP."""

    id: int
    keyword: str
    weight: float
    active: bool
    last_crawled_at: float | None
    #: The operator's aliases of the keyword, carried in the crawl message (the crawler counts only the listings
    #: whose titles name the keyword or one of them, and stops paging at a page with none).
    aliases: tuple[str, ...] = ()
    #: Seconds between its crawls as an operator pinned them; None: the adaptive interval.
    pinned_interval: float | None = None


def planned_times(ips: Iterable[IpDue], last_runs: dict[str, float], settings: Settings,
                  clock: Clock) -> dict[int, float]:
    """Next crawl time of each active IP when the schedule is rebuilt from the database (docs/concepts/scheduling.md):
    never run or overdue → now, spread over SCHEDULER_STARTUP_SPREAD; otherwise last run + interval."""
    now = clock.now()
    window = settings.scheduler_startup_spread
    times = {}
    for ip in ips:
        if not ip.active:
            continue
        last = last_runs.get(str(ip.id), ip.last_crawled_at)
        interval = ip_interval(ip, settings)
        if last is None or last + interval <= now:
            times[ip.id] = now + startup_offset(ip.id, window)
        else:
            times[ip.id] = last + interval
    return times


def ip_due_from_row(row: IpMetadata) -> IpDue:
    return IpDue(id=row.id, keyword=row.keyword, weight=row.weight, active=row.active,
                 last_crawled_at=to_timestamp(row.last_crawled_at), aliases=parse_aliases(row.aliases),
                 pinned_interval=row.pinned_interval)


def parse_aliases(stored: str | None) -> tuple[str, ...]:
    """An IP's aliases from their column (a JSON array of text; NULL: none)."""
    if not stored:
        return ()
    value = json.loads(stored)
    return tuple(a for a in value if isinstance(a, str)) if isinstance(value, list) else ()
