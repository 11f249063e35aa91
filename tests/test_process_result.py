"""process_result: transitions, hourly statistics, exactly-once effect, alerts, closed loop, read side."""

from decimal import Decimal

import pytest

from lib.core import keys
from lib.core.clock import FrozenClock, naive_utc
from lib.core.redis_client import state_redis
from lib.core.settings import load_settings
from lib.market.processing import CrawlResult, ResultProcessor
from lib.market.statistics import adjusted_weight
from lib.scheduling.catalogue import Catalogue
from lib.scheduling.execution_state import ExecutionState
from lib.scheduling.schedule import CRAWL_JOB, ScheduleStore, interval_for
from models import IpMetadata, IpStatsHourly, ItemSnapshot

H = 3600.0
T0 = 1_800_000_000.0 - (1_800_000_000.0 % H)  # on an hour boundary


def item(sid, status="on_sale", price=1000, created=None):
    return {"source_id": sid, "title": f"鬼滅の刃 {sid}", "price": price, "status": status,
            "image_url": f"https://img/{sid}.jpg", "item_url": f"https://jp.mercari.com/item/{sid}",
            "created": created, "updated": None}


@pytest.fixture
def clock():
    return FrozenClock(T0)


@pytest.fixture
def proc(db, settings, clock):
    return ResultProcessor(settings, state_redis(settings), clock)


@pytest.fixture
def ip(db, settings, clock):
    return Catalogue(ScheduleStore(state_redis(settings)), settings, clock).add("鬼滅の刃")


def result(ip, n, at, items):
    return CrawlResult.parse(ip.id, f"task-{ip.id}-{n}", at, items)


def hour_row(ip, at):
    return IpStatsHourly.get((IpStatsHourly.ip_id == ip.id) & (IpStatsHourly.hour_bucket == naive_utc(at - at % H)))


def test_first_crawl_is_a_baseline(proc, ip, settings):
    out = proc.apply(result(ip, 1, T0 + 60, [item("m1"), item("m2", "sold", 500)]))
    assert out.baseline and out.inflow == 0 and out.outflow == 0
    row = hour_row(ip, T0 + 60)
    assert (row.inflow, row.outflow, row.liquidity_index, row.sample_count) == (0, 0, None, 0)
    r = state_redis(settings)
    assert r.hget(keys.item_state(ip.id, "m1"), "status") == b"on_sale"
    assert 0 < r.ttl(keys.item_state(ip.id, "m1")) <= settings.analyzer_item_ttl_available
    assert settings.analyzer_item_ttl_available < r.ttl(keys.item_state(ip.id, "m2")) <= settings.analyzer_item_ttl_sold
    assert ItemSnapshot.select().where(ItemSnapshot.ip_id == ip.id).count() == 2


def test_every_transition(proc, ip):
    proc.apply(result(ip, 1, T0 + 60, [item("a"), item("b", price=900), item("c", "sold", 700), item("d")]))
    out = proc.apply(result(ip, 2, T0 + 120, [
        item("a"),                      # unchanged
        item("b", price=800),           # price_change
        item("c", "on_sale", 700),      # relisted
        item("d", "sold", 1200),        # sold
        item("e", "on_sale", 300),      # new_listing
        item("f", "sold", 2400),        # new_sold
        item("g", "sold", None),        # new_sold, no price: outflow but not a price sample
    ]))
    assert out.transitions == {"price_change": 1, "relisted": 1, "sold": 1, "new_listing": 1, "new_sold": 2}
    row = hour_row(ip, T0 + 120)
    assert (row.inflow, row.outflow, row.sample_count) == (1, 3, 2)
    assert row.liquidity_index == Decimal("3.0000")
    assert (row.avg_price, row.min_price, row.max_price) == (Decimal("1800.00"), Decimal("1200.00"), Decimal("2400.00"))


def test_resurfaced_old_listing_is_not_inflow(proc, ip, settings):
    proc.apply(result(ip, 1, T0, [item("a")]))
    old = T0 + 60 - settings.analyzer_item_ttl_available - 1
    out = proc.apply(result(ip, 2, T0 + 60, [item("a"), item("old", created=old), item("new", created=T0)]))
    assert out.transitions == {"new_listing": 1}


