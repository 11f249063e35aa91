"""``animetop schedule pause|resume|status``: an operator stops the crawls being sent and starts them again."""

from __future__ import annotations

from lib.core.redis_client import state_redis
from lib.messaging.queues import CRAWL
from lib.scheduling.tick import Scheduler

from ..helpers import run_cli


def crawls_queued(broker) -> int:
    return broker.client.llen(f"{broker.namespace}:{CRAWL}")


def test_a_paused_schedule_sends_no_crawl_until_resumed(env, settings, broker):
    assert run_cli(env, "db", "init").returncode == 0
    assert run_cli(env, "ip", "add", "鬼滅の刃").returncode == 0  # due now
    scheduler = Scheduler(settings, state_redis(settings), broker)

    paused = run_cli(env, "schedule", "pause")
    assert paused.returncode == 0 and "paused" in paused.stdout, paused.stderr
    assert "paused" in run_cli(env, "schedule", "status").stdout
    status = run_cli(env, "status")
    assert status.returncode == 0 and "PAUSED" in status.stdout, status.stderr
    assert scheduler.tick().enqueued == [] and crawls_queued(broker) == 0

    resumed = run_cli(env, "schedule", "resume")
    assert resumed.returncode == 0, resumed.stderr
    assert "running" in run_cli(env, "schedule", "status").stdout
    assert "PAUSED" not in run_cli(env, "status").stdout
    assert scheduler.tick().enqueued == [1] and crawls_queued(broker) == 1
