"""The read side's rows (lib.market.window_rows): each IP's row of each precomputed window equals the independent
computation of the measures (tests/market/scripted.py) after any sequence of results, late ones included, and as
hours pass; a refresh recomputes only the rows results or the hour changed (counted, not timed)."""

import json
import threading

import pytest

from lib.core.clock import FrozenClock, naive_utc, to_timestamp
from lib.core.redis_client import state_redis
from lib.market import window_rows
from lib.market.processing import CrawlResult, ResultProcessor
from lib.market.read_side import ReadSide
from lib.scheduling.catalogue import Catalogue
from lib.scheduling.schedule import ScheduleStore
from models import IpWindowMeasures, IpWindowPending

from ..helpers import flatten
from .scripted import T0, Script, expected_hours, expected_window, hour_of, make_script
from .test_windows import MINIMUMS, close

H = 3600.0
#: Short windows beside the standard ones, so the script's hours slide out of them within the test.
SHORT = (2, 6)


@pytest.fixture
def env(env):
    return {**env, "LEADERBOARD_PRECOMPUTE": "2h,6h,1d"}


def windows(settings) -> tuple[int, ...]:
    return window_rows.precomputed_windows(settings.leaderboard_precompute)


class Market:
    """IPs fed crawl results through the real processor at a clock the test moves."""

    def __init__(self, settings, clock: FrozenClock) -> None:
        self.settings, self.clock = settings, clock
        r = state_redis(settings)
        self.catalogue = Catalogue(ScheduleStore(r), settings, clock)
        self.proc = ResultProcessor(settings, r, clock)
        self.delivered: dict[int, list[int]] = {}
        self.scripts: dict[int, Script] = {}

    def add(self, name: str, script: Script) -> int:
        ip_id = self.catalogue.add(name).id
        self.scripts[ip_id], self.delivered[ip_id] = script, []
        return ip_id

    def deliver(self, ip_id: int, n: int) -> None:
        at, items = self.scripts[ip_id].crawls[n]
        self.proc.apply(CrawlResult.parse(ip_id, f"{ip_id}-{n}", at, items, search=self.scripts[ip_id].search[n]))
        self.delivered[ip_id].append(n)

    def deliver_in_order(self, ip_id: int, count: int | None = None) -> None:
        """The IP's first ``count`` crawls (all of them by default), each delivered as it is made: the clock moved
        to 30 s after it (never back)."""
        crawls = self.scripts[ip_id].crawls
        for n in range(len(crawls) if count is None else count):
            self.clock.set(max(self.clock.now(), crawls[n][0] + 30))
            self.deliver(ip_id, n)

    def seen(self, ip_id: int) -> Script:
        """The script as far as it was delivered (in any order: the rows are order-independent)."""
        script, done = self.scripts[ip_id], sorted(self.delivered[ip_id])
        return Script([script.crawls[n] for n in done], [script.search[n] for n in done])


def stored(ip_id: int, hours: int) -> dict | None:
    row = IpWindowMeasures.get_or_none((IpWindowMeasures.ip_id == ip_id) & (IpWindowMeasures.hours == hours))
    return None if row is None else json.loads(row.measures)


def near(got, expected) -> bool:
    """Equal as stored: the measures are rounded to 2 or 4 places (close() rounds again, and 0.155 against
    0.15504 falls on either side of 0.155)."""
    if isinstance(got, float) and isinstance(expected, float):
        return abs(got - expected) <= 0.0051
    return close(got, expected)


def definition(script: Script, hours: int, now: float) -> dict:
    """The independent computation; a window without a tracked hour has its flows insufficient
    (docs/concepts/measures.md: a measure below its minimum of observations, here one tracked hour, is None), which the
    script's definition, written for windows over its hours, counts as 0."""
    expected = expected_window(script, hours, now, MINIMUMS)
    if expected["tracked_hours"] == 0:
        expected |= {"inflow": None, "outflow": None}
    return expected


