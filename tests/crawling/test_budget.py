"""Each address's request budget on real Redis (lib/crawling/budget.py): a 429 halves it for the whole fleet, once
per hold, never below one page load a minute; it climbs back by one a minute to CRAWL_RATE_LIMIT; the rate limit
spends the budget as it is now; status and the metrics show it per address."""

import pytest

from lib.core import keys
from lib.core.redis_client import state_redis
from lib.core.settings import SettingsError, load_settings
from lib.crawling.budget import CUT, HOLD, PROBE_EVERY, PROBE_STEP, RequestBudget
from lib.crawling.driver import ApiResponse
from lib.crawling.page_fetch import ErrorKind, PageError, page_from_api
from lib.crawling.rate_limit import CrawlRateLimit, count_load, loads_last_minute, proxy_label
from lib.operations.status import gather, render

T = 1_800_000_000.0


class Clock:
    def __init__(self, at: float = T) -> None:
        self.at = at

    def __call__(self) -> float:
        return self.at


def budgets(settings, budget: int, clock: Clock, n: int = 1) -> list[RequestBudget]:
    """``n`` budgets as ``n`` crawler processes hold them (each its own object, one Redis)."""
    return [RequestBudget(budget, lambda: state_redis(settings), clock=clock) for _ in range(n)]


def test_the_default_budget_is_the_public_probe_s_safe_pace():
    assert load_settings({}).crawl_rate_limit == 48


def test_a_429_halves_the_budget_and_it_climbs_back_by_one_a_minute(settings):
    clock = Clock()
    (budget,) = budgets(settings, 48, clock)
    assert budget.now("direct").limit == 48 and budget.now("direct").cut_at is None
    assert budget.throttled("direct") == 24 == int(48 * CUT)
    cut = budget.now("direct")
    assert (cut.limit, cut.budget, cut.cut_at) == (24, 48, T)
    assert cut.full_at == T + (48 - 24) / PROBE_STEP * PROBE_EVERY  # 24 minutes
    clock.at = T + PROBE_EVERY - 1
    assert budget.now("direct").limit == 24
    clock.at = T + PROBE_EVERY
    assert budget.now("direct").limit == 25
    clock.at = T + 10 * PROBE_EVERY + 30
    assert budget.now("direct").limit == 34
    clock.at = cut.full_at
    back = budget.now("direct")
    assert (back.limit, back.cut_at, back.full_at) == (48, None, None)
    # the state outlives the climb by the hold at most, then Redis forgets it
    ttl = state_redis(settings).ttl(keys.crawl_budget("direct"))
    assert 0 < ttl <= (48 - 24) / PROBE_STEP * PROBE_EVERY + HOLD + 1


def test_the_429s_of_loads_already_under_way_cut_once(settings):
    clock = Clock()
    first, second = budgets(settings, 48, clock, n=2)
    assert first.throttled("direct") == 24
    clock.at = T + HOLD - 1
    assert second.throttled("direct") == 24  # granted under the old budget: not cut again
    assert first.now("direct").cut_at == T
    clock.at = T + HOLD
    assert second.throttled("direct") == 12  # from 24 + one minute's climb = 25, halved


def test_the_budget_is_per_address_shared_by_every_process_and_never_below_one(settings):
    clock = Clock()
    a, b = budgets(settings, 4, clock, n=2)
    proxy = proxy_label("http://user:secret@proxy-1:3128")
    assert a.throttled("direct") == 2
    assert b.now("direct").limit == 2 and b.now(proxy).limit == 4  # another address keeps its budget
    for step in range(1, 4):
        clock.at = T + step * HOLD
        a.throttled("direct")
    assert b.now("direct").limit == 1
    assert [x.address for x in b.all([proxy])] == sorted(["direct", proxy])  # the cut one is found by itself


def test_a_budget_of_nothing_is_refused():
    with pytest.raises(ValueError, match="at least 1"):
        RequestBudget(0, lambda: None)  # type: ignore[arg-type,return-value]


def test_the_rate_limit_spends_the_budget_as_it_is_now(settings):
    first, second = (CrawlRateLimit(4, lambda: state_redis(settings)) for _ in range(2))
    assert first.throttled(None) == 2
    assert [second.try_acquire(None) for _ in range(3)] == [True, True, False]
    assert first.try_acquire("http://proxy-2:3128")  # another address: its own window and budget
    assert CrawlRateLimit(0, lambda: state_redis(settings)).throttled(None) is None  # no limit: nothing to cut


