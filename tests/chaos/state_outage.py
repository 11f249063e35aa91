"""A run that takes the application-state Redis away in its middle (issue 25): results of a dozen IPs flowing through
the real ``process_result`` on a real worker, every periodic actor ticking, and the checks that such an outage
cost nothing: no dead letter, no ERROR line, and exactly the end state the results define. Used by
``tests/cluster/test_failover.py`` (a master SIGKILLed, its replica takes over) and
``tests/chaos/test_redis_loss.py`` (a single server killed and started again)."""

from __future__ import annotations

import logging
import threading
import time

import pendulum

from lib.core import keys
from lib.core.clock import naive_utc
from lib.core.redis_client import state_redis
from lib.messaging.dead_letters import DeadLetters
from lib.scheduling.catalogue import Catalogue
from lib.scheduling.schedule import ScheduleStore
from lib.text_pools.pool import load_rows
from models import AppliedResult, IpStatsHourly

from ..conftest import ProcessedCounter
from ..helpers import wait_for

_NOW = time.time()
#: The hour the results fall in.
T0 = _NOW - _NOW % 3600
#: Results per IP after its baseline.
RESULTS = 6


def items(n: int) -> list[dict]:
    """The n-th result of an IP: listings s0..s{n-1} sold, n0..n{n-1} new (never seen before)."""
    base = [{"source_id": f"s{i}", "status": "sold" if i < n else "on_sale", "price": 1000 + i} for i in range(20)]
    return base + [{"source_id": f"n{i}", "status": "on_sale", "price": 500} for i in range(n)]


IPS = 12
#: Every queue but ``crawl`` (no crawler here: the crawl tasks the scheduler pushes wait there).
QUEUES = {"scheduler", "pipeline", "pool", "collect", "maintenance", "notify"}
#: How often the test sends every periodic actor's message, as periodiq does once a minute.
TICK_EVERY = 1.0


class StateOutageRun:
    """Results of ``IPS`` IPs flowing through the real ``process_result`` on a real worker while every periodic
    actor ticks; ``outage()`` (given to ``run``) takes the state away in the middle of it.

    Parameters:
      settings, broker, app_actors, start_worker: the test's fixtures.
      caplog: pytest's log capture (every record of the worker's threads).
    """

    def __init__(self, settings, broker, app_actors, start_worker, caplog) -> None:
        self.settings = settings
        self.broker = broker
        self.actors = app_actors
        self.start_worker = start_worker
        self.caplog = caplog
        self.counter = ProcessedCounter()
        broker.add_middleware(self.counter)
        self.periodic = [a for a in app_actors.ACTORS if "periodic" in a.options]
        self._ticking = threading.Event()

    def _tick(self) -> None:
        last = None
        while self._ticking.is_set():
            now = pendulum.now().replace(microsecond=0)
            if now != last:  # periodiq's scheduled_at is the tick's idempotency key: one per second at most
                for actor in self.periodic:
                    actor.send_with_options(scheduled_at=str(now))
                last = now
            time.sleep(TICK_EVERY)  # the ticks' pace, not a wait on state

    def run(self, outage) -> None:
        r = state_redis(self.settings)
        catalogue = Catalogue(ScheduleStore(r), self.settings)
        self.ips = [catalogue.add(f"作品 {i}") for i in range(IPS)]
        load_rows("titles", 1, 1, [f"t{i}" for i in range(300)])  # a pool for fill_all_pools to fill
        for ip in self.ips:
            self.actors.process_result.send(ip.id, f"{ip.id}-base", T0 + 1, items(0))
        self.start_worker(self.broker, threads=4, queues=QUEUES)
        self._ticking.set()
        ticker = threading.Thread(target=self._tick, daemon=True)
        ticker.start()
        try:
            wait_for(lambda: AppliedResult.select().count() == IPS, timeout=120, what="every baseline")
            for n in range(1, RESULTS + 1):
                for ip in self.ips:
                    self.actors.process_result.send(ip.id, f"{ip.id}-{n}", T0 + 10 * n, items(n))
            wait_for(lambda: AppliedResult.select().count() >= IPS + 6, timeout=120, what="results under way")
            self.in_progress = AppliedResult.select().count()
            self.periodic_before = {a.actor_name: self.counter.processed[a.actor_name] for a in self.periodic}
            outage()
            self.total = IPS * (RESULTS + 1)
            wait_for(lambda: AppliedResult.select().count() == self.total, timeout=180, what="every result applied")
            # every periodic actor ran to the end again after the outage
            wait_for(lambda: all(self.counter.processed[a.actor_name] > self.periodic_before[a.actor_name]
                                 for a in self.periodic), timeout=120, what="every periodic actor after the outage")
        finally:
            self._ticking.clear()
            ticker.join(timeout=10)
        for queue in QUEUES:
            self.broker.join(queue, timeout=120_000)

    def check(self) -> None:
        r = state_redis(self.settings)
        # the outage was met: messages failed on it and ran again (or were left to the next tick)
        assert sum(self.counter.failed.values()) > 0, "no message met the outage: the test proved nothing"
        assert self.in_progress < self.total  # results were still to apply when the state went
        assert DeadLetters.for_broker(self.broker, self.broker.reasons).list() == []
        errors = [f"{rec.levelname} {rec.name}: {rec.getMessage()}" for rec in self.caplog.records
                  if rec.levelno >= logging.ERROR]
        assert errors == []
        # exactly once: one ledger row per result, and from the definitions, each of s0..s5 sold once (outflow)
        # and each of n0..n5 new once (inflow) in the hour
        assert AppliedResult.select().count() == self.total
        assert len({row.task_id for row in AppliedResult.select(AppliedResult.task_id)}) == self.total
        for ip in self.ips:
            row = IpStatsHourly.get((IpStatsHourly.ip_id == ip.id) & (IpStatsHourly.hour_bucket == naive_utc(T0)))
            assert (row.inflow, row.outflow) == (RESULTS, RESULTS), ip.id
            states = {sid: r.hget(keys.item_state(ip.id, sid), "status")
                      for sid in [f"s{i}" for i in range(20)] + [f"n{i}" for i in range(RESULTS)]}
            assert states == {**{f"s{i}": b"sold" if i < RESULTS else b"on_sale" for i in range(20)},
                              **{f"n{i}": b"on_sale" for i in range(RESULTS)}}, ip.id
