"""Retries with backoff, then the dead-letter queue, then the dead-letter tool (Redis broker)."""

import time

import dramatiq

from lib.core.errors import BadMessage
from lib.core.redis_client import state_redis
from lib.messaging.dead_letters import DeadLetters

from .helpers import run_cli, wait_for


def test_failing_message_is_retried_then_dead_lettered_then_requeued(broker, settings, env, start_worker):
    r = state_redis(settings)

    @dramatiq.actor(broker=broker, queue_name="work")
    def flaky(n: int) -> None:
        r.incr("attempts")
        if not r.exists("healed"):
            raise RuntimeError(f"boom {n}")
        r.incr("succeeded")

    message = flaky.send(7)
    start_worker(broker)
    letters = DeadLetters.for_broker(broker, broker.reasons)
    dead = wait_for(lambda: letters.list("work"), what="the message in the dead-letter queue")
    assert int(r.get("attempts")) == 1 + settings.max_retries
    assert [d.message_id for d in dead] == [message.message_id]
    assert dead[0].reason == "RuntimeError: boom 7"
    assert dead[0].actor == "flaky" and dead[0].message.args == (7,)

    result = run_cli(env, "deadletters", "list", "--queue", "work")
    assert result.returncode == 0, result.stderr
    assert "RuntimeError: boom 7" in result.stdout

    r.set("healed", 1)
    result = run_cli(env, "deadletters", "requeue", message.message_id)
    assert result.returncode == 0, result.stderr
    wait_for(lambda: r.get("succeeded") == b"1", what="the requeued message to succeed")
    assert letters.list("work") == []
    # retries were reset: it ran once more, not refused as exhausted
    assert int(r.get("attempts")) == 2 + settings.max_retries


def test_bad_input_is_not_retried(broker, settings, start_worker):
    r = state_redis(settings)

    @dramatiq.actor(broker=broker, queue_name="work")
    def picky(value: str) -> None:
        r.incr("calls")
        raise BadMessage(f"cannot parse {value!r}")

    picky.send("???")
    start_worker(broker)
    letters = DeadLetters.for_broker(broker, broker.reasons)
    dead = wait_for(lambda: letters.list("work"), what="dead letter")
    assert r.get("calls") == b"1"
    assert "cannot parse '???'" in dead[0].reason


def test_per_actor_retry_override(broker, settings, start_worker):
    r = state_redis(settings)

    @dramatiq.actor(broker=broker, queue_name="work", max_retries=1)
    def once_more() -> None:
        r.incr("calls")
        raise RuntimeError("no")

    once_more.send()
    start_worker(broker)
    letters = DeadLetters.for_broker(broker, broker.reasons)
    wait_for(lambda: letters.list("work"), what="dead letter")
    assert r.get("calls") == b"2"


def test_purge(broker, settings, env, start_worker):
    @dramatiq.actor(broker=broker, queue_name="work", max_retries=0)
    def fails() -> None:
        raise RuntimeError("x")

    for _ in range(3):
        fails.send()
    start_worker(broker)
    letters = DeadLetters.for_broker(broker, broker.reasons)
    wait_for(lambda: len(letters.list("work")) == 3, what="3 dead letters")
    result = run_cli(env, "deadletters", "purge", "--queue", "work")
    assert "3 dead letter(s) purged" in result.stdout, result.stderr
    assert letters.list() == []


def test_time_limit_per_actor(broker, settings, start_worker):

    r = state_redis(settings)

    @dramatiq.actor(broker=broker, queue_name="work", time_limit=300, max_retries=0)
    def too_slow() -> None:
        r.incr("started")
        for _ in range(100):
            time.sleep(0.05)  # work that outlasts the time limit (the behaviour under test)
        r.incr("finished")

    too_slow.send()
    start_worker(broker)
    letters = DeadLetters.for_broker(broker, broker.reasons)
    dead = wait_for(lambda: letters.list("work"), timeout=20, what="the timed-out message dead-lettered")
    assert "TimeLimitExceeded" in dead[0].reason
    assert r.get("started") == b"1" and r.get("finished") is None


def test_one_structured_event_line_per_message(broker, settings, start_worker, caplog):
    import logging

    r = state_redis(settings)

    @dramatiq.actor(broker=broker, queue_name="work", max_retries=0)
    def crawlish(ip_id: int, task_id: str) -> None:
        if task_id == "bad":
            raise RuntimeError("nope")
        r.incr("ok")

    with caplog.at_level(logging.INFO, logger="animetop.events"):
        crawlish.send(3, "t-1")
        crawlish.send(4, "bad")
        start_worker(broker)
        letters = DeadLetters.for_broker(broker, broker.reasons)
        wait_for(lambda: letters.list("work") and r.get("ok"), what="both messages handled")

        def lines() -> list[str]:
            return [rec.getMessage() for rec in caplog.records if rec.name == "animetop.events"]

        wait_for(lambda: sum("task_id=t-1" in x or "task_id=bad" in x for x in lines()) >= 2,
                 what="the event lines of both")
    lines = lines()
    ok = [x for x in lines if "task_id=t-1" in x]
    bad = [x for x in lines if "task_id=bad" in x]
    assert len(ok) == 1 and "actor=crawlish" in ok[0] and "ip_id=3" in ok[0] and "outcome=ok" in ok[0]
    assert "duration_ms=" in ok[0]
    assert len(bad) == 1 and "outcome=failed" in bad[0] and 'error="RuntimeError: nope"' in bad[0]
