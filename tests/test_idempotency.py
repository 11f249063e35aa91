"""A message's effect happens once, however often it is delivered."""

import threading
import time

import dramatiq
from dramatiq import Message

from lib.core.redis_client import state_redis
from lib.messaging.broker import build_broker

from .conftest import ProcessedCounter
from .helpers import wait_for


def test_redelivered_message_is_skipped_and_acked(broker, settings, processed, start_worker):
    r = state_redis(settings)

    @dramatiq.actor(broker=broker, queue_name="work")
    def effect(n: int) -> None:
        r.incr("effects")

    message = effect.send(1)
    start_worker(broker)
    wait_for(lambda: r.get("effects") == b"1", what="first delivery")
    broker.enqueue(message)  # the same message again, as after a lost ack
    broker.enqueue(message)
    wait_for(lambda: processed.skipped["effect"] == 2, what="both copies skipped")
    assert r.get("effects") == b"1"
    key = list(r.scan_iter("animetop:idem:effect:*"))
    assert len(key) == 1 and 0 < r.ttl(key[0]) <= settings.idempotency_ttl


def test_custom_key_and_own_ttl_per_key(broker, settings, processed, start_worker):
    r = state_redis(settings)

    @dramatiq.actor(broker=broker, queue_name="work", idempotency_key=lambda task_id, *_, **__: task_id,
                    idempotency_ttl=60_000)
    def apply(task_id: str, payload: int) -> None:
        r.incr(f"applied:{task_id}")

    apply.send("t1", 1)
    apply.send("t1", 2)  # a different message with the same task id
    apply.send("t2", 1)
    start_worker(broker)
    wait_for(lambda: processed.processed["apply"] + processed.skipped["apply"] == 3, what="all three handled")
    assert r.get("applied:t2") == b"1"
    assert r.get("applied:t1") == b"1"
    ttls = [r.pttl(k) for k in list(r.scan_iter("animetop:idem:apply:*"))]
    assert len(ttls) == 2 and all(0 < t <= 60_000 for t in ttls)


def test_two_copies_at_the_same_moment_take_effect_once(broker, settings, processed, start_worker):
    """Two workers (separate broker connections) get the same message at once."""
    r = state_redis(settings)
    other = build_broker(settings)
    other_processed = ProcessedCounter()
    other.add_middleware(other_processed)
    inside = threading.Barrier(2, timeout=5)

    for b in (broker, other):
        @dramatiq.actor(broker=b, queue_name="work", actor_name="slow_effect")
        def slow_effect(n: int) -> None:
            r.incr("entered")
            time.sleep(1.0)  # long enough for the other copy to arrive while this one runs (the race under test)
            r.incr("effects")

    message = Message(queue_name="work", actor_name="slow_effect", args=(1,), kwargs={}, options={})
    broker.enqueue(message)
    broker.enqueue(message)
    start_worker(broker, threads=1)
    start_worker(other, threads=1)
    wait_for(lambda: r.get("effects") == b"1", what="one effect")
    # the loser was delayed, re-run, and must now be skipped
    wait_for(lambda: processed.skipped["slow_effect"] + other_processed.skipped["slow_effect"] == 1,
             what="the other copy skipped")
    assert r.get("effects") == b"1"
    assert r.get("entered") == b"1"
    del inside
    other.close()


_HOLD_A_CLAIM = """
import sys, time
from lib.core.keys import idempotency
from lib.core.redis_client import state_redis
from lib.core.settings import get_settings
from lib.messaging.middleware.leases import LeaseKeeper

client = state_redis(get_settings())
keeper = LeaseKeeper(lambda: client)
claim = client.lock(idempotency("effect", sys.argv[1]) + ":claim", timeout=60, blocking=False, thread_local=False)
assert keeper.acquire(client, claim)
keeper.hold(claim)
print("holding", flush=True)
time.sleep(600)
"""


def _hold_claim_in_another_process(env, key: str):
    """A worker process that took the idempotency claim of ``key`` (a 60 s lease) and is in the middle of it."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    proc = subprocess.Popen([sys.executable, "-c", _HOLD_A_CLAIM, key], env={**os.environ, **env},
                            cwd=Path(__file__).parent.parent, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "holding"
    return proc


def test_a_claim_of_a_killed_worker_is_taken_over_at_once(env, broker, settings, processed, start_worker):
    """A message redelivered after its worker was SIGKILLed runs as soon as the dead holder counts as gone
    (leases.HOLDER_TTL, seconds), not after the claim's whole 60 s lease; a live holder's claim is respected."""
    import signal

    from lib.messaging.middleware.leases import HOLDER_TTL

    r = state_redis(settings)

    @dramatiq.actor(broker=broker, queue_name="work", idempotency_key=lambda task_id: task_id)
    def effect(task_id: str) -> None:
        r.rpush("effects", task_id)

    live = _hold_claim_in_another_process(env, "live")
    dead = _hold_claim_in_another_process(env, "killed")
    try:
        dead.send_signal(signal.SIGKILL)
        dead.wait()
        effect.send("killed")
        effect.send("live")
        start_worker(broker)
        # well inside the 60 s lease the dead holder's claim would otherwise keep
        wait_for(lambda: r.lrange("effects", 0, -1) == [b"killed"], timeout=HOLDER_TTL + 15,
                 what="the dead holder's message to run")
        assert processed.failed["effect"] >= 1  # the live holder's copy keeps waiting for its claim
        assert r.lrange("effects", 0, -1) == [b"killed"]
    finally:
        live.kill()
        live.wait()
