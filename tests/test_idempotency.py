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