def test_page_loads_are_counted_per_address_and_minute(settings):
    r = state_redis(settings)
    minute = T - T % 60
    for at in (minute + 1, minute + 30, minute + 59, minute + 61):
        count_load(r, "direct", at)
    assert loads_last_minute(r, "direct", minute + 60) == 3
    assert loads_last_minute(r, "direct", minute + 120) == 1
    assert loads_last_minute(r, proxy_label("http://proxy-2:3128"), minute + 60) == 0


@pytest.mark.parametrize("status, kind", [(429, ErrorKind.THROTTLED), (403, ErrorKind.BLOCKED)])
def test_a_429_is_told_from_a_block_by_its_kind(status, kind):
    with pytest.raises(PageError) as raised:
        page_from_api(ApiResponse(status, {"retry-after": "60"}, None), "https://jp.mercari.com", "on_sale")
    assert raised.value.kind is kind and raised.value.retry_after == 60
    assert kind.counts_toward_proxy_switch


def test_status_and_metrics_show_each_address_budget_and_its_loads(env, db, broker):
    settings = load_settings({**env, "CRAWL_RATE_LIMIT": "10", "PROXY_URLS": "http://proxy-1:3128"})
    r = state_redis(settings)
    proxy = proxy_label("http://proxy-1:3128")
    RequestBudget(10, lambda: r).throttled("direct")  # a crawler without its proxy, say, drew a 429
    status = gather(settings, broker, r)
    shown = {b["address"]: b for b in status["crawl_budgets"]}
    assert shown[proxy]["limit"] == 10 and shown[proxy]["cut_at"] is None
    assert shown["direct"]["limit"] == 5 and shown["direct"]["cut_at"] is not None
    text = render(status)
    assert f"  {proxy}: 0 page load(s) in the last minute, budget 10 of 10/min" in text
    assert "  direct: 0 page load(s) in the last minute, budget 5 of 10/min (cut by a 429 at " in text

    from lib.core.settings import use_settings
    from lib.operations.metrics import StateCollector
    use_settings(settings)
    try:
        families = {f.name: f for f in StateCollector().collect()}
    finally:
        use_settings(None)
    budget = {s.labels["address"]: s.value for s in families["animetop_crawl_budget_pages_per_minute"].samples}
    assert budget == {proxy: 10, "direct": 5}
    assert {s.labels["address"] for s in families["animetop_crawl_page_loads_last_minute"].samples} == {proxy, "direct"}


def test_machines_with_addresses_of_their_own_have_budgets_of_their_own(settings):
    here, there, nat = (CrawlRateLimit(2, lambda: state_redis(settings), direct=name)
                        for name in ("crawler-a", "crawler-b", "crawler-a"))
    assert here.throttled(None) == 1
    assert [nat.try_acquire(None) for _ in range(2)] == [True, False]  # the same name: one budget, one window
    assert [there.try_acquire(None) for _ in range(3)] == [True, True, False]


@pytest.mark.parametrize("raw", ["a b", "x{y}", "a" * 65])
def test_an_address_name_that_cannot_be_a_key_is_refused(raw):
    with pytest.raises(SettingsError, match="CRAWL_DIRECT_ADDRESS"):
        load_settings({"CRAWL_DIRECT_ADDRESS": raw})
    assert load_settings({"CRAWL_DIRECT_ADDRESS": "crawler-1.eu"}).crawl_direct_address == "crawler-1.eu"


def test_a_page_load_that_cannot_be_counted_still_takes_one_turn(settings):
    """The minute's count is written after the turn is taken; a Redis error there must not make the page load
    take a second turn (its waiting loop retries on Redis errors)."""
    import asyncio

    import redis

    real = state_redis(settings)

    class Uncountable:
        """The state client, refusing the count's pipeline (the window's transactions go through)."""

        def pipeline(self, transaction: bool = True):
            if not transaction:
                raise redis.ConnectionError("the count's write failed")
            return real.pipeline(transaction=True)

        def __getattr__(self, name):
            return getattr(real, name)

    uncountable = CrawlRateLimit(2, lambda: Uncountable(), patience=5)  # type: ignore[arg-type,return-value]
    assert asyncio.run(uncountable.wait_for_turn(None)) == 0.0
    assert [CrawlRateLimit(2, lambda: real).try_acquire(None) for _ in range(2)] == [True, False]


def test_the_cut_addresses_are_found_whatever_the_client_decodes(settings):
    import redis

    r = state_redis(settings)
    RequestBudget(4, lambda: r).throttled("crawler-a")
    decoding = redis.Redis.from_url(settings.redis_url, decode_responses=True)
    try:
        assert [b.address for b in RequestBudget(4, lambda: decoding).all([])] == ["crawler-a"]
    finally:
        decoding.close()
