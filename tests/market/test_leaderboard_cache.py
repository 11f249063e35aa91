"""The leaderboard's cache: one board per window for every ranking, kept until CACHE_TTL rather than dropped by
each result, recomputed ahead of it by the ``refresh_leaderboards`` actor, and searched whole by the filter."""

import dataclasses
import json
import time
import urllib.request
from datetime import timedelta
from urllib.parse import quote

import pytest

from lib.core import keys
from lib.core.clock import Clock, FrozenClock, naive_utc
from lib.core.redis_client import state_redis
from lib.market.processing import CrawlResult, ResultProcessor
from lib.market.read_side import ReadSide
from lib.scheduling.catalogue import Catalogue
from lib.scheduling.schedule import ScheduleStore
from lib.web.api import WebContext
from lib.web.app import create_app
from lib.web.auth import OperatorAuth
from lib.web.server import BackgroundServer
from models import IpMetadata, IpStatsHourly

H = 3600.0
TTL = 4.0


@pytest.fixture
def env(env):
    """A short CACHE_TTL, so a board ages past half of it within the test."""
    return {**env, "CACHE_TTL": f"{TTL:g}s"}


def wait_for(condition, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_a_result_keeps_the_leaderboard_until_the_refresh_actor_recomputes_it(db, settings, stub_broker,
                                                                               start_worker):
    import actors

    assert actors.refresh_leaderboards.options.get("periodic") is not None
    assert actors.refresh_leaderboards.queue_name == "maintenance"
    r = state_redis(settings)
    clock = Clock()
    proc = ResultProcessor(settings, r, clock)
    catalogue = Catalogue(ScheduleStore(r), settings, clock)
    quiet, busy = catalogue.add("静か"), catalogue.add("賑やか")
    now = time.time()
    for ip, sold in ((quiet, 1), (busy, 3)):
        base = [{"source_id": f"s{i}", "status": "on_sale", "price": 1000} for i in range(10)]
        proc.apply(CrawlResult.parse(ip.id, f"{ip.id}-1", now - 120, base))
        proc.apply(CrawlResult.parse(ip.id, f"{ip.id}-2", now - 60, [
            {**item, "status": "sold" if i < sold else "on_sale"} for i, item in enumerate(base)]))
    side = ReadSide(settings, r, clock)
    assert [row["ip_id"] for row in side.leaderboard("outflow", 24)] == [busy.id, quiet.id]
    computed = json.loads(r.get(keys.leaderboard(24)))["computed_at"]

    # the quiet IP sells 9 more: the cached board stays (no result drops every IP's ranking) ...
    proc.apply(CrawlResult.parse(quiet.id, f"{quiet.id}-3", now - 30, [
        {"source_id": f"s{i}", "status": "sold", "price": 1000} for i in range(10)]))
    assert [row["ip_id"] for row in side.leaderboard("outflow", 24)] == [busy.id, quiet.id]
    # ... and the actor leaves a board younger than half its CACHE_TTL alone
    start_worker(stub_broker, queues=["maintenance"])
    actors.refresh_leaderboards.send()
    stub_broker.join("maintenance", timeout=60_000)
    if time.time() - computed < TTL / 2:  # (unless the machine was slow enough for it to age meanwhile)
        assert json.loads(r.get(keys.leaderboard(24)))["computed_at"] == computed
    # past half of it, the actor recomputes every common window: the viewer finds the new ranking warm
    wait_for(lambda: time.time() - computed >= TTL / 2)
    actors.refresh_leaderboards.send()
    stub_broker.join("maintenance", timeout=60_000)
    assert settings.leaderboard_precompute == (24, 168, 720)  # LEADERBOARD_PRECOMPUTE's default
    for hours in settings.leaderboard_precompute:
        board = json.loads(r.get(keys.leaderboard(hours)))
        assert board["computed_at"] > computed
        assert 0 < r.pttl(keys.leaderboard(hours)) <= TTL * 1000
    top = side.leaderboard("outflow", 24)[0]
    assert (top["ip_id"], top["outflow"]) == (quiet.id, 10)
    # never older than CACHE_TTL: without a refresh it expires, and the next reader computes it
    wait_for(lambda: not r.exists(keys.leaderboard(24)), timeout=TTL + 5)
    assert side.leaderboard("outflow", 24)[0]["ip_id"] == quiet.id


def test_one_computation_serves_every_ranking(db, settings):
    """The window's measures are computed once: every ranking of the window reads the same cached board."""
    r = state_redis(settings)
    clock = FrozenClock(1_800_000_000.0)
    add_ips(3, clock)
    side = ReadSide(settings, r, clock)
    side.leaderboard("outflow", 24)
    board = r.get(keys.leaderboard(24))
    for by in ("inflow", "heat", "median_price", "time_to_sell"):
        side.leaderboard(by, 24)
    assert r.get(keys.leaderboard(24)) == board
    assert [k.decode() for k in r.scan_iter(f"{keys.PREFIX}:leaderboard:*")] == [keys.leaderboard(24)]


def add_ips(n: int, clock: FrozenClock) -> list[int]:
    """``n`` IPs, the k-th selling n − k listings in the current hour (so the last ranks last by outflow)."""
    now = naive_utc(clock.now())
    IpMetadata.insert_many([{"keyword": f"ip-{k:04d}", "display_name": f"IP {k:04d}", "weight": 1.0,
                             "active": True, "created_at": now, "updated_at": now} for k in range(n)]).execute()
    ids = [ip.id for ip in IpMetadata.select(IpMetadata.id).order_by(IpMetadata.id)]
    bucket = now.replace(minute=0, second=0, microsecond=0)
    rows = [{"ip_id": ip_id, "hour_bucket": bucket - timedelta(hours=h), "inflow": 1, "outflow": n - k if h == 0 else 0}
            for k, ip_id in enumerate(ids) for h in range(2)]
    for start in range(0, len(rows), 500):
        IpStatsHourly.insert_many(rows[start:start + 500]).execute()
    return ids


def test_a_window_cached_near_the_hours_end_is_not_served_into_the_next_hour(db, settings):
    """The leaderboard, an IP's detail and the What sells board computed two seconds before the hour ends are
    cached for those two seconds, not CACHE_TTL (4 s here): in the next hour the window has slid (its oldest hour
    left it), and the next reader computes the new one."""
    from lib.segments.stored import GOODS

    r = state_redis(settings)
    clock = FrozenClock(1_800_000_000.0 + H - 2)
    first, _ = add_ips(2, clock)
    # the first IP also sold 5 in the window's oldest hour: in the window until the hour ends, out of it after
    oldest = naive_utc(1_800_000_000.0) - timedelta(hours=23)
    IpStatsHourly.insert(ip_id=first, hour_bucket=oldest, inflow=0, outflow=5).execute()
    side = ReadSide(settings, r, clock)
    assert side.leaderboard("outflow", 24)[0]["outflow"] == 7
    assert 0 < r.pttl(keys.leaderboard(24)) <= 2000  # each checked as soon as it is cached
    assert side.ip_detail(first, 24)["series"][0]["outflow"] == 5
    assert 0 < r.pttl(keys.ip_cache(first, "detail:24")) <= 2000
    side.segments_board(24, GOODS)
    assert 0 < r.pttl(keys.segments_board(GOODS, 24)) <= 2000
    cached = [keys.leaderboard(24), keys.ip_cache(first, "detail:24"), keys.segments_board(GOODS, 24)]
    wait_for(lambda: not any(r.exists(key) for key in cached), timeout=5)
    clock.set(1_800_000_000.0 + H + 30)
    assert side.leaderboard("outflow", 24)[0]["outflow"] == 2
    assert [row["outflow"] for row in side.ip_detail(first, 24)["series"]] == [0, 2]  # the oldest hour left
    assert r.pttl(keys.leaderboard(24)) > (TTL - 1) * 1000  # mid-hour: CACHE_TTL again


def test_under_an_accelerated_clock_a_window_is_cached_until_its_hour_ends_in_real_seconds(db, settings):
    """At 240 times real time (the demo's clock), a board computed 30 simulated minutes before the hour ends lives
    at most 7.5 real seconds (an hour's CACHE_TTL notwithstanding), not 30 minutes."""
    speed = 240.0
    hour_end = (time.time() // H + 2) * H
    now = time.time()
    clock = Clock(speed, anchor=(hour_end - 1800 - speed * now) / (1 - speed))  # now: 1800 s before hour_end
    assert abs(clock.now() - (hour_end - 1800)) < speed  # (within the second the lines above took, simulated)
    add_ips(2, FrozenClock(clock.now()))
    r = state_redis(settings)
    ReadSide(dataclasses.replace(settings, cache_ttl=H), r, clock).leaderboard("outflow", 24)
    assert 0 < r.pttl(keys.leaderboard(24)) <= 1800 / speed * 1000


def test_under_an_accelerated_clock_cache_ttl_counts_real_seconds(db, settings):
    """CACHE_TTL is real time at any clock speed: at 240 times real time, a minute into an hour (its end 14.75 real
    seconds away), a board one real second old (four simulated minutes) is not yet due for recomputing, and a value
    of that age has CACHE_TTL (4 real seconds) less that second to live."""
    speed = 240.0
    t = 1_800_000_000.0 - 1_800_000_000.0 % H + 60
    add_ips(2, FrozenClock(t))
    clock = FrozenClock(t)
    clock.speed = speed  # the demo's clock, stopped: real seconds are its seconds / 240
    r = state_redis(settings)
    side = ReadSide(dataclasses.replace(settings, leaderboard_precompute=(24,)), r, clock)
    assert side.refresh_common() == [24]
    assert r.pttl(keys.leaderboard(24)) > (TTL - 0.5) * 1000
    clock.advance(speed)
    assert side.refresh_common() == []  # one real second old: under half CACHE_TTL
    assert side._lifetime(t) == pytest.approx(TTL - 1)
    clock.advance(speed)
    assert side.refresh_common() == [24]  # two real seconds old: half CACHE_TTL


def test_the_filter_searches_every_ip_not_only_the_top(db, settings):
    """An IP ranked 510th (the cache once kept 500 rows) is found by the API's filter, with its rank."""
    clock = FrozenClock(1_800_000_000.0 - 1)
    ids = add_ips(510, clock)
    side = ReadSide(settings, state_redis(settings), clock)
    app = create_app(WebContext(settings=settings, read_side=side, status=dict, dead_letters=None,
                                auth=OperatorAuth(None)))
    server = BackgroundServer(app).start()
    try:
        url = f"{server.url}/api/v1/leaderboard?by=outflow&hours=24&q={quote('ip-0509')}"
        with urllib.request.urlopen(url, timeout=60) as response:
            body = json.loads(response.read())
    finally:
        server.stop()
    assert body["total"] == 510
    assert [(row["ip_id"], row["rank"], row["outflow"]) for row in body["rows"]] == [(ids[-1], 510, 1)]
    assert body["rows"][0]["sparkline"][-1] == 1


def test_db_init_adds_the_read_sides_indexes_to_existing_tables(db):
    """A table from before an index was declared gets it from ``animetop db init`` (``create_tables``), on MySQL
    too, where Peewee creates no index of an existing table."""
    from lib.core.db import database, is_mysql
    from lib.market.schema import create_tables

    def covering() -> list[str]:
        return [i.name for i in database.get_indexes("listing_events")
                if i.columns == ["kind", "event_at", "ip_id", "source_id", "price", "listed_price"]]

    [name] = covering()  # the table loses it, as one created before it was declared lacks it
    database.execute_sql(f"DROP INDEX {name} ON listing_events" if is_mysql() else f"DROP INDEX {name}")
    assert covering() == []
    create_tables()
    assert len(covering()) == 1
    create_tables()  # and again: nothing to add, nothing fails
    assert len(covering()) == 1


def test_leaderboard_precompute_takes_windows_of_whole_hours():
    from lib.core.settings import SettingsError, load_settings

    assert load_settings({"LEADERBOARD_PRECOMPUTE": "1d, 90d,36h"}).leaderboard_precompute == (24, 2160, 36)
    with pytest.raises(SettingsError, match="LEADERBOARD_PRECOMPUTE"):
        load_settings({"LEADERBOARD_PRECOMPUTE": "1d,90m"})


def test_a_cold_board_is_computed_once_while_viewers_wait_even_past_its_locks_ttl(db, settings, monkeypatch):
    """Viewers of a cold board of goods types (as of a leaderboard: the same code) while one process computes it
    wait for its result instead of computing it beside it; the computation's lock is re-armed while it runs, so
    one that outlasts ``COMPUTE_LOCK_TTL`` (the 90-day board of 10,000 IPs took 707 s against 600) keeps it."""
    import threading

    from lib.market import read_side
    from lib.segments.stored import GOODS

    monkeypatch.setattr(read_side, "COMPUTE_LOCK_TTL", 1.0)
    computing, release, computations = threading.Event(), threading.Event(), []
    real = read_side.kind_measures

    def held(*args, **kwargs):  # the real computation, held until the test has seen the lock outlive its TTL
        computations.append(threading.current_thread().name)
        computing.set()
        assert release.wait(30)
        return real(*args, **kwargs)

    monkeypatch.setattr(read_side, "kind_measures", held)
    client = state_redis(settings)
    clock = FrozenClock(1_800_000_000.0 + H / 2)  # mid-hour: the board is cached for CACHE_TTL
    answers: dict[str, dict] = {}

    def view(name: str) -> None:
        answers[name] = ReadSide(settings, client, clock).segments_board(24, GOODS)

    first = threading.Thread(target=view, args=("first",), name="first")
    first.start()
    assert computing.wait(30)
    lock = keys.lock(f"segments-board:{GOODS}:24")
    deadline = time.monotonic() + 1.5 * read_side.COMPUTE_LOCK_TTL
    while time.monotonic() < deadline:  # one and a half TTLs: the lock would have lapsed by now
        assert client.exists(lock), "the computation's lock lapsed while it ran"
        time.sleep(0.05)
    others = [threading.Thread(target=view, args=(f"viewer-{n}",), name=f"viewer-{n}") for n in range(3)]
    for t in others:
        t.start()
    wait_for(lambda: client.exists(lock) and all(t.is_alive() for t in others), timeout=5)
    release.set()
    for t in (first, *others):
        t.join(30)
    assert computations == ["first"]
    assert len(answers) == 4 and all(a == answers["first"] for a in answers.values())
    assert not client.exists(lock)


def test_the_refresh_actor_keeps_the_segments_boards_warm(db, settings, stub_broker, start_worker, monkeypatch):
    """The What sells page's boards (docs/concepts/measures.md "Segments") are recomputed ahead of viewers by the
    same actor as the leaderboards: each kind over each dashboard window within RETENTION_DETAIL (1 and 7 days; 30
    days is longer than its default 10 and refused to viewers too), when missing or past half its CACHE_TTL. The
    flows are counted here from the results: a goods type's outflow is its listings seen on sale, then sold."""
    import actors
    from lib.market import read_side
    from lib.segments.stored import CHARACTER, GOODS

    r = state_redis(settings)
    clock = Clock()
    proc = ResultProcessor(settings, r, clock)
    catalogue = Catalogue(ScheduleStore(r), settings, clock)
    titles = {"呪術廻戦": ["呪術廻戦 五条悟 アクリルスタンド"] * 3 + ["呪術廻戦 虎杖悠仁 缶バッジ"] * 3,
              "ちいかわ": ["ちいかわ ぬいぐるみ"] * 4}
    goods = {"呪術廻戦 五条悟 アクリルスタンド": "acrylic_stand", "呪術廻戦 虎杖悠仁 缶バッジ": "can_badge",
             "ちいかわ ぬいぐるみ": "plush"}
    sold_at_second = {"呪術廻戦": {0, 1, 3}, "ちいかわ": {0}}
    now = time.time()
    listings = {}
    for keyword, names in titles.items():
        ip = catalogue.add(keyword)
        base = [{"source_id": f"s{i}", "status": "on_sale", "price": 1000, "title": t} for i, t in enumerate(names)]
        listings[keyword] = (ip, base)
        proc.apply(CrawlResult.parse(ip.id, f"{ip.id}-1", now - 120, base))
        proc.apply(CrawlResult.parse(ip.id, f"{ip.id}-2", now - 60, [
            {**item, "status": "sold" if i in sold_at_second[keyword] else "on_sale"} for i, item in enumerate(base)]))

    def outflows(sold: dict[str, set[int]]) -> dict[str, int]:
        counted: dict[str, int] = {}
        for keyword, indexes in sold.items():
            for i in indexes:
                key = goods[titles[keyword][i]]
                counted[key] = counted.get(key, 0) + 1
        return counted

    def cached(by: str, hours: int) -> dict | None:
        hit = r.get(keys.segments_board(by, hours))
        return None if hit is None else json.loads(hit)

    def board_outflows(board: dict) -> dict[str, int]:
        return {row["key"]: row["measures"]["outflow"]["value"] for row in board["segments"]
                if row["measures"]["outflow"]["value"]}

    assert all(cached(by, hours) is None for by in (GOODS, CHARACTER) for hours in (24, 168, 720))
    start_worker(stub_broker, queues=["maintenance"])
    before = time.time()
    actors.refresh_leaderboards.send()
    stub_broker.join("maintenance", timeout=60_000)
    for hours in (24, 168):
        board = cached(GOODS, hours)
        assert board is not None and board["hours"] == hours
        assert board_outflows(board) == outflows(sold_at_second) == {"acrylic_stand": 2, "can_badge": 1, "plush": 1}
        assert 0 < r.pttl(keys.segments_board(GOODS, hours)) <= TTL * 1000
        assert cached(CHARACTER, hours) == {"hours": hours, "by": CHARACTER, "segments": []}  # no character lists
    assert cached(GOODS, 720) is None and cached(CHARACTER, 720) is None  # past RETENTION_DETAIL
    # a viewer finds it warm: nothing is computed for it
    monkeypatch.setattr(read_side, "kind_measures", lambda *a, **k: pytest.fail("computed for a viewer"))
    side = ReadSide(settings, r, clock)
    assert side.segments_board(24, GOODS) == cached(GOODS, 24)
    monkeypatch.undo()

    # one more stand sells: a board younger than half its CACHE_TTL is left alone ...
    ip, base = listings["呪術廻戦"]
    sold_at_third = {"呪術廻戦": {0, 1, 2, 3}, "ちいかわ": {0}}
    proc.apply(CrawlResult.parse(ip.id, f"{ip.id}-3", now - 30, [
        {**item, "status": "sold" if i in sold_at_third["呪術廻戦"] else "on_sale"} for i, item in enumerate(base)]))
    actors.refresh_leaderboards.send()
    stub_broker.join("maintenance", timeout=60_000)
    if time.time() - before < TTL / 2:  # (unless the machine was slow enough for it to age meanwhile)
        assert board_outflows(cached(GOODS, 24))["acrylic_stand"] == 2
    # ... past half of it, the actor recomputes every board: the page finds the new sale warm
    wait_for(lambda: r.pttl(keys.segments_board(GOODS, 168)) < TTL * 1000 / 2)
    actors.refresh_leaderboards.send()
    stub_broker.join("maintenance", timeout=60_000)
    for hours in (24, 168):
        assert board_outflows(cached(GOODS, hours)) == outflows(sold_at_third)
