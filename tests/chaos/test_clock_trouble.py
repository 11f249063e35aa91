"""Chaos scenario 6 (issue #9): clock trouble.

a. A task that runs for several lock TTLs in a real worker keeps its lock all along (the lease keeper re-arms it
   every third of the TTL), while a second and third message with the same lock key, picked up by another
   worker process type meanwhile, wait (LockBusy: run again shortly, without spending a retry) and run only after
   it; a message with another key runs alongside. Measured from timestamps the actor stores in Redis and from
   the lock key itself, read from outside while the long task runs.
b. Crawl results of one IP reach a real worker (the ``actors`` package, the real ``process_result``) in the
   order 1, 3, 2 (2 late and out of order), each delivered twice, while a second IP gets the same results in
   order. The late result moves nothing backwards (item states in Redis and item snapshots in the database,
   the IP's last crawl, its execution state, its place in the schedule), and both IPs end with the states after
   crawl 3 and the hourly statistics of in-order application. The crawls are chosen so that the in-order
   statistics can be known whatever the order: every transition the late crawl alone witnessed is one the
   later crawl does not contradict. (What cannot be recovered: a listing first seen on sale in the late crawl
   and already sold in the newer one is counted as sold but not as new; its first_seen is the newer crawl's.)
"""

from __future__ import annotations

import json
import time
from decimal import Decimal

import dramatiq
import pytest

from lib.core import keys
from lib.core.clock import to_timestamp
from lib.core.redis_client import state_redis
from lib.messaging.broker import build_broker
from lib.messaging.dead_letters import DeadLetters
from lib.messaging.queue_stats import queue_counts
from lib.messaging.queues import MAINTENANCE, PIPELINE
from lib.scheduling.catalogue import Catalogue
from lib.scheduling.execution_state import ExecutionState
from lib.scheduling.schedule import CRAWL_JOB, ScheduleStore, interval_for
from models import AppliedResult, IpAlert, IpMetadata, IpStatsHourly, ItemSnapshot

from ..helpers import free_port, wait_for
from .flood_clock_actors import LOCK_TTL_MS, declare, guarded_lock_name, runs_key

TTL = LOCK_TTL_MS / 1000


def worker_env(env: dict, tmp_path, name: str, **extra) -> dict:
    return {**env, "WORKER_PROCESSES": "1", "WORKER_THREADS": "2", "WORKER_SHUTDOWN_TIMEOUT": "10s",
            "METRICS_PORT": str(free_port(2)), "dramatiq_prom_db": str(tmp_path / f"prometheus-{name}"), **extra}


def wait_until_up(runner, timeout: float = 120) -> list[int]:
    """The worker process and the /metrics fork Dramatiq starts only once its workers are up (a loaded CI
    machine has taken over 60 s to start both)."""
    return wait_for(lambda: len(runner.dramatiq_workers()) == 2 and runner.dramatiq_workers(), timeout=timeout,
                    what=f"the {runner.kind} process type to be up")


# -- a. a long task keeps its lock -----------------------------------------------------------------------------

