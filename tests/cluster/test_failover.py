"""A master of the cluster SIGKILLed for good in the middle of a run: its replica takes over after
``cluster-node-timeout`` (3 s here), and meanwhile the real actors on a real worker, results flowing and the
periodic actors ticking, ride it out: no dead letter, no ERROR line, and exactly the end state the results define.
On a Redis broker and on RabbitMQ; on RabbitMQ, with a short heartbeat and the run going on for three heartbeat
timeouts after the kill, RabbitMQ closes none of the run's connections for missed heartbeats.

The same run against a single Redis server restarted under it is ``tests/chaos/test_redis_loss.py``'s
``test_a_state_server_restart_costs_no_dead_letter_and_no_error``; the scenario is ``tests/chaos/state_outage.py``.
"""

from __future__ import annotations

import logging
import time
from urllib.parse import unquote, urlsplit

import pytest

from lib.core import keys
from lib.messaging.purge import purge_rabbitmq_queues

from ..chaos.state_outage import StateOutageRun
from ..conftest import IN_CI, RABBITMQ_URL, need_rabbitmq
from .rabbitmq_log import RabbitmqLog, RabbitmqLogUnavailable

pytestmark = pytest.mark.slow

#: The RabbitMQ heartbeat timeout of the run (s): RabbitMQ closes a connection silent for two to three of them.
HEARTBEAT = 5


@pytest.fixture(params=["redis", pytest.param("rabbitmq", marks=pytest.mark.rabbitmq)])
def env(request, env):
    """The cluster's environment on a Redis broker, or on RabbitMQ with a ``HEARTBEAT`` s heartbeat (its queues
    purged)."""
    if request.param == "redis":
        return env
    need_rabbitmq()
    url = f"{RABBITMQ_URL}?heartbeat={HEARTBEAT}"
    purge_rabbitmq_queues_of(url)
    return {**env, "BROKER_URL": url}


def purge_rabbitmq_queues_of(url: str) -> None:
    import pika

    purge_rabbitmq_queues(pika.URLParameters(url))


@pytest.fixture
def rabbitmq_log(env):
    """RabbitMQ's log from now on, for the virtual host of a RabbitMQ run (None on a Redis broker)."""
    parts = urlsplit(env["BROKER_URL"])
    if parts.scheme != "amqp":
        return None
    try:
        return RabbitmqLog(unquote(parts.path[1:]))
    except RabbitmqLogUnavailable as e:
        if IN_CI:
            pytest.fail(f"{e} (CI=true: RabbitMQ's view of the failover must be checked)")
        pytest.skip(str(e))


def test_a_master_failover_costs_no_dead_letter_and_no_error(db, settings, broker, app_actors, start_worker,
                                                              redis_cluster, rabbitmq_log, caplog):
    caplog.set_level(logging.INFO)
    run = StateOutageRun(settings, broker, app_actors, start_worker, caplog)
    killed: list[int] = []

    def failover() -> None:
        # the master holding the most IPs' item states dies for good; its replica takes over
        masters = [redis_cluster.master_of(keys.item_state(ip.id, "s0")) for ip in run.ips]
        victim = max(set(masters), key=masters.count)
        redis_cluster.kill(victim)
        killed.append(victim)
        silent_until = time.monotonic() + 3 * HEARTBEAT + 1
        redis_cluster.wait_ok(timeout=60)
        if rabbitmq_log is not None:
            # the run goes on past the time RabbitMQ gives a silent connection (the span under test, not a wait on
            # state): a connection whose thread waited on the state, or idled since, would be closed by now
            time.sleep(max(0.0, silent_until - time.monotonic()))

    try:
        run.run(failover)
    finally:
        for port in killed:  # back as a replica, for the session's other tests
            redis_cluster.rejoin(port)
    run.check()
    # the WARNING lines a failover costs are the state's (docs/operating/redis-cluster.md): a periodic actor's tick
    # left to its next one, a lock or claim whose release met the outage, a cache left to expire; none the broker's
    broker_side = [f"{r.name}: {r.getMessage()}" for r in caplog.records if r.levelno >= logging.WARNING
                   and (r.name.split(".")[0] in ("pika", "dramatiq") or r.name == "lib.messaging.queue_stats")]
    assert broker_side == []
    if rabbitmq_log is not None:
        assert rabbitmq_log.connections(), "RabbitMQ's log shows none of the run's connections: nothing was checked"
        assert rabbitmq_log.missed_heartbeats() == []
