"""The scheduler on a Redis Cluster: due IPs enqueued once, in-flight claims, rebuild, follow-up ticks.

The very tests of ``tests/test_schedule.py``, collected here again (with their fixtures): this package's ``env``
puts application state on a real three-master Redis Cluster, so each runs the production code against the
cluster client and the cluster's slot rules (a script or transaction across slots fails there).
"""

from ..test_schedule import (  # noqa: F401  (imported to be collected here)
    clock,
    scheduler,
    test_a_task_that_fails_for_good_releases_its_ip,
    test_backpressure_stops_and_resumes,
    test_disable_removes_and_a_disabled_due_ip_is_dropped,
    test_follow_up_tick_for_an_ip_due_within_the_minute_is_requested_once,
    test_janitor_releases_a_stuck_member,
    test_not_due_ips_wait,
    test_rebuild_after_redis_lost_follows_the_database,
    test_restart_with_redis_intact_changes_nothing,
    test_tick_enqueues_due_ips_once_and_moves_them_forward,
    test_two_ticks_racing_enqueue_every_due_ip_exactly_once,
)