def test_a_long_task_keeps_its_lock_and_the_same_key_waits(env, settings, process_types, tmp_path):
    broker = build_broker(settings)
    dramatiq.set_broker(broker)
    guarded = declare(broker)["guarded_long"]
    r = state_redis(settings)
    first = process_types("worker", worker_env(env, tmp_path, "1", ANIMETOP_CHAOS_WORKER="1"),
                          actors="tests.chaos.flood_clock_actors")
    second = process_types("worker", worker_env(env, tmp_path, "2", ANIMETOP_CHAOS_WORKER="1"),
                           actors="tests.chaos.flood_clock_actors")
    wait_until_up(first)
    wait_until_up(second)

    lock = guarded_lock_name("k")
    guarded.send("k", "long", 4.5 * TTL)
    wait_for(lambda: r.exists(lock), timeout=30, what="the long task to take its lock")
    taken = time.time()
    guarded.send("k", "short-1", 0.3)
    guarded.send("k", "short-2", 0.3)
    guarded.send("other", "other", 1.0)
    # from outside, while the long task runs: the lock stays, with the same owner, past several TTLs
    outside = []
    while time.time() - taken < 4 * TTL:
        token, pttl = r.get(lock), r.pttl(lock)
        outside.append((time.time(), token.decode() if token else None, pttl))
        time.sleep(0.05)
    wait_for(lambda: r.llen(runs_key("k")) == 3 and r.llen(runs_key("other")) == 1, timeout=60,
             what="the three runs of key k and the other one")
    records = r.lrange(runs_key("k"), 0, -1) + r.lrange(runs_key("other"), 0, -1)
    runs = {run["tag"]: run for run in map(json.loads, records)}
    long = runs["long"]

    # the long task held one lock token from its first sample to its last, with lease left at every sample
    tokens = {token for _, token, _ in long["samples"]}
    assert len(tokens) == 1 and None not in tokens, tokens
    token = tokens.pop()
    assert all(0 < pttl <= LOCK_TTL_MS for _, _, pttl in long["samples"])
    assert long["end"] - long["start"] >= 4 * TTL
    assert max(at for at, _, _ in long["samples"]) >= long["start"] + 4 * TTL  # sampled after 4 TTLs
    during = [(at, t, pttl) for at, t, pttl in outside if long["start"] + 2 * TTL < at < long["end"] - 0.1]
    assert len(during) >= 10, "too few outside samples while the long task ran"
    assert all(t == token and 0 < pttl <= LOCK_TTL_MS for _, t, pttl in during), during

    # the same key never ran twice at once: the short ones met the lock, waited, and ran after the long one
    same_key = sorted((runs[tag] for tag in ("long", "short-1", "short-2")), key=lambda run: run["start"])
    assert same_key[0]["tag"] == "long"
    for before, after in zip(same_key, same_key[1:]):
        assert before["end"] <= after["start"], (before["tag"], after["tag"])
    for tag in ("short-1", "short-2"):
        assert runs[tag]["lock_waits"] >= 1
        own = {t for _, t, _ in runs[tag]["samples"]}
        assert len(own) == 1 and None not in own and token not in own  # a lock of its own, taken afresh
    # another key was free to run meanwhile (so the order above was the lock's doing, not a lack of threads)
    assert runs["other"]["start"] < long["end"] and runs["other"]["end"] > long["start"]
    print(f"\nlock TTL {TTL}s; long task {long['end'] - long['start']:.1f}s in pid {long['pid']}; short ones "
          f"waited {runs['short-1']['lock_waits']} and {runs['short-2']['lock_waits']} times, ran in pids "
          f"{runs['short-1']['pid']}, {runs['short-2']['pid']}")

    # nothing left: every lock released, nothing dead-lettered, no runner restarted
    wait_for(lambda: not list(r.scan_iter(keys.LOCK_PATTERN)), timeout=10, what="every lock released")
    assert DeadLetters.for_broker(broker, broker.reasons).list(MAINTENANCE) == []
    for runner in (first, second):
        assert runner.proc.poll() is None
        assert "exited unexpectedly" not in runner.log.read_text(errors="replace")
    broker.close()


# -- b. a late result does not move state backwards ------------------------------------------------------------

H = 3600.0
_NOW = int(time.time())
T0 = _NOW - _NOW % H - 3 * H         # an hour boundary, three hours ago
T1, T2, T3 = T0 + 100, T0 + H + 100, T0 + H + 1900   # crawl 1 in hour 0, crawls 2 and 3 in hour 1


def item(source_id: str, status: str, price: int, created: float | None = None) -> dict:
    return {"source_id": source_id, "title": f"呪術廻戦 {source_id}", "price": price, "status": status,
            "image_url": f"https://img/{source_id}.jpg", "item_url": f"https://jp.mercari.com/item/{source_id}",
            "created": created, "updated": None}


