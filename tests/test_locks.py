"""Distributed locks: never two holders at once, even for a task that outlives the lock's TTL."""

import time

import dramatiq

from lib.core.redis_client import state_redis
from lib.messaging.broker import build_broker

from .helpers import wait_for


def declare_guarded(b, r, *, run_for: float, on_busy: str = "retry"):
    @dramatiq.actor(broker=b, queue_name="work", actor_name="guarded", lock_key=lambda ip_id: f"ip:{ip_id}",
                    lock_ttl=600, on_lock_busy=on_busy)
    def guarded(ip_id: int) -> None:
        inside = r.incr(f"inside:{ip_id}")
        r.rpush("max_inside", inside)
        time.sleep(run_for)  # the work that holds the lock (the behaviour under test, not a wait)
        r.decr(f"inside:{ip_id}")
        r.incr("done")
    return guarded


def test_two_workers_never_hold_the_same_lock_at_once(broker, settings, start_worker):
    r = state_redis(settings)
    other = build_broker(settings)
    guarded = declare_guarded(broker, r, run_for=2.0)  # over 3x the 600 ms lease
    declare_guarded(other, r, run_for=2.0)
    for _ in range(3):
        guarded.send(42)
    guarded.send(7)  # another key runs in parallel
    start_worker(broker, threads=2)
    start_worker(other, threads=2)
    wait_for(lambda: r.get("done") == b"4", timeout=30, what="all four runs")
    assert max(int(x) for x in r.lrange("max_inside", 0, -1)) == 1
    assert list(r.scan_iter("animetop:lock:*")) == []  # every lock released
    other.close()


def test_contention_retries_later_without_spending_retries(broker, settings, start_worker):
    r = state_redis(settings)
    guarded = declare_guarded(broker, r, run_for=0.5)
    message = guarded.send(1)
    for _ in range(2):
        broker.enqueue(message.copy(message_id=f"{message.message_id}-{_}"))
    start_worker(broker, threads=3)
    wait_for(lambda: r.get("done") == b"3", timeout=30, what="three runs, one at a time")
    assert max(int(x) for x in r.lrange("max_inside", 0, -1)) == 1


def test_skip_on_busy(broker, settings, processed, start_worker):
    r = state_redis(settings)
    guarded = declare_guarded(broker, r, run_for=1.0, on_busy="skip")
    guarded.send(1)
    guarded.send(1)
    start_worker(broker, threads=2)
    wait_for(lambda: processed.processed["guarded"] + processed.skipped["guarded"] == 2, what="both handled")
    assert (processed.processed["guarded"], processed.skipped["guarded"]) == (1, 1)
    assert r.get("done") == b"1"


def test_lock_held_by_another_process_blocks(broker, settings, processed, start_worker):
    r = state_redis(settings)
    guarded = declare_guarded(broker, r, run_for=0.1)
    foreign = r.lock("animetop:lock:ip:5", timeout=1.5)
    assert foreign.acquire(blocking=False)
    guarded.send(5)
    start_worker(broker)
    wait_for(lambda: processed.failed["guarded"] >= 1, what="the message to meet the held lock")
    assert r.get("done") is None  # waited for the holder
    wait_for(lambda: r.get("done") == b"1", timeout=10, what="the run after the foreign lock lapsed")