def assert_rows_equal_the_definition(market: Market, all_windows, now: float, of=None) -> None:
    """``of(ip_id, hours, now)``, if given, is the definition as the test has already computed it."""
    for ip_id in market.scripts:
        seen = market.seen(ip_id)
        for hours in all_windows:
            expected = of(ip_id, hours, now) if of else definition(seen, hours, now)
            row = stored(ip_id, hours)
            assert row is not None, (ip_id, hours)
            got = flatten(row)
            wrong = {k: (got[k], expected[k]) for k in expected if not near(got[k], expected[k])}
            assert not wrong, (ip_id, hours, wrong)


def test_rows_equal_the_definition_after_any_sequence_of_results(db, settings):
    clock = FrozenClock(T0)
    market = Market(settings, clock)
    a, b = market.add("A", make_script(4, n_crawls=24)), market.add("B", make_script(5, n_crawls=24))
    late = {a: [3, 9, 10], b: [6]}  # held back, delivered after the crawls that followed them
    all_windows = windows(settings)
    for upto in (12, 24):
        for ip_id in (a, b):
            for n in range(upto - 12, upto):
                if n not in late[ip_id]:
                    clock.set(market.scripts[ip_id].crawls[n][0] + 30)
                    market.deliver(ip_id, n)
        clock.set(max(at for s in market.scripts.values() for at, _ in s.crawls[:upto]) + 60)
        window_rows.update(all_windows, clock.now())
        assert_rows_equal_the_definition(market, all_windows, clock.now())
    # the late results: every window they touch is marked; read exactly before the pass, stored after it
    for ip_id, ns in late.items():
        for n in ns:
            market.deliver(ip_id, n)
    side = ReadSide(settings, None, clock)
    expected = definition(market.seen(a), 6, clock.now())
    got = flatten(side.ip_detail(a, 6)["measures"])
    assert not {k: (got[k], expected[k]) for k in expected if not near(got[k], expected[k])}
    assert IpWindowPending.select().count() > 0
    window_rows.update(all_windows, clock.now())
    assert IpWindowPending.select().count() == 0
    assert_rows_equal_the_definition(market, all_windows, clock.now())
    # hours pass: the rows slide with the windows (the short ones empty out of the script's hours)
    for _ in range(8):
        clock.set(clock.now() + H)
        window_rows.update(all_windows, clock.now())
        assert_rows_equal_the_definition(market, all_windows, clock.now())


def test_the_hour_roll_recomputes_exactly_the_rows_whose_facts_leave_a_range(db, settings):
    clock = FrozenClock(T0)
    market = Market(settings, clock)
    ips = [market.add(f"IP {k}", make_script(k, n_crawls=6 + 4 * k)) for k in range(3)]
    for ip_id in ips:
        market.deliver_in_order(ip_id)
    all_windows = windows(settings)
    window_rows.update(all_windows, clock.now())
    tracked = {ip_id: set(expected_hours(market.seen(ip_id))) for ip_id in ips}  # the hours with a row
    computed: dict[tuple[int, int, float], dict] = {}

    def of(ip_id: int, hours: int, now: float) -> dict:  # nothing is delivered from here on: each computed once
        if (ip_id, hours, now) not in computed:
            computed[ip_id, hours, now] = definition(market.seen(ip_id), hours, now)
        return computed[ip_id, hours, now]

    changed_somewhere = 0
    for _ in range(12):
        before = clock.now()
        clock.set(hour_of(before) + H + 5)  # past the next hour boundary
        counts = {}
        for hours in all_windows:
            pending_before = IpWindowPending.select().count()
            assert pending_before == 0
            counts[hours] = window_rows.update([hours], clock.now())[hours]
            # the IPs with a row in an hour leaving one of the window's ranges, from the script's own hours
            leaving = {to_timestamp(w) for w in window_rows.crossing_hours(hours, naive_utc(hour_of(before)))}
            crossing = {ip_id for ip_id in ips if tracked[ip_id] & leaving}
            assert counts[hours] == len(crossing), (hours, counts[hours], crossing)
            for ip_id in ips:
                old, new = of(ip_id, hours, before), of(ip_id, hours, clock.now())
                differs = any(not near(old[k], new[k]) for k in old)
                changed_somewhere += differs
                assert not differs or ip_id in crossing, (ip_id, hours)  # no changed row skipped
        assert_rows_equal_the_definition(market, all_windows, clock.now(), of)
    assert changed_somewhere > 0  # the roll had rows to change


