"""One scheduler tick (docs/concepts/scheduling.md): turn due IPs into crawl tasks, once each, with backpressure.

periodiq fires a tick every minute; a tick that sees the next IP due sooner
than that asks for one delayed tick at that moment (the precise wake-up a
sleeping loop would give, done with a delayed message instead of a sleeping thread). A Redis
key remembers the delayed tick already on its way, so chains never multiply.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, field
from typing import Any

import redis
from dramatiq import Broker, Message

from lib.core import keys
from lib.core.clock import Clock, get_clock
from lib.core.settings import Settings
from lib.messaging.broker import enqueue_many
from lib.messaging.in_flight import InFlight
from lib.messaging.queue_stats import queue_depth
from lib.messaging.queues import CRAWL
from lib.messaging.routes import CRAWL_IP, SCHEDULE_TICK
from lib.scheduling.budget_plan import Price, price_if_due
from lib.scheduling.catalogue import Catalogue
from lib.scheduling.execution_state import ExecutionState
from lib.scheduling.schedule import CRAWL_JOB, IpDue, ScheduleStore, ip_interval, planned_times

logger = logging.getLogger(__name__)

#: periodiq's tick period: a follow-up is only needed for IPs due sooner than this.
PERIODIC_PERIOD = 60.0
#: How soon a tick stopped by backpressure looks again.
BACKPRESSURE_RECHECK = 5.0

_REQUEST_FOLLOW_UP = """
local current = redis.call('GET', KEYS[1])
local eta = tonumber(ARGV[1])
local now = tonumber(ARGV[2])
if current and tonumber(current) <= eta and tonumber(current) >= now then
  return 0
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', math.floor((eta - now + 120) * 1000))
return 1
"""


@dataclass
class TickResult:
    enqueued: list[int] = field(default_factory=list)
    already_in_flight: list[int] = field(default_factory=list)
    removed: list[int] = field(default_factory=list)
    swept: list[int] = field(default_factory=list)
    rebuilt: int = 0
    backpressure: bool = False
    paused: bool = False
    follow_up_at: float | None = None
    #: the request budget's price, when this tick set it
    price: Price | None = None


def crawl_message(ip: IpDue, task_id: str) -> Message[Any]:
    """The crawl task for one IP (consumed by the ``crawl_ip`` actor on the crawl queue)."""
    if ip.aliases:
        return CRAWL_IP.message(ip_id=ip.id, keyword=ip.keyword, task_id=task_id, aliases=list(ip.aliases))
    return CRAWL_IP.message(ip_id=ip.id, keyword=ip.keyword, task_id=task_id)


def tick_message() -> Message[Any]:
    return SCHEDULE_TICK.message()


class Scheduler:
    """The schedule of every IP, driven one tick at a time."""

    def __init__(self, settings: Settings, client: redis.Redis, broker: Broker, clock: Clock | None = None) -> None:
        self.settings = settings
        self.client = client
        self.broker = broker
        self.clock = clock or get_clock()
        self.store = ScheduleStore(client)
        self.in_flight = InFlight(client)
        self.catalogue = Catalogue(self.store, settings, self.clock)
        self.execution_state = ExecutionState(self.clock)
        self._request_follow_up = client.register_script(_REQUEST_FOLLOW_UP)

    def rebuild_if_empty(self) -> int:
        """Refill an empty schedule (fresh or wiped Redis) from the database; returns IPs scheduled."""
        if self.store.count():
            return 0
        ips = list(self.catalogue.iter_all())
        last_runs = self.execution_state.last_execution_times(CRAWL_JOB, [ip.id for ip in ips if ip.active])
        times = planned_times(ips, last_runs, self.settings, self.clock)
        self.store.schedule_many(times)
        if times:
            logger.info("schedule was empty: rebuilt %d IPs from the database", len(times))
        return len(times)

    def tick(self) -> TickResult:
        if self.store.paused():
            return TickResult(paused=True)
        now = self.clock.now()
        result = TickResult(rebuilt=self.rebuild_if_empty())
        result.swept = self._sweep_if_due(now)
        result.price = price_if_due(self.settings, self.client, now)
        batch_size = self.settings.scheduler_batch_size
        while True:
            if queue_depth(self.broker, CRAWL) > self.settings.scheduler_backpressure_threshold:
                result.backpressure = True
                break
            due = self.store.due(now, limit=batch_size)
            if not due:
                break
            self._push([ip_id for ip_id, _ in due], now, result)
            if len(due) < batch_size:
                break
        result.follow_up_at = self._follow_up(now, result)
        if result.enqueued or result.backpressure:
            logger.info("tick: %d crawls enqueued, %d already in flight, %d removed%s", len(result.enqueued),
                        len(result.already_in_flight), len(result.removed),
                        ", stopped by backpressure" if result.backpressure else "")
        return result

    def _push(self, ip_ids: list[int], now: float, result: TickResult) -> None:
        info = self.catalogue.due_info(ip_ids)
        gone = [i for i in ip_ids if i not in info or not info[i].active]
        if gone:
            self.client.zrem(self.store.key, *[str(i) for i in gone])
            result.removed.extend(gone)
        live = [info[i] for i in ip_ids if i in info and info[i].active]
        claimed = self.in_flight.claim([ip.id for ip in live], now)
        messages = [crawl_message(ip, f"{ip.id}-{int(now)}-{uuid.uuid4().hex[:8]}") for ip in live if ip.id in claimed]
        try:
            enqueue_many(self.broker, messages)
        except Exception:
            for ip_id in claimed:  # not sent: let the next tick try them again
                self.in_flight.release(ip_id)
            raise
        # Provisional next time; the crawl's result sets the exact one (closed loop).
        self.store.schedule_many({ip.id: now + ip_interval(ip, self.settings) for ip in live})
        result.enqueued.extend(ip.id for ip in live if ip.id in claimed)
        result.already_in_flight.extend(ip.id for ip in live if ip.id not in claimed)

    def _sweep_if_due(self, now: float) -> list[int]:
        last = self.client.get(keys.JANITOR_LAST_SWEEP)
        if last is not None and now - float(last) < self.settings.janitor_interval:
            return []
        self.client.set(keys.JANITOR_LAST_SWEEP, now)
        return self.in_flight.sweep(now, self.settings.janitor_timeout)

    def _follow_up(self, now: float, result: TickResult) -> float | None:
        # BACKPRESSURE_RECHECK and periodiq's period are real seconds; the schedule is in clock time
        speed = self.clock.speed
        if result.backpressure and self.store.due(now, limit=1):
            eta = now + BACKPRESSURE_RECHECK * speed
        else:
            next_time = self.store.next_time()
            if next_time is None or next_time - now >= PERIODIC_PERIOD * speed:
                return None
            eta = max(next_time, now)
        if self._request_follow_up(keys=[keys.SCHEDULE_NEXT_TICK], args=[eta, now]):
            self.broker.enqueue(tick_message(), delay=max(0, int(self.clock.real_seconds(eta - now) * 1000)))
            return eta
        return None
