"""Sightings stored as runs (docs/concepts/measures.md, definition 4), on SQLite and MariaDB: a listing seen
unchanged by N crawls is one row, not N; the runs, and the events derived from them, are the same whatever the
order and repetition of the results; and ``animetop db init`` turns a database that stored one sighting per
listing and crawl into runs without changing a measure. The runs are checked against a computation written here
from the crawls themselves (tests/market/scripted.py's scripts)."""

from __future__ import annotations

import dataclasses
import random
from collections import defaultdict

import pytest
from playhouse.migrate import SchemaMigrator, migrate

from lib.core import keys
from lib.core.clock import FrozenClock
from lib.core.db import database
from lib.core.redis_client import state_redis
from lib.market.facts import baseline_of, rederive
from lib.market.migrate import migrate_market_facts
from lib.market.processing import CrawlResult, ResultProcessor
from lib.market.schema import create_tables
from lib.market.windows import window_measures
from lib.scheduling.catalogue import Catalogue
from lib.scheduling.schedule import ScheduleStore
from models import AppliedResult, IpStatsHourly, ListingEvent, ListingSighting

from .scripted import T0, H, Script, expected_events, make_script


def runs_by_definition(script: Script) -> set[tuple]:
    """Each listing's runs: the maximal sets of consecutive crawls of the script that saw it with the same status,
    price and created time (and, sold, updated time), as (source_id, first crawl, last crawl, status, price)."""
    crawls = sorted({at for at, _ in script.crawls})
    seen: dict[str, dict[float, tuple]] = defaultdict(dict)
    for at, items in sorted(script.crawls, key=lambda c: c[0]):
        for it in items:
            key = (it["status"], it["price"], it["created"], it["updated"] if it["status"] == "sold" else None)
            seen[it["source_id"]].setdefault(at, key)
    runs = set()
    for sid, by_crawl in seen.items():
        start = previous = None
        for at in crawls:
            key = by_crawl.get(at)
            if start is not None and (key is None or key != by_crawl[previous]):
                runs.add((sid, start, previous, *by_crawl[start][:2]))
                start = None
            if key is not None and start is None:
                start = at
            previous = at if key is not None else previous
        if start is not None:
            runs.add((sid, start, previous, *by_crawl[start][:2]))
    return runs


def new_ip(settings, name: str) -> int:
    return Catalogue(ScheduleStore(state_redis(settings)), settings, FrozenClock(T0)).add(
        f"{name} {random.random()}").id


def apply_all(settings, ip_id: int, results: list[tuple[str, float, list[dict]]]) -> None:
    proc = ResultProcessor(settings, state_redis(settings), FrozenClock(T0))
    for task, at, items in results:
        proc.apply(CrawlResult.parse(ip_id, f"{ip_id}-{task}", at, items))


def stored_runs(ip_id: int) -> set[tuple]:
    return {(s.source_id, s.crawled_at, s.last_seen, s.status, s.price)
            for s in ListingSighting.select().where(ListingSighting.ip_id == ip_id)}


def stored_events(ip_id: int) -> list[tuple]:
    return sorted((e.source_id, e.kind, e.occurrence, e.event_at, e.price, e.listed_price, e.created_at)
                  for e in ListingEvent.select().where(ListingEvent.ip_id == ip_id))


def test_a_listing_seen_unchanged_by_n_crawls_stores_one_row(db, settings):
    ip_id = new_ip(settings, "runs")
    steady = {"source_id": "a", "title": "a", "status": "on_sale", "price": 500, "created": T0 - H,
              "updated": None}
    crawls = [(f"c{n}", T0 + n * H, [{**steady, "updated": T0 + n}]) for n in range(30)]  # on sale: updated moves
    apply_all(settings, ip_id, crawls)
    assert stored_runs(ip_id) == {("a", T0, T0 + 29 * H, "on_sale", 500)}
    # a sale, then the listing stays sold: one more row however many crawls see it sold
    sold = {**steady, "status": "sold", "price": 450, "updated": T0 + 30 * H - 60}
    apply_all(settings, ip_id, [(f"s{n}", T0 + (30 + n) * H, [sold]) for n in range(20)])
    assert stored_runs(ip_id) == {("a", T0, T0 + 29 * H, "on_sale", 500),
                                  ("a", T0 + 30 * H, T0 + 49 * H, "sold", 450)}


