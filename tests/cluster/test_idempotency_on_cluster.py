"""Idempotency on a Redis Cluster: a message's effect happens once.

The very tests of ``tests/test_idempotency.py``, collected here again (with their fixtures): this package's ``env``
puts application state on a real three-master Redis Cluster, so each runs the production code against the
cluster client and the cluster's slot rules (a script or transaction across slots fails there).
"""

from ..test_idempotency import (  # noqa: F401  (imported to be collected here)
    test_custom_key_and_own_ttl_per_key,
    test_redelivered_message_is_skipped_and_acked,
    test_two_copies_at_the_same_moment_take_effect_once,
)
