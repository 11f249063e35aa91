"""Distributed locks: never two holders at once, even for a task that outlives the lock's TTL."""

import logging
import time

import dramatiq
import pytest

from lib.core.redis_client import connect, state_redis
from lib.messaging.broker import build_broker
from lib.messaging.middleware.leases import LeaseKeeper

from .helpers import RedisServer, wait_for


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


@pytest.mark.slow_on_cluster  # two worker processes; the cluster's lock scripts run in its other lock tests
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
    # every lock released: by the middleware after the actor returns, a moment after its last "done"
    wait_for(lambda: list(r.scan_iter("animetop:lock:*")) == [], timeout=10, what="every lock released")
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


def test_a_lock_whose_release_met_a_state_outage_is_taken_over_by_the_next_run_here(tmp_path):
    """A run that ends while the state is down cannot release its lock; the message runs again once the state is
    back, in this process, and must not wait the lock's whole lease for a lock nobody holds. A lock a run of this
    process still holds is respected."""
    server = RedisServer(tmp_path / "state").start()
    try:
        client = connect(server.url)
        keeper = LeaseKeeper(lambda: client)
        first = client.lock("animetop:lock:{x}", timeout=60, blocking=False, thread_local=False)
        assert keeper.acquire(client, first)
        keeper.hold(first)
        twin = client.lock("animetop:lock:{x}", timeout=60, blocking=False, thread_local=False)
        assert not keeper.acquire(client, twin)  # held by a live run of this process

        server.kill()
        assert not keeper.release(first)  # the outage: the lock stays in Redis, with its 60 s lease
        server.start()
        assert client.pttl("animetop:lock:{x}") > 50_000
        again = client.lock("animetop:lock:{x}", timeout=60, blocking=False, thread_local=False)
        assert keeper.acquire(client, again)  # at once
        assert keeper.release(again) and not client.exists("animetop:lock:{x}")
    finally:
        server.stop()


def test_a_held_lock_that_vanished_from_the_state_is_taken_back(broker, settings, caplog):
    """A failover loses the writes its replica had not received yet (a wipe, all of them): a lock taken just
    before it vanishes while its holder runs. The keeper sets it again with its token at its next re-arming,
    with a WARNING, rather than an ERROR for a lock lost to another holder."""
    client = state_redis(settings)
    keeper = LeaseKeeper(lambda: client, tick=0.05)
    lock = client.lock("animetop:lock:{vanish}", timeout=0.9, blocking=False, thread_local=False)
    assert keeper.acquire(client, lock)
    keeper.hold(lock)
    token = client.get("animetop:lock:{vanish}")
    client.delete("animetop:lock:{vanish}")
    # the keeper's thread sets the lock, then logs: wait for both, or the log is read before it is written
    wait_for(lambda: client.get("animetop:lock:{vanish}") == token
             and any("taken back" in r.getMessage() for r in caplog.records if r.levelno == logging.WARNING),
             timeout=10, what="the lock set again, with its warning")
    assert keeper.release(lock)
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