OLD = T0 - 5000
CRAWLS = {
    1: (T1, [item("keep", "on_sale", 1000, OLD), item("sold12", "on_sale", 2000, OLD),
             item("sold23", "on_sale", 3000, OLD), item("price12", "on_sale", 4000, OLD),
             item("gone2", "on_sale", 500, OLD), item("back", "sold", 700, OLD),
             item("late_sale", "on_sale", 1500, OLD)]),
    2: (T2, [item("keep", "on_sale", 1000, OLD), item("sold12", "sold", 2000, OLD),
             item("sold23", "on_sale", 3000, OLD), item("price12", "on_sale", 3500, OLD),
             item("gone2", "on_sale", 500, OLD), item("late_sale", "sold", 1500, OLD),
             item("new2", "on_sale", 600, T2 - 100), item("only2", "on_sale", 800, T2 - 50),
             item("sold_only2", "sold", 900, T2 - 200)]),
    3: (T3, [item("keep", "on_sale", 1000, OLD), item("sold12", "sold", 2000, OLD),
             item("sold23", "sold", 3100, OLD), item("price12", "on_sale", 3500, OLD),
             item("back", "on_sale", 700, OLD), item("new2", "on_sale", 600, T2 - 100),
             item("new3", "on_sale", 250, T3 - 60)]),
}
#: (status, price, last_seen) of every listing after the three crawls, whatever their order.
FINAL = {
    "keep": ("on_sale", 1000, T3), "sold12": ("sold", 2000, T3), "sold23": ("sold", 3100, T3),
    "price12": ("on_sale", 3500, T3), "back": ("on_sale", 700, T3), "new2": ("on_sale", 600, T3),
    "new3": ("on_sale", 250, T3),
    "gone2": ("on_sale", 500, T2), "late_sale": ("sold", 1500, T2), "only2": ("on_sale", 800, T2),
    "sold_only2": ("sold", 900, T2),
}
#: first_seen where the order cannot change it (new2's is T2 in order, T3 when crawl 3 came first).
FIRST_SEEN = {**{sid: T1 for sid in ("keep", "sold12", "sold23", "price12", "gone2", "back", "late_sale")},
              "only2": T2, "sold_only2": T2, "new3": T3}
#: Hourly rows, in order of hours: (inflow, outflow, liquidity, avg, min, max sold price, samples).
#: Hour 0: crawl 1 is the baseline; sold_only2 was created in it after the baseline (inflow 1, liquidity 0).
#: Hour 1: new2, only2, new3 are created in it (inflow 3); sold12 (2000), late_sale (1500), sold_only2 (900),
#: sold23 (3100) sold, at the crawls that saw them sold (outflow 4): liquidity 4/3, average 1875.
STATS = [(1, 0, Decimal("0.0000"), None, None, None, 0),
         (3, 4, Decimal("1.3333"), Decimal("1875.00"), Decimal("900.00"), Decimal("3100.00"), 4)]


def send_crawl(process_result, ip_id: int, n: int) -> None:
    at, items = CRAWLS[n]
    process_result.send(ip_id, f"task-{ip_id}-{n}", at, items, 5)


def redis_states(r, ip_id: int) -> dict[str, dict]:
    found = {}
    for sid in FINAL:
        fields = r.hgetall(keys.item_state(ip_id, sid))
        if fields:
            found[sid] = {k.decode(): v.decode() for k, v in fields.items()}
    return found


def snapshot_states(ip_id: int) -> dict[str, tuple]:
    return {s.source_id: (s.status, s.price, s.last_seen, s.first_seen)
            for s in ItemSnapshot.select().where(ItemSnapshot.ip_id == ip_id)}


def stats(ip_id: int) -> list[tuple]:
    return [(row.inflow, row.outflow, row.liquidity_index, row.avg_price, row.min_price, row.max_price,
             row.sample_count)
            for row in IpStatsHourly.select().where(IpStatsHourly.ip_id == ip_id).order_by(IpStatsHourly.hour_bucket)]


