"""Each address's request budget on a Redis Cluster: the cut is one script over one key (its slot), the set of cut
addresses another key, and the minute counts a pipeline over one key each.

The very tests of ``tests/crawling/test_budget.py``, collected here again (with their fixtures): this package's
``env`` puts application state on a real three-master Redis Cluster.
"""

from ..crawling.test_budget import (  # noqa: F401  (imported to be collected here)
    test_a_429_halves_the_budget_and_it_climbs_back_by_one_a_minute,
    test_status_and_metrics_show_each_address_budget_and_its_loads,
    test_the_429s_of_loads_already_under_way_cut_once,
    test_the_budget_is_per_address_shared_by_every_process_and_never_below_one,
    test_the_rate_limit_spends_the_budget_as_it_is_now,
)
