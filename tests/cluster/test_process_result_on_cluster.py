"""process_result on a Redis Cluster: item states (one IP's in one slot), statistics, exactly-once, caches.

The very tests of ``tests/test_process_result.py``, collected here again (with their fixtures): this package's ``env``
puts application state on a real three-master Redis Cluster, so each runs the production code against the
cluster client and the cluster's slot rules (a script or transaction across slots fails there).
"""

from ..test_process_result import (  # noqa: F401  (imported to be collected here)
    clock,
    ip,
    proc,
    test_a_newer_result_before_an_older_ones_redis_write_counts_nothing_twice,
    test_an_older_result_never_moves_an_item_back,
    test_closed_loop_reschedules_from_the_new_weight,
    test_crash_at_any_step_then_redelivery_equals_a_clean_run,
    test_duplicate_delivery_counts_once,
    test_every_transition,
    test_first_crawl_is_a_baseline,
    test_inflow_is_listings_created_since_the_baseline,
    test_redis_wiped_counts_nothing_twice,
    test_scripted_sequence_matches_hand_computed_statistics,
)