def test_a_late_crawl_that_did_not_see_a_listing_cuts_its_run(db, settings):
    """Seen at the first and third crawls, not at the second, which arrives last: two runs, as in order."""
    a = {"source_id": "a", "title": "a", "status": "on_sale", "price": 500, "created": T0 - H, "updated": None}
    b = {**a, "source_id": "b"}
    crawls = [("c0", T0, [a, b]), ("c1", T0 + H, [b]), ("c2", T0 + 2 * H, [a, b])]
    expected = runs_by_definition(Script([(at, items) for _, at, items in crawls]))
    assert ("a", T0, T0, "on_sale", 500) in expected
    for order in (crawls, [crawls[0], crawls[2], crawls[1]], [crawls[2], crawls[0], crawls[1]]):
        ip_id = new_ip(settings, "gap")
        apply_all(settings, ip_id, order)
        assert stored_runs(ip_id) == expected, [task for task, _, _ in order]


def deliveries(script: Script, order: str, rng: random.Random) -> list[tuple[str, float, list[dict]]]:
    results = [(f"t{n}", at, items) for n, (at, items) in enumerate(script.crawls)]
    if order == "shuffled":
        rng.shuffle(results)
    elif order == "repeated":  # every result twice, and again under another task id (the same crawl sent twice)
        results = results * 2 + [(f"again-{task}", at, items) for task, at, items in results]
        rng.shuffle(results)
    elif order == "late":  # every other crawl held back, then delivered newest first
        results = results[::2] + results[1::2][::-1]
    return results


@pytest.mark.parametrize("seed", [1, 2])
def test_runs_and_events_are_the_same_in_any_order(db, settings, seed):
    """Late crawls land inside runs: they cut a run where they saw the listing changed or did not see it, and
    extend or join runs where they saw it unchanged. The listings of the script drop off its pages and come back,
    sell, relist and change price."""
    script = make_script(seed, n_crawls=14, on_sale_page=25, sold_page=20)
    expected = runs_by_definition(script)
    created, sold = expected_events(script)
    rng = random.Random(seed)
    got = {}
    for order in ("in_order", "shuffled", "repeated", "late"):
        ip_id = new_ip(settings, order)
        apply_all(settings, ip_id, deliveries(script, order, rng))
        runs = stored_runs(ip_id)
        assert runs == expected, (order, sorted(runs ^ expected)[:6])
        got[order] = stored_events(ip_id)
        events = {(sid, kind, at) for sid, kind, _, at, *_ in got[order]}
        assert events == {(sid, "created", at) for sid, at in created} | {(s[0], "sold", s[1]) for s in sold}, order
    assert all(events == got["in_order"] for events in got.values())
    sightings = sum(len(items) for _, items in script.crawls)
    assert len(expected) < sightings  # a busy little market: its listings drop off the pages, sell and come back


def test_the_runs_a_newest_crawl_hands_to_its_derivation_are_the_stored_ones(db, settings, monkeypatch):
    """A crawl after every other reads the runs of the listings whose events it derives with the runs it extends,
    and hands them over as its writes leave them: each time, they equal the stored runs read afterwards."""
    from lib.market import facts, processing

    compared = []

    def checked(ip_id, crawled_at, items, neighbours, derive=()):
        handed = facts.store_sightings(ip_id, crawled_at, items, neighbours, derive)
        if handed is not None:
            assert set(handed) == set(derive)
            assert handed == {sid: runs for sid, runs in facts._runs(ip_id, sorted(derive)).items()} | \
                {sid: [] for sid in derive if not handed[sid]}
            compared.append(len(handed))
        return handed

    monkeypatch.setattr(processing, "store_sightings", checked)
    script = make_script(3, n_crawls=12, on_sale_page=25, sold_page=20)
    ip_id = new_ip(settings, "handed")
    apply_all(settings, ip_id, deliveries(script, "in_order", random.Random(3)))
    assert stored_runs(ip_id) == runs_by_definition(script)
    assert len(compared) == 12 and sum(compared) > 100  # every crawl, and listings with runs of their own
    # item states lost before every crawl (and too old to read back from the snapshots): every listing's events are
    # derived again, so the runs handed over include the ones the crawl extends
    forgetful = ResultProcessor(dataclasses.replace(settings, analyzer_item_ttl_available=1.0,
                                                    analyzer_item_ttl_sold=1.0), state_redis(settings),
                                FrozenClock(T0))
    ip_id = new_ip(settings, "forgetful")
    for task, at, items in deliveries(script, "in_order", random.Random(3)):
        for key in state_redis(settings).scan_iter(match=keys.item_state(ip_id, "*")):
            state_redis(settings).delete(key)
        forgetful.apply(CrawlResult.parse(ip_id, f"{ip_id}-{task}", at, items))
    assert stored_runs(ip_id) == runs_by_definition(script)
    assert len(compared) == 24 and sum(compared[12:]) > sum(len(items) for _, items in script.crawls) // 2