def test_a_refresh_recomputes_only_the_ips_that_received_results(db, settings):
    clock = FrozenClock(T0)
    market = Market(settings, clock)
    ips = [market.add(f"IP {k}", make_script(10 + k, n_crawls=8)) for k in range(5)]
    for ip_id in ips:
        market.deliver_in_order(ip_id, 7)
    all_windows = windows(settings)
    window_rows.update(all_windows, clock.now())
    assert window_rows.update(all_windows, clock.now()) == dict.fromkeys(all_windows, 0)  # nothing changed
    busy = ips[1:3]
    clock.set(max(market.scripts[i].crawls[7][0] for i in busy) + 30)
    window_rows.update(all_windows, clock.now())  # the hour's roll, if the crawl is in a later hour
    for ip_id in busy:
        market.deliver(ip_id, 7)
    assert window_rows.update(all_windows, clock.now()) == dict.fromkeys(all_windows, len(busy))
    assert_rows_equal_the_definition(market, all_windows, clock.now())


def test_a_result_landing_while_rows_are_computed_is_not_held_off_and_keeps_its_mark(db, settings, monkeypatch):
    """The pass computes a chunk's rows from one snapshot without the write lock: a result applied meanwhile (in
    another thread, as another worker thread would) commits at once, the chunk stores its rows from before it, and
    the result's mark stays, so the next pass brings the rows to the definition."""
    clock = FrozenClock(T0)
    market = Market(settings, clock)
    ip_id = market.add("IP", make_script(21, n_crawls=8))
    market.deliver_in_order(ip_id, 7)
    all_windows = windows(settings)
    clock.set(market.scripts[ip_id].crawls[7][0] + 30)
    compute, landed = window_rows.compute, []

    def compute_while_a_result_lands(ip_ids, hours, now):
        computed = compute(ip_ids, hours, now)
        if not landed:
            result = threading.Thread(target=lambda: landed.append(market.deliver(ip_id, 7) or True))
            result.start()
            result.join(timeout=60)
            assert landed == [True], "the result waited for the pass"
        return computed

    monkeypatch.setattr(window_rows, "compute", compute_while_a_result_lands)
    assert window_rows.update(all_windows, clock.now()) == dict.fromkeys(all_windows, 1)
    first = all_windows[0]  # computed before the result landed: its row is as of crawls 0-6, its mark kept
    assert IpWindowPending.select().where((IpWindowPending.ip_id == ip_id) & (IpWindowPending.hours == first)).exists()
    monkeypatch.setattr(window_rows, "compute", compute)
    window_rows.update(all_windows, clock.now())
    assert not IpWindowPending.select().where(IpWindowPending.ip_id == ip_id).exists()
    assert_rows_equal_the_definition(market, all_windows, clock.now())