def test_late_out_of_order_results_do_not_move_state_backwards(db, env, settings, broker, app_actors, process_types,
                                                                tmp_path):
    """The results go out through the real process_result actor; a worker process runs it."""
    r = state_redis(settings)
    catalogue = Catalogue(ScheduleStore(r), settings)
    late, ordered = catalogue.add("呪術廻戦"), catalogue.add("チェンソーマン")
    process_result = app_actors.process_result

    runner = process_types("worker", worker_env(env, tmp_path, "pipeline", WORKER_THREADS="4"))
    wait_until_up(runner)

    def applied(ip_id: int) -> set[str]:
        return {a.task_id for a in AppliedResult.select().where(AppliedResult.ip_id == ip_id)}

    def drained() -> bool:
        counts = queue_counts(broker, PIPELINE)
        return counts["ready"] == counts["delayed"] == counts["running"] == 0

    def phase(sends: list[tuple[int, int]], done: dict[int, set[int]]) -> None:
        for ip_id, n in sends:
            send_crawl(process_result, ip_id, n)
        wait_for(lambda: all(applied(ip_id) == {f"task-{ip_id}-{n}" for n in ns} for ip_id, ns in done.items())
                 and drained(), timeout=60, interval=0.2, what=f"results {done} applied and the queue drained")

    # crawl 1 of both
    phase([(late.id, 1), (ordered.id, 1)], {late.id: {1}, ordered.id: {1}})
    # the late IP gets crawl 3 (twice, and crawl 1 again); the other crawl 2
    phase([(late.id, 3), (late.id, 3), (late.id, 1), (ordered.id, 2)], {late.id: {1, 3}, ordered.id: {1, 2}})
    before_late = redis_states(r, late.id)
    snapshots_before_late = snapshot_states(late.id)
    # crawl 2 reaches the late IP at last, twice, with crawl 3 once more; the other gets crawl 3
    phase([(late.id, 2), (late.id, 2), (late.id, 3), (ordered.id, 3)], {late.id: {1, 2, 3}, ordered.id: {1, 2, 3}})

    # nothing moved backwards: every state the late crawl found newer is untouched, others only moved forward
    after_late = redis_states(r, late.id)
    for sid, state in before_late.items():
        if float(state["last_seen"]) > T2:
            assert after_late[sid] == state, sid
            assert snapshot_states(late.id)[sid] == snapshots_before_late[sid], sid
        assert float(after_late[sid]["last_seen"]) >= float(state["last_seen"]), sid

    for ip in (late, ordered):
        # item states: those after crawl 3, in Redis and in the snapshots
        states = redis_states(r, ip.id)
        assert {sid: (s["status"], int(s["price"]), float(s["last_seen"])) for sid, s in states.items()} == FINAL
        snapshots = snapshot_states(ip.id)
        assert {sid: (status, price, last_seen) for sid, (status, price, last_seen, _) in snapshots.items()} == FINAL
        for sid, first_seen in FIRST_SEEN.items():
            assert float(states[sid]["first_seen"]) == first_seen and snapshots[sid][3] == first_seen, (ip.id, sid)
        # hourly statistics of in-order application, no alerts
        assert stats(ip.id) == STATS, ip.id
        assert IpAlert.select().where(IpAlert.ip_id == ip.id).count() == 0
        # the IP's own clock: last crawl, execution state and next crawl all from crawl 3, not the late crawl 2
        row = IpMetadata.get_by_id(ip.id)
        assert to_timestamp(row.last_crawled_at) == T3, ip.id
        assert ExecutionState().last_execution_time(CRAWL_JOB, ip.id) == T3, ip.id
        assert row.weight == pytest.approx(0.8)
        assert ScheduleStore(r).time_of(ip.id) == T3 + interval_for(row.weight, settings), ip.id
    assert IpMetadata.get_by_id(late.id).weight == IpMetadata.get_by_id(ordered.id).weight
    assert new2_first_seen(r, ordered.id) == T2 and T2 <= new2_first_seen(r, late.id) <= T3

    # every duplicate was skipped, nothing dead-lettered, the worker never restarted
    assert DeadLetters.for_broker(broker, broker.reasons).list(PIPELINE) == []
    assert runner.proc.poll() is None and "exited unexpectedly" not in runner.log.read_text(errors="replace")


def new2_first_seen(r, ip_id: int) -> float:
    return float(r.hget(keys.item_state(ip_id, "new2"), "first_seen"))
