"""The fleet-wide crawl rate limit on real Redis: one window per proxy shared by every process, and a page load
that finds it full waits, visibly (status, metrics' gauge), without loading. The two-crawler run against the
simulator is in tests/test_crawl_rate_limit_fleet.py."""

import asyncio
import threading

import pytest

from lib.core import keys
from lib.core.redis_client import state_redis
from lib.crawling.rate_limit import WINDOW_SECONDS, CrawlRateLimit, proxy_label, waiting
from lib.operations.status import gather, render

from .helpers import run_cli, wait_for


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
        assert "crawl rate limit: 2 pages/min per proxy; 1 page load(s) waiting for a turn" in render(
            {**status, "crawl_rate_limit": 2})
        shown = run_cli(settings_env, "status")
        assert "crawl rate limit: 2 pages/min per proxy; 1 page load(s) waiting" in shown.stdout, shown.stderr
    finally:
        loop.call_soon_threadsafe(task.cancel)
        runner.join(timeout=10)
        loop.close()
    assert waited == []  # it never got its turn


@pytest.mark.parametrize("limit, line", [(0, "crawl rate limit: none (CRAWL_RATE_LIMIT=0)")])
def test_status_without_a_limit(settings, db, broker, limit, line):
    status = gather(settings, broker, state_redis(settings))
    assert status["crawl_rate_limit"] == limit and line in render(status)
