"""Retries with backoff, then the dead-letter queue, then the dead-letter tool (Redis broker)."""

import logging
import time

import dramatiq
import pendulum
import pytest
from periodiq import cron

from lib.app import setup
from lib.core.errors import BadMessage
from lib.core.redis_client import state_redis
from lib.core.settings import load_settings, use_settings
from lib.messaging.broker import NAMESPACE
from lib.messaging.dead_letters import DeadLetters

from .conftest import ProcessedCounter
from .helpers import RedisServer, run_cli, wait_for


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


# == a state outage (lib.core.state_errors) ====================================================================

@pytest.fixture
def state_server(tmp_path):
    """A state Redis of the test's own, not started yet: the outage is there from the first message."""
    server = RedisServer(tmp_path / "state")
    yield server
    server.stop()


@pytest.fixture
def outage_app(env, state_server):
    """Settings and broker whose application state is ``state_server`` (the broker stays on the suite's Redis)."""

    def build(**overrides: str):
        settings = load_settings({**env, "REDIS_URL": state_server.url, **overrides})
        use_settings(settings)
        return settings, setup(settings)

    built = []

    def make(**overrides: str):
        built.append(build(**overrides))
        return built[-1]

    yield make
    for _, broker in built:
        broker.close()
    use_settings(None)


def errors_in(caplog) -> list[str]:
    return [f"{r.levelname} {r.name}: {r.getMessage()}" for r in caplog.records if r.levelno >= logging.ERROR]


def test_a_state_outage_is_ridden_out_without_spending_retries(outage_app, state_server, start_worker, caplog):
    """The idempotency middleware cannot reach the state: StateUnavailable. An actor with no retries at all
    (``max_retries=0``, as the periodic ones have) is run again with backoff until the state is back, and then
    once: no dead letter, no ERROR line."""
    settings, broker = outage_app()
    counter = ProcessedCounter()
    broker.add_middleware(counter)

    @dramatiq.actor(broker=broker, queue_name="work", max_retries=0)
    def touch() -> None:
        state_redis(settings).incr("touched")

    touch.send()
    start_worker(broker)
    wait_for(lambda: counter.failed["touch"] >= 3, timeout=30, what="the message to meet the outage three times")
    state_server.start()
    wait_for(lambda: counter.processed["touch"] == 1, timeout=30, what="the message to run once the state is back")
    assert state_redis(settings).get("touched") == b"1"
    assert DeadLetters.for_broker(broker, broker.reasons).list() == []
    assert errors_in(caplog) == []

    def events() -> list[str]:
        return [r.getMessage() for r in list(caplog.records)
                if r.name == "animetop.events" and "actor=touch" in r.getMessage()]

    # the event line is written by a hook that may run after the counter's: wait for it, not for the count
    wait_for(lambda: any("outcome=ok" in e for e in events()), timeout=10, what="the message's line of its run")
    assert all("outcome=retry" in e and "StateUnavailable" in e for e in events()[:-1]) and "outcome=ok" in events()[-1]


def test_a_periodic_tick_that_meets_a_state_outage_is_left_to_the_next_tick(outage_app, state_server, start_worker,
                                                                            caplog):
    settings, broker = outage_app()
    counter = ProcessedCounter()
    broker.add_middleware(counter)

    @dramatiq.actor(broker=broker, queue_name="work", periodic=cron("* * * * *"), max_retries=2)
    def every_minute() -> None:
        state_redis(settings).incr("ticks")

    def tick():  # as periodiq sends it
        every_minute.send_with_options(scheduled_at=str(pendulum.now().replace(microsecond=0)))

    tick()
    start_worker(broker)
    wait_for(lambda: counter.failed["every_minute"] == 1, timeout=30, what="the tick to meet the outage")
    broker.join("work", timeout=10_000)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING
                and "every_minute" in r.getMessage()]
    assert len(warnings) == 1 and "next tick" in warnings[0], warnings
    assert counter.failed["every_minute"] == 1  # not run again: the next tick does the work
    state_server.start()
    time.sleep(1.1)  # periodiq's ticks are a second apart at least (their scheduled_at, the idempotency key)
    tick()
    wait_for(lambda: counter.processed["every_minute"] == 1, timeout=30, what="the next tick to run")
    assert state_redis(settings).get("ticks") == b"1"
    assert DeadLetters.for_broker(broker, broker.reasons).list() == []
    assert errors_in(caplog) == []
    events = [r.getMessage() for r in caplog.records if r.name == "animetop.events"]
    assert any("actor=every_minute" in e and "outcome=next_tick" in e for e in events)


@pytest.mark.slow  # waits out the tolerance; the fast tier keeps the outage ridden out
def test_an_outage_longer_than_the_tolerance_spends_retries_and_pages(outage_app, state_server, start_worker,
                                                                      caplog):
    settings, broker = outage_app(STATE_OUTAGE_TOLERANCE="1s")

    @dramatiq.actor(broker=broker, queue_name="work", max_retries=1)
    def touch() -> None:
        state_redis(settings).incr("touched")

    started = time.monotonic()
    message = touch.send()
    start_worker(broker)
    wait_for(lambda: broker.client.zcard(f"{NAMESPACE}:work.XQ"), timeout=30, what="the message dead-lettered")
    assert time.monotonic() - started > 1.0  # not before the tolerance ran out
    state_server.start()  # the dead-letter tool reads the reasons from the state
    dead = DeadLetters.for_broker(broker, broker.reasons).list("work")
    assert [d.message_id for d in dead] == [message.message_id]
    errors = errors_in(caplog)
    assert any("longer than STATE_OUTAGE_TOLERANCE" in e for e in errors), errors
    assert any("dead-lettered message" in e for e in errors), errors
