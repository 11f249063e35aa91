"""A master of the cluster SIGKILLed for good in the middle of a run (issue 25's trial): its replica takes over
after ``cluster-node-timeout`` (3 s here), and meanwhile the real actors on a real worker, results flowing and the
periodic actors ticking, ride it out: no dead letter, no ERROR line, and exactly the end state the results define.

The same run against a single Redis server restarted under it is ``tests/chaos/test_redis_loss.py``'s
``test_a_state_server_restart_costs_no_dead_letter_and_no_error``; the scenario is ``tests/chaos/state_outage.py``.
"""

from __future__ import annotations

import logging

import pytest

from lib.core import keys

from ..chaos.state_outage import StateOutageRun

pytestmark = pytest.mark.slow


def test_a_master_failover_costs_no_dead_letter_and_no_error(db, settings, broker, app_actors, start_worker,
                                                              redis_cluster, caplog):
    caplog.set_level(logging.INFO)
    run = StateOutageRun(settings, broker, app_actors, start_worker, caplog)
    killed: list[int] = []

    def failover() -> None:
        # the master holding the most IPs' item states dies for good; its replica takes over
        masters = [redis_cluster.master_of(keys.item_state(ip.id, "s0")) for ip in run.ips]
        victim = max(set(masters), key=masters.count)
        redis_cluster.kill(victim)
        killed.append(victim)
        redis_cluster.wait_ok(timeout=60)

    try:
        run.run(failover)
    finally:
        for port in killed:  # back as a replica, for the session's other tests
            redis_cluster.rejoin(port)
    run.check()
