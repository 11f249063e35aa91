"""The fleet-wide crawl rate limit on a Redis Cluster: Dramatiq's window limiter WATCHes a window's buckets in a
transaction, which the cluster allows only within one slot (the window's hash tag).

The very tests of ``tests/test_crawl_rate_limit.py``, collected here again (with their fixtures): this
package's ``env`` puts application state on a real three-master Redis Cluster.
"""

from ..test_crawl_rate_limit import (  # noqa: F401  (imported to be collected here)
    test_a_full_window_makes_page_loads_wait_and_say_so,
    test_one_window_shared_by_every_crawler,
    test_racing_crawlers_take_exactly_the_limit,
)