def measures(ip_id: int, now: float) -> dict[int, dict]:
    return {hours: window_measures([ip_id], hours, now)[ip_id] for hours in (3, 12, 24)}


def test_db_init_turns_sightings_stored_per_crawl_into_runs(db, settings):
    """A database written by the previous version: a sighting row per listing and crawl, no ``last_seen`` column.
    ``db init`` adds the column, keeps each run's first row with its last crawl and drops the others; the events,
    hourly rows and every window measure are what they were, and it runs once."""
    scripts = [make_script(4, n_crawls=16, on_sale_page=30, sold_page=20), make_script(5, api=False, n_crawls=12)]
    ips = []
    for n, script in enumerate(scripts):
        ip_id = new_ip(settings, f"old {n}")
        apply_all(settings, ip_id, [(f"t{k}", at, items) for k, (at, items) in enumerate(script.crawls)])
        ips.append(ip_id)
    now = max(at for s in scripts for at, _ in s.crawls) + 600
    before = {ip: (stored_events(ip), measures(ip, now), sorted(
        (r.hour_bucket, r.inflow, r.outflow, r.sample_count, r.median_price)
        for r in IpStatsHourly.select().where(IpStatsHourly.ip_id == ip))) for ip in ips}
    # the previous version's rows, as its store_sightings wrote them: every item of every crawl
    ListingSighting.delete().execute()
    migrate(SchemaMigrator.from_database(database.obj).drop_column("listing_sightings", "last_seen"))
    for ip_id, script in zip(ips, scripts, strict=True):
        rows = [{"ip_id": ip_id, "source_id": it["source_id"], "crawled_at": at, "status": it["status"],
                 "price": it["price"], "created": it["created"], "updated": it["updated"]}
                for at, items in script.crawls for it in items]
        for start in range(0, len(rows), 400):
            ListingSighting.insert_many(rows[start:start + 400]).execute()
    assert ListingSighting.select().count() == sum(len(items) for s in scripts for _, items in s.crawls)

    create_tables()
    migrate_market_facts()

    for ip_id, script in zip(ips, scripts, strict=True):
        assert stored_runs(ip_id) == runs_by_definition(script)
        assert (stored_events(ip_id), measures(ip_id, now), sorted(
            (r.hour_bucket, r.inflow, r.outflow, r.sample_count, r.median_price)
            for r in IpStatsHourly.select().where(IpStatsHourly.ip_id == ip_id))) == before[ip_id]
        sids = [sid for (sid,) in ListingSighting.select(ListingSighting.source_id)
                .where(ListingSighting.ip_id == ip_id).distinct().tuples()]
        assert not rederive(ip_id, sids, baseline_of(ip_id) or 0.0).hours  # the events read from the runs agree
    assert ListingSighting.select().count() < sum(len(items) for s in scripts for _, items in s.crawls)
    assert migrate_market_facts() == []  # once
    # the IP goes on from the runs: a new crawl extends them
    last_at, last_items = scripts[0].crawls[-1]
    apply_all(settings, ips[0], [("next", last_at + H, last_items)])
    extended = Script([*scripts[0].crawls, (last_at + H, last_items)])
    assert stored_runs(ips[0]) == runs_by_definition(extended)
    assert AppliedResult.select().where(AppliedResult.ip_id == ips[0]).count() == len(extended.crawls)