def test_inflow_is_listings_created_since_the_baseline(proc, ip):
    proc.apply(result(ip, 1, T0, [item("a", created=T0 - 600)]))
    out = proc.apply(result(ip, 2, T0 + 1800, [
        item("a", created=T0 - 600),
        item("moved-up", created=T0 - 300),  # older than the baseline but below its last page: not new
        item("new", created=T0 + 900),       # created after the baseline: counted in its created hour
        item("before", created=T0 - 30),     # created before the baseline crawl: tracking had not started
    ]))
    assert out.inflow == 1
    # a result crawled between the two, arriving last: mid is new, early was created before the baseline
    late = proc.apply(result(ip, 3, T0 + 1200, [item("mid", created=T0 + 600), item("early", created=T0 - 900)]))
    assert late.inflow == 1
    assert hour_row(ip, T0).inflow == 2


def test_an_older_result_never_moves_an_item_back(proc, ip, settings):
    proc.apply(result(ip, 1, T0, [item("a")]))
    proc.apply(result(ip, 2, T0 + 600, [item("a", "sold")]))
    late = proc.apply(result(ip, 3, T0 + 300, [item("a", "on_sale")]))  # crawled before #2, arrived after
    assert late.transitions == {}
    assert state_redis(settings).hget(keys.item_state(ip.id, "a"), "status") == b"sold"
    assert ItemSnapshot.get(ItemSnapshot.source_id == "a").status == "sold"


def run_script(proc, ip):
    """Three crawls over two hours; the expected numbers are worked out by hand below."""
    proc.apply(result(ip, 1, T0 + 100, [item("a", price=1000), item("b", price=2000), item("x", "sold", 50)]))
    proc.apply(result(ip, 2, T0 + 1900, [item("a", "sold", 1000), item("b", price=2000), item("c", price=3000),
                                          item("d", price=4000), item("e", "sold", 5000)]))
    proc.apply(result(ip, 3, T0 + H + 100, [item("b", "sold", 1500), item("c", "sold", 3300), item("d", price=4000),
                                             item("f", price=10), item("g", price=20), item("h", price=30)]))


def expected_rows():
    # hour 0: crawl 1 is the baseline; crawl 2: c, d new (inflow 2), a sold + e new_sold (outflow 2)
    #   sold prices 1000, 5000 → avg 3000, min 1000, max 5000, liquidity 2/2 = 1
    # hour 1: b, c sold (outflow 2, prices 1500, 3300 → avg 2400); f, g, h new (inflow 3); liquidity 2/3
    return [
        (2, 2, Decimal("1.0000"), Decimal("3000.00"), Decimal("1000.00"), Decimal("5000.00"), 2),
        (3, 2, Decimal("0.6667"), Decimal("2400.00"), Decimal("1500.00"), Decimal("3300.00"), 2),
    ]


def stats(ip):
    return [(r.inflow, r.outflow, r.liquidity_index, r.avg_price, r.min_price, r.max_price, r.sample_count)
            for r in IpStatsHourly.select().where(IpStatsHourly.ip_id == ip.id).order_by(IpStatsHourly.hour_bucket)]


def test_scripted_sequence_matches_hand_computed_statistics(proc, ip):
    run_script(proc, ip)
    assert stats(ip) == expected_rows()


def test_duplicate_delivery_counts_once(proc, ip):
    run_script(proc, ip)
    again = proc.apply(result(ip, 3, T0 + H + 100, [item("b", "sold", 1500)]))
    assert again.applied is False
    run_script(proc, ip)  # every result delivered a second time
    assert stats(ip) == expected_rows()


# Where a worker can die: before the transaction, inside it (after the ledger, snapshots and stats rows
# were written, before commit), after commit before Redis, and after Redis before the closed loop.
CRASH_POINTS = {
    "decide": (ResultProcessor, "decide"),
    "inside_transaction": ("lib.market.processing", "refresh_hours"),
    "apply_states": (ResultProcessor, "apply_states"),
    "close_loop": (ResultProcessor, "close_loop"),
}