def test_a_chunk_holds_ips_up_to_a_bound_on_their_listing_events_and_the_rows_stay_exact(db, settings, monkeypatch):
    """The IPs computed together are cut where their listing events in the window (their hourly rows' inflow and
    outflow) would pass ``CHUNK_EVENTS``, so a pass's memory follows a bounded number of listings whatever the IPs'
    sizes; an IP over the bound is computed alone. The rows still equal the definition."""
    from models import IpStatsHourly

    clock = FrozenClock(T0)
    market = Market(settings, clock)
    ips = [market.add(f"IP {k}", make_script(30 + k, n_crawls=10)) for k in range(5)]
    for ip_id in ips:
        market.deliver_in_order(ip_id)
    day = 24
    since = naive_utc(clock.now()) - window_rows.HOUR * day  # the 24-hour window's hours, and an hour before
    events = {i: sum(r.inflow + r.outflow for r in IpStatsHourly.select().where(
        (IpStatsHourly.ip_id == i) & (IpStatsHourly.hour_bucket >= since))) for i in ips}
    assert min(events.values()) > 0
    bound = events[ips[0]] + events[ips[1]]  # the first two IPs fit together; the busiest others may be alone
    monkeypatch.setattr(window_rows, "CHUNK_EVENTS", bound)
    compute, chunks = window_rows.compute, []

    def counted(ip_ids, hours, now):
        if hours == day:
            chunks.append(list(ip_ids))
        return compute(ip_ids, hours, now)

    monkeypatch.setattr(window_rows, "compute", counted)
    window_rows.update([day], clock.now())
    assert [i for chunk in chunks for i in chunk] == sorted(ips)  # each IP once, in order
    assert chunks[0][:2] == sorted(ips)[:2] and len(chunks) > 1
    for chunk in chunks:
        assert len(chunk) == 1 or sum(events[i] for i in chunk) <= bound, (chunk, events)
    assert_rows_equal_the_definition(market, [day], clock.now())


def test_db_init_has_rows_that_predate_a_new_column_built_anew(db, settings):
    """A database whose window rows were written before ``heat_low`` existed: ``db init`` adds the column and the
    rows are rebuilt by the next roll (their JSON lacks the intervals too), and read meanwhile as never built."""
    from lib.core.db import database
    from lib.market.schema import create_tables

    clock = FrozenClock(T0)
    market = Market(settings, clock)
    ip_id = market.add("IP", make_script(21, n_crawls=8))
    market.deliver_in_order(ip_id, 8)
    all_windows = windows(settings)
    window_rows.update(all_windows, clock.now())
    assert all(window_rows.rolled_to(h) is not None for h in all_windows)
    database.execute_sql("ALTER TABLE ip_window_measures DROP COLUMN heat_low")  # as the previous version had it

    create_tables()

    assert "heat_low" in {c.name for c in database.get_columns("ip_window_measures")}
    assert all(window_rows.rolled_to(h) is None for h in all_windows)
    assert window_rows.ip_measures(ip_id, 24, clock.now()) is None  # never built: the reader computes it
    window_rows.update(all_windows, clock.now())
    row = IpWindowMeasures.get((IpWindowMeasures.ip_id == ip_id) & (IpWindowMeasures.hours == 24))
    expected = definition(market.seen(ip_id), 24, clock.now())
    assert row.heat_low == (expected["heat_interval"] or [None])[0]


def test_db_init_builds_anew_rows_of_an_earlier_version(db, settings):
    """Rows whose stored measures an upgrade added to (ROWS_VERSION: intervals, why a measure is insufficient)
    are built anew by the next roll after ``db init``; rows of the current version are left alone."""
    from lib.market.schema import create_tables
    from models import StorageMark

    clock = FrozenClock(T0)
    market = Market(settings, clock)
    ip_id = market.add("IP", make_script(22, n_crawls=4))
    market.deliver_in_order(ip_id, 4)
    all_windows = windows(settings)
    window_rows.update(all_windows, clock.now())
    create_tables()  # current: nothing to rebuild
    assert all(window_rows.rolled_to(h) is not None for h in all_windows)
    StorageMark.update(value=window_rows.ROWS_VERSION - 1).where(StorageMark.name == "window_rows:version").execute()
    create_tables()
    assert all(window_rows.rolled_to(h) is None for h in all_windows)
    window_rows.update(all_windows, clock.now())
    stored_heat = json.loads(IpWindowMeasures.get((IpWindowMeasures.ip_id == ip_id)
                                                  & (IpWindowMeasures.hours == 24)).measures)["heat"]
    assert stored_heat["value"] is not None or "why" in stored_heat
