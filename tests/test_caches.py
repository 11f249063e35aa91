"""Every module-level cache of the application has a bound, so a process that runs for weeks does not grow with the
titles, listings or IPs it has seen (docs/benchmarks.md, "Memory")."""

import functools
import importlib
import inspect
import pkgutil

import lib

#: Unbounded caches whose keys are a fixed, small set (not data): why each is safe.
FIXED_KEYS = {
    "lib.messaging.middleware.arguments._signature": "one entry per declared actor",
}


def application_caches() -> dict[str, functools._lru_cache_wrapper]:
    found = {}
    for info in pkgutil.walk_packages(lib.__path__, "lib."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if isinstance(value, functools._lru_cache_wrapper) and value.__module__ == module.__name__:
                found[f"{module.__name__}.{name}"] = value
    return found


def test_every_cache_keyed_by_data_has_a_maximum_size():
    caches = application_caches()
    assert "lib.market.intervals.order_statistics.quantile_ranks" in caches  # the walk finds them
    unbounded = [name for name, cache in caches.items()
                 if cache.cache_parameters()["maxsize"] is None and name not in FIXED_KEYS
                 and inspect.signature(cache.__wrapped__).parameters]  # a cache of no arguments holds one value
    assert unbounded == []


def test_the_quantile_ranks_cache_stays_at_its_bound_after_more_keys_than_it_holds():
    """Keyed by a sample's size: a cache the data could grow without a bound."""
    from lib.market.intervals.order_statistics import quantile_ranks

    bound = quantile_ranks.cache_parameters()["maxsize"]
    quantile_ranks.cache_clear()
    for k in range(2 * bound):
        quantile_ranks(20, (k + 1) / (2 * bound + 1))
    assert quantile_ranks.cache_info().currsize == bound
    quantile_ranks.cache_clear()


def test_the_marker_patterns_cache_stays_at_its_bound_after_more_keys_than_it_holds():
    from lib.segments.stuffing import _marker_patterns

    bound = _marker_patterns.cache_parameters()["maxsize"]
    _marker_patterns.cache_clear()
    for k in range(2 * bound):
        _marker_patterns((f"語{k}", "検索用"))
    assert _marker_patterns.cache_info().currsize == bound
    _marker_patterns.cache_clear()