@pytest.mark.parametrize("point", list(CRASH_POINTS))
def test_crash_at_any_step_then_redelivery_equals_a_clean_run(proc, ip, point, monkeypatch):
    import importlib

    owner, name = CRASH_POINTS[point]
    owner = importlib.import_module(owner) if isinstance(owner, str) else owner
    real = getattr(owner, name)
    state = {"crashes": 0, "calls": 0}

    def crash_on_second_result(*args, **kwargs):
        state["calls"] += 1
        if state["calls"] == 2 and not state["crashes"]:
            state["crashes"] += 1
            raise RuntimeError(f"worker killed at {point}")
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, crash_on_second_result if not isinstance(owner, type)
                        else lambda self, *a, **k: crash_on_second_result(self, *a, **k))
    with pytest.raises(RuntimeError):
        run_script(proc, ip)
    run_script(proc, ip)  # redelivery of everything
    assert state["crashes"] == 1
    assert stats(ip) == expected_rows()


def test_crash_after_commit_before_redis_then_redelivery(proc, ip, monkeypatch):
    """The database has the result but Redis does not: the redelivery must not count it again."""
    real = ResultProcessor.apply_states
    calls = {"n": 0}

    def lose_redis_write(self, res, changes):
        calls["n"] += 1
        if res.task_id.endswith("-2") and calls["n"] == 2:
            raise ConnectionError("Redis went away")
        return real(self, res, changes)

    monkeypatch.setattr(ResultProcessor, "apply_states", lose_redis_write)
    with pytest.raises(ConnectionError):
        run_script(proc, ip)
    run_script(proc, ip)
    assert stats(ip) == expected_rows()


def test_redis_wiped_counts_nothing_twice(proc, ip, settings):
    proc.apply(result(ip, 1, T0, [item("a"), item("b")]))
    proc.apply(result(ip, 2, T0 + 60, [item("a"), item("b"), item("c")]))
    state_redis(settings).flushdb()
    out = proc.apply(result(ip, 3, T0 + 120, [item("a"), item("b"), item("c"), item("d")]))
    assert out.transitions == {"new_listing": 1}  # only d: a, b, c came back from the snapshots
    assert hour_row(ip, T0).inflow == 2


@pytest.mark.parametrize("inflow, outflow, before, after", [
    (501, 0, 1.0, 1.25), (0, 501, 3.9, 4.0), (100, 5, 1.0, 0.9), (100, 5, 0.25, 0.25),
    (300, 20, 1.5, 1.4), (300, 20, 0.5, 0.6), (300, 20, 1.0, 1.0), (300, 20, 1.05, 1.0),
])
def test_weight_adjustment(inflow, outflow, before, after):
    assert adjusted_weight(before, inflow, outflow, load_settings({})) == pytest.approx(after)


def test_closed_loop_reschedules_from_the_new_weight(proc, ip, settings):
    IpMetadata.update(weight=2.0).where(IpMetadata.id == ip.id).execute()
    proc.apply(result(ip, 1, T0, [item("a")]))  # baseline: weight unchanged
    proc.apply(result(ip, 2, T0 + 600, [item("a")]))  # quiet: 2.0 → 1.9
    refreshed = IpMetadata.get_by_id(ip.id)
    assert refreshed.weight == pytest.approx(1.9)
    assert refreshed.last_crawled_at == naive_utc(T0 + 600)
    assert ExecutionState().last_execution_time(CRAWL_JOB, ip.id) == T0 + 600
    store = ScheduleStore(state_redis(settings))
    assert store.time_of(ip.id) == pytest.approx(T0 + 600 + interval_for(1.9, settings))


def test_malformed_results_are_refused():
    from lib.core.errors import BadMessage

    for items, words in [([{"source_id": "m1", "status": "gone"}], "status"),
                         ([{"source_id": "", "status": "sold"}], "source_id"),
                         ([{"source_id": "m1", "status": "sold", "price": "12"}], "price"),
                         ("nope", "items must be a list"), ([42], "not a map")]:
        with pytest.raises(BadMessage, match=words):
            CrawlResult.parse(1, "t", T0, items)


