"""The fleet-wide crawl rate limit on real Redis: one window per address shared by every process, and a page load
that finds it full waits, visibly (status, metrics' gauge), without loading. The two-crawler run against the
simulator is in tests/test_crawl_rate_limit_fleet.py."""

import asyncio
import threading
import time

import pytest

from lib.core import keys
from lib.core.redis_client import connect, state_redis
from lib.core.settings import load_settings
from lib.crawling.crawl import Crawler
from lib.crawling.rate_limit import WINDOW_SECONDS, CrawlRateLimit, NoTurn, proxy_label, waiting
from lib.operations.status import gather, render

from .helpers import free_port, run_cli, simulator_crawl_env, wait_for

#: Slack on a bound, for a loaded machine: the bound is asserted, not the speed.
SLACK = 3.0
#: What one try costs against an unreachable Redis: the state client's retries (lib/core/redis_client.py).
CLIENT_RETRIES = 2.5


def limits(settings, n: int, limit: int) -> list[CrawlRateLimit]:
    """``n`` limiters as ``n`` crawler processes would have them (each its own, sharing the Redis)."""
    return [CrawlRateLimit(limit, lambda: state_redis(settings)) for _ in range(n)]


def test_one_window_shared_by_every_crawler(settings):
    a, b = limits(settings, 2, limit=5)
    turns = [x.try_acquire(None) for x in (a, b, a, b, a, b, a)]
    assert turns == [True] * 5 + [False] * 2
    assert a.try_acquire("http://user:secret@proxy-1:3128")  # another proxy has a window of its own
    assert not b.try_acquire(None)


def test_racing_crawlers_take_exactly_the_limit(settings):
    crawlers = limits(settings, 4, limit=25)
    taken = []
    start = threading.Barrier(4)

    def race(limit: CrawlRateLimit) -> None:
        start.wait()
        taken.extend(limit.try_acquire(None) for _ in range(20))

    threads = [threading.Thread(target=race, args=(c,)) for c in crawlers]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert taken.count(True) == 25


def test_window_keys_share_a_slot_and_carry_no_credentials():
    label = proxy_label("http://user:secret@proxy-1:3128")
    assert "secret" not in label and "proxy" not in label and label != proxy_label("http://proxy-2:3128")
    key = keys.crawl_rate(label)
    assert key.endswith("{" + label + "}")  # Dramatiq appends @<second> after the tag
    assert WINDOW_SECONDS == 61


def test_a_full_window_makes_page_loads_wait_and_say_so(settings, env, db, broker):
    settings_env = {**env, "CRAWL_RATE_LIMIT": "2"}
    first, second = limits(settings, 2, limit=2)
    waited: list[float] = []
    second.observe = waited.append
    assert asyncio.run(first.wait_for_turn(None)) == 0.0
    assert asyncio.run(first.wait_for_turn(None)) == 0.0

    loop = asyncio.new_event_loop()
    task = loop.create_task(second.wait_for_turn(None))
    runner = threading.Thread(target=loop.run_until_complete, args=(asyncio.wait([task]),))
    runner.start()
    try:
        r = state_redis(settings)
        marked = wait_for(lambda: waiting(r), what="the waiting page load's marker")
        assert marked[0]["proxy"] == "direct" and marked[0]["waiter"].split(":")[1].isdigit()
        assert not task.done()  # no turn within the minute: it does not load
        status = gather(settings, broker, r)
        assert len(status["crawl_rate_waiting"]) == 1
        assert "crawl rate limit: 2 pages/min per address; 1 page load(s) waiting for a turn" in render(
            {**status, "crawl_rate_limit": 2})
        shown = run_cli(settings_env, "status")
        assert "crawl rate limit: 2 pages/min per address; 1 page load(s) waiting" in shown.stdout, shown.stderr
    finally:
        loop.call_soon_threadsafe(task.cancel)
        runner.join(timeout=10)
        loop.close()
    assert waited == []  # it never got its turn


@pytest.mark.parametrize("limit, line", [(0, "crawl rate limit: none (CRAWL_RATE_LIMIT=0)")])
def test_status_without_a_limit(settings, db, broker, limit, line):
    status = gather(settings, broker, state_redis(settings))
    assert status["crawl_rate_limit"] == limit and line in render(status)


def test_no_turn_within_its_patience_ends_the_wait_with_no_turn(settings):
    """A page load waits at most ``patience`` for its turn, then ``NoTurn``; it takes no turn and leaves no
    "waiting" marker behind."""
    first, second = limits(settings, 2, limit=2)
    second.patience = 1.0
    waited: list[float] = []
    second.observe = waited.append
    assert asyncio.run(first.wait_for_turn(None)) == 0.0 and asyncio.run(first.wait_for_turn(None)) == 0.0
    started = time.monotonic()
    with pytest.raises(NoTurn, match=r"no turn under the crawl rate limit \(2 pages/min via no proxy\) within 1 s"):
        asyncio.run(second.wait_for_turn(None))
    assert time.monotonic() - started <= 1.0 + second.poll + SLACK
    assert waiting(state_redis(settings)) == [] and waited == []
    assert not first.try_acquire(None)  # the window still holds the two turns, no third


def test_with_redis_unreachable_a_page_load_waits_its_patience_then_no_turn():
    """Politeness first: no turn, no load; and the wait ends (one try past the patience at most: a try
    spends the client's own retries)."""
    limit = CrawlRateLimit(2, lambda: connect(f"redis://127.0.0.1:{free_port()}/0"), patience=1.0)
    started = time.monotonic()
    with pytest.raises(NoTurn):
        asyncio.run(limit.wait_for_turn(None))
    assert time.monotonic() - started <= 1.0 + CLIENT_RETRIES + limit.poll + SLACK


def test_a_crawl_without_a_turn_ends_with_the_pages_it_read(settings, env, sim, chromium):
    """Three turns for a crawl of 2+2 pages: three pages are read, the fourth is not loaded and is classed
    ``rate_limited``, and the crawl returns at once instead of waiting out its time limit."""
    crawl_settings = load_settings(simulator_crawl_env(env, sim, chromium, SCHEDULER_PAGES_ON_SALE="2",
                                                       SCHEDULER_PAGES_SOLD="2"))
    limit = CrawlRateLimit(3, lambda: state_redis(crawl_settings), patience=1.0)
    served = sim.counters["pages"]

    async def go():
        crawler = Crawler.from_settings(crawl_settings)
        crawler.rate_limit = limit
        try:
            return await asyncio.wait_for(crawler.crawl(3, "鬼滅の刃", "t-rate"), 120)
        finally:
            await crawler.close()

    result = asyncio.run(go())
    assert result["errors"] == {"sold:2": "rate_limited"} and result["pages_crawled"] == 3
    assert sim.counters["pages"] - served == 3
