"""The dead-letter tool on the RabbitMQ broker."""

import time
import uuid

import dramatiq
import pytest

from lib.core.redis_client import state_redis
from lib.core.settings import load_settings, use_settings
from lib.messaging.broker import build_broker
from lib.messaging.dead_letters import DeadLetters

from .conftest import RABBITMQ_URL, need_rabbitmq
from .helpers import run_cli, wait_for

pytestmark = pytest.mark.rabbitmq


@pytest.fixture
def rabbit_broker(env):
    need_rabbitmq()
    env["BROKER_URL"] = RABBITMQ_URL
    settings = load_settings(env)
    use_settings(settings)
    broker = build_broker(settings)
    dramatiq.set_broker(broker)
    yield broker, settings, env
    broker.close()
    use_settings(None)


def test_retry_dead_letter_list_requeue_purge(rabbit_broker, start_worker):
    broker, settings, env = rabbit_broker
    r = state_redis(settings)
    queue = f"rmq_{uuid.uuid4().hex[:8]}"

    @dramatiq.actor(broker=broker, queue_name=queue, max_retries=1)
    def flaky(n: int) -> None:
        r.incr("attempts")
        if not r.exists("healed"):
            raise RuntimeError(f"rabbit boom {n}")
        r.incr("succeeded")

    @dramatiq.actor(broker=broker, queue_name=queue, max_retries=0)
    def doomed() -> None:
        raise ValueError("never works")

    message = flaky.send(3)
    doomed.send()
    worker = start_worker(broker)
    letters = DeadLetters.for_broker(broker, broker.reasons)
    dead = wait_for(lambda: len(letters.list(queue)) == 2 and letters.list(queue), timeout=30,
                    what="two dead letters in RabbitMQ")
    by_actor = {d.actor: d for d in dead}
    assert by_actor["flaky"].reason == "RuntimeError: rabbit boom 3"
    assert by_actor["doomed"].reason == "ValueError: never works"
    # when RabbitMQ dead-lettered them (its x-death header), not "?"
    assert all(d.dead_at is not None and abs(d.dead_at - time.time()) < 120 for d in dead), [d.dead_at for d in dead]
    assert r.get("attempts") == b"2"
    # listing does not consume them
    assert len(letters.list(queue)) == 2

    # the CLI only sees queues its actors declare; name the test queue explicitly
    result = run_cli(env, "deadletters", "list", "--queue", queue)
    assert result.returncode == 0, result.stderr
    assert "rabbit boom 3" in result.stdout
    assert "?" not in result.stdout.splitlines()[1], result.stdout

    r.set("healed", 1)
    result = run_cli(env, "deadletters", "requeue", message.message_id, "--queue", queue)
    assert result.returncode == 0, result.stderr
    wait_for(lambda: r.get("succeeded") == b"1", timeout=30, what="the requeued message to succeed")
    remaining = letters.list(queue)
    assert [d.actor for d in remaining] == ["doomed"]
    assert letters.purge(queue) == 1
    assert letters.list(queue) == []
    worker.stop()