def test_search_totals_are_stored_once_with_the_crawl(proc, ip):
    from models import CrawlSearchTotal

    search = {"on_sale": {"num_found": 1234, "pages": 5, "items": 600}, "sold": {"num_found": None, "pages": 2,
                                                                                  "items": 240}}
    crawl = CrawlResult.parse(ip.id, "task-totals", T0 + 60, [item("m1")], search=search)
    proc.apply(crawl)
    proc.apply(crawl)  # a redelivery adds nothing
    rows = {r.status: (r.task_id, r.crawled_at, r.num_found, r.pages_read, r.items_read)
            for r in CrawlSearchTotal.select().where(CrawlSearchTotal.ip_id == ip.id)}
    assert rows == {"on_sale": ("task-totals", T0 + 60, 1234, 5, 600), "sold": ("task-totals", T0 + 60, None, 2, 240)}
    assert CrawlSearchTotal.select().count() == 2


@pytest.mark.parametrize("ended, pages, reach", [
    (True, 5, None),      # the crawler saw the search end on its last planned page: seen whole
    (False, 2, T0 - 50),  # it stopped short of the plan without the search ending: the pages reached back so far
    (None, 2, None),      # a crawler that did not say: fewer pages than planned means the search ended
    (None, 5, T0 - 50),
])
def test_the_crawler_says_whether_a_search_ended_on_its_pages(proc, ip, ended, pages, reach):
    from models import CrawlSearchTotal

    on_sale = {"num_found": 2, "pages": pages, "items": 2, **({} if ended is None else {"ended": ended})}
    listings = [item("m1", created=T0 - 50), item("m2", created=T0 - 10)]
    proc.apply(CrawlResult.parse(ip.id, "task-ended", T0 + 60, listings, search={"on_sale": on_sale}))
    row = CrawlSearchTotal.get((CrawlSearchTotal.ip_id == ip.id) & (CrawlSearchTotal.status == "on_sale"))
    assert (row.reach, row.newest) == (reach, T0 - 10)


def test_malformed_search_totals_are_refused():
    from lib.core.errors import BadMessage

    for search, words in [({"gone": {"num_found": 1, "pages": 1, "items": 1}}, "status"),
                          ({"sold": {"num_found": -1, "pages": 1, "items": 1}}, "num_found"),
                          ({"sold": {"num_found": 1, "pages": "5", "items": 1}}, "pages"),
                          ({"sold": {"num_found": 1, "pages": 1}}, "items"),
                          ({"sold": {"num_found": 1, "pages": 1, "items": 1, "ended": "yes"}}, "ended"),
                          ({"sold": 7}, "not a map"), ([1], "search must be a map")]:
        with pytest.raises(BadMessage, match=words):
            CrawlResult.parse(1, "t", T0, [], search=search)


def test_a_newer_result_before_an_older_ones_redis_write_counts_nothing_twice(proc, ip, monkeypatch):
    """Result 2 commits, but Redis is down when it writes its states (found with a cluster master restarted
    mid-run); Redis comes back and result 3 runs before result 2's retry. Result 3 must not count again the
    sale result 2 counted: its stale Redis state gives way to result 2's snapshot."""
    proc.apply(result(ip, 1, T0, [item("a"), item("b")]))  # baseline
    real = ResultProcessor.apply_states

    def redis_down(self, res, changes):
        raise ConnectionError("Redis went away")

    monkeypatch.setattr(ResultProcessor, "apply_states", redis_down)
    with pytest.raises(ConnectionError):
        proc.apply(result(ip, 2, T0 + 60, [item("a", "sold"), item("b")]))
    monkeypatch.setattr(ResultProcessor, "apply_states", real)
    third = proc.apply(result(ip, 3, T0 + 120, [item("a", "sold"), item("b", "sold")]))
    assert third.transitions == {"sold": 1}  # b only: a's sale was result 2's
    assert not proc.apply(result(ip, 2, T0 + 60, [item("a", "sold"), item("b")])).applied  # the retry
    assert hour_row(ip, T0).outflow == 2
    assert state_redis(proc.settings).hget(keys.item_state(ip.id, "b"), "status") == b"sold"  # never moved back
