"""Leaderboard and IP-detail caches on a Redis Cluster: filled and invalidated one group (slot) at a time.

The very tests of ``tests/test_alerts_and_read_side.py``, collected here again (with their fixtures): this
package's ``env`` puts application state on a real three-master Redis Cluster, so each runs the production code
against the cluster client and the cluster's slot rules (a script or transaction across slots fails there).
"""

from ..test_alerts_and_read_side import (  # noqa: F401  (imported to be collected here)
    test_leaderboard_order_cache_and_invalidation,
)
