"""Malformed messages go to the dead-letter queue with their reason; the worker keeps going."""

import os
import uuid

import dramatiq
import msgpack
from dramatiq import Message

from lib.core.redis_client import state_redis
from lib.core.settings import load_settings, use_settings
from lib.messaging.broker import build_broker
from lib.messaging.dead_letters import DeadLetters

from .helpers import wait_for


def test_garbage_is_dead_lettered_and_valid_messages_still_processed(env, start_worker):
    env["MESSAGE_MAX_BYTES"] = "65536"
    settings = load_settings(env)
    use_settings(settings)
    broker = build_broker(settings)
    dramatiq.set_broker(broker)
    r = state_redis(settings)

    @dramatiq.actor(broker=broker, queue_name="work")
    def count(n: int, label: str = "") -> None:
        r.rpush("seen", n)

    def raw(payload: bytes) -> None:
        broker.do_enqueue("work", str(uuid.uuid4()), payload)

    count.send(1)
    raw(os.urandom(200))                                         # random bytes
    raw(b"\x92\x01\x02")                                        # msgpack, but not a map
    raw(msgpack.packb({"hello": "world"}))                      # a map, but not a message
    raw(b"\x00" * 70_000)                                       # over MESSAGE_MAX_BYTES
    count.send(2)
    broker.enqueue(Message(queue_name="work", actor_name="no_such_actor", args=(), kwargs={}, options={}))
    broker.enqueue(Message(queue_name="work", actor_name="count", args=("two",), kwargs={}, options={}))
    broker.enqueue(Message(queue_name="work", actor_name="count", args=(), kwargs={"m": 1}, options={}))
    count.send(3)

    start_worker(broker, threads=2)
    letters = DeadLetters.for_broker(broker, broker.reasons)
    dead = wait_for(lambda: len(letters.list("work")) == 7 and letters.list("work"), what="7 dead letters")
    wait_for(lambda: sorted(int(x) for x in r.lrange("seen", 0, -1)) == [1, 2, 3], what="valid messages")

    reasons = sorted(d.reason for d in dead)
    assert sum("undecodable message" in x for x in reasons) == 4
    assert any("not valid msgpack" in x for x in reasons)
    assert any("not a map" in x for x in reasons)
    assert any("missing" in x for x in reasons)
    assert any("over MESSAGE_MAX_BYTES" in x for x in reasons)
    assert any("ActorNotFound" in x and "no_such_actor" in x for x in reasons)
    assert any("argument 'n' of count must be int, got str 'two'" in x for x in reasons)
    assert any("missing a required argument: 'n'" in x for x in reasons)

    # the worker is still up: a message sent now is processed
    count.send(4)
    wait_for(lambda: b"4" in r.lrange("seen", 0, -1), what="a message after the garbage")
    broker.close()
    use_settings(None)


def test_bad_input_to_a_production_actor_is_one_line_with_its_reason(broker, app_actors, processed, start_worker,
                                                                     caplog):
    """A ``BadMessage`` (here an item with an unknown status, and arguments that do not fit) is dead-lettered at
    once and logged as one WARNING line with the reason, not as an "unhandled exception" traceback."""
    import logging

    caplog.set_level(logging.INFO)
    item = {"source_id": "m1", "title": "t", "price": 100, "status": "stolen", "created": 1.0, "updated": 1.0}
    app_actors.process_result.send(ip_id=1, task_id="bad-1", crawled_at=1.0, items=[item])
    app_actors.process_result.send_with_options(args=(), kwargs={"ip_id": "one"})
    start_worker(broker, queues=["pipeline"])
    letters = DeadLetters.for_broker(broker, broker.reasons)
    wait_for(lambda: len(letters.list("pipeline")) == 2, what="2 dead letters")
    wait_for(lambda: processed.failed["process_result"] == 2, what="both failures reported")
    noisy = [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert noisy == [], [r.getMessage() for r in noisy]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 2, warnings
    assert any("status must be one of" in w and "outcome=failed" in w for w in warnings), warnings
    assert any("ip_id" in w and "outcome=failed" in w for w in warnings), warnings
