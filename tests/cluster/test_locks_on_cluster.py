"""Locks on a Redis Cluster: never two holders, leases kept alive past their TTL.

The very tests of ``tests/test_locks.py``, collected here again (with their fixtures): this package's ``env``
puts application state on a real three-master Redis Cluster, so each runs the production code against the
cluster client and the cluster's slot rules (a script or transaction across slots fails there).
"""

from ..test_locks import (  # noqa: F401  (imported to be collected here)
    test_contention_retries_later_without_spending_retries,
    test_lock_held_by_another_process_blocks,
    test_skip_on_busy,
    test_two_workers_never_hold_the_same_lock_at_once,
)
