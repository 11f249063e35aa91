"""Title/content pools on a Redis Cluster: the pop script moves an id from a pool's list to its handed set.

The very tests of ``tests/test_pool.py``, collected here again (with their fixtures): this package's ``env``
puts application state on a real three-master Redis Cluster, so each runs the production code against the
cluster client and the cluster's slot rules (a script or transaction across slots fails there).
"""

from ..test_pool import (  # noqa: F401  (imported to be collected here)
    test_consumer_triggers_one_fill_and_batches_mark_used_through_the_broker,
    test_eight_consumers_with_concurrent_fills_hand_out_every_row_once,
    test_fill_takes_newest_batch_first_and_pops_fifo,
    test_lost_pool_is_recovered,
    test_refill_after_partial_consumption_pushes_no_duplicates,
    test_two_fillers_racing_fill_once,
)
