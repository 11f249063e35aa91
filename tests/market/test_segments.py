"""docs/concepts/measures.md "Segments": the window measures of an IP's goods types and characters equal the
definitions computed here on the scripted market restricted to each segment's listings (tests/market/scripted.py),
on SQLite and MariaDB: derived when the results are applied, and again by ``reapply`` after the taxonomy or the
IP's character list changed. A listing in two segments counts in both."""

from __future__ import annotations

import dataclasses
from collections import defaultdict

import pytest

from lib.core.clock import FrozenClock
from lib.core.redis_client import state_redis
from lib.market.processing import CrawlResult, ResultProcessor
from lib.market.windows import segment_measures
from lib.scheduling.catalogue import Catalogue
from lib.scheduling.schedule import ScheduleStore
from lib.segments.character_store import remove_character, replace_characters
from lib.segments.stored import CHARACTER, GOODS, reapply
from models import ItemSnapshot, ListingSegment

from ..helpers import flatten
from .scripted import T0, Script, expected_window, make_script, restricted
from .test_hourly_rows import deliver
from .test_windows import MINIMUMS, close

#: The scripted listings' titles, with the goods types and characters each sells and names (written here from
#: the titles, not asked of the classifier). The third is a bundle of two types naming two characters.
TITLES: dict[str, tuple[set[str], set[str]]] = {
    "呪術廻戦 五条悟 アクリルスタンド": ({"acrylic_stand"}, {"五条悟"}),
    "呪術廻戦 虎杖悠仁 缶バッジ": ({"can_badge"}, {"虎杖悠仁"}),
    "呪術廻戦 缶バッジ アクスタ セット 五条悟 虎杖悠仁": ({"can_badge", "acrylic_stand"}, {"五条悟", "虎杖悠仁"}),
    "呪術廻戦 伏黒恵 ぬいぐるみ": ({"plush"}, {"伏黒恵"}),
    "呪術廻戦 フィギュア 五条悟": ({"figure"}, {"五条悟"}),
    "呪術廻戦 タオル": ({"other"}, set()),
}
CHARACTERS = [("五条悟", ["五条"]), ("虎杖悠仁", ["虎杖", "悠仁"]), ("伏黒恵", ["伏黒"])]

#: A taxonomy of the test's own: アクスタ is no longer a stand's word (only アクリルスタンド is), the badges are
#: ``badge``, and figures are not a type (so they are ``other``).
CHANGED_TAXONOMY = """
[[types]]
id = "acrylic_stand"
terms = ["アクリルスタンド"]

[[types]]
id = "badge"
terms = ["缶バッジ"]

[[types]]
id = "plush"
terms = ["ぬいぐるみ"]

[[types]]
id = "other"
"""
#: The goods types of TITLES by CHANGED_TAXONOMY.
CHANGED_GOODS = {
    "呪術廻戦 五条悟 アクリルスタンド": {"acrylic_stand"},
    "呪術廻戦 虎杖悠仁 缶バッジ": {"badge"},
    "呪術廻戦 缶バッジ アクスタ セット 五条悟 虎杖悠仁": {"badge"},
    "呪術廻戦 伏黒恵 ぬいぐるみ": {"plush"},
    "呪術廻戦 フィギュア 五条悟": {"other"},
    "呪術廻戦 タオル": {"other"},
}


def titles_of(script: Script) -> dict[str, str]:
    return {it["source_id"]: it["title"] for _, items in script.crawls for it in items}


def members(script: Script, segments_of: dict[str, set[str]]) -> dict[str, set[str]]:
    """Segment key → the listings seen by the script whose title is in it."""
    found: dict[str, set[str]] = defaultdict(set)
    for sid, title in titles_of(script).items():
        for key in segments_of[title]:
            found[key].add(sid)
    return dict(found)


def stored(ip_id: int, kind: str) -> dict[str, set[str]]:
    found: dict[str, set[str]] = defaultdict(set)
    for row in ListingSegment.select().where((ListingSegment.ip_id == ip_id) & (ListingSegment.kind == kind)):
        found[row.key].add(row.source_id)
    return dict(found)


def check_segments(script: Script, ip_id: int, kind: str, segments: dict[str, set[str]], hours: int,
                   now: float) -> dict[str, dict]:
    """Each segment's measures against the definitions over the script restricted to its listings; the
    segments answered are those with a listing created or sold in the window. Returns the expected values."""
    got = {key: flatten(m.to_json(), segment=True) for key, m in segment_measures(ip_id, kind, hours, now).items()}
    expected = {key: expected_window(restricted(script, sids), hours, now, MINIMUMS)
                for key, sids in segments.items()}
    assert set(got) == {key for key, e in expected.items() if e["inflow"] or e["outflow"]}, (hours, set(got))
    for key, values in got.items():
        wrong = {k: (v, expected[key][k]) for k, v in values.items() if not close(v, expected[key][k])}
        assert not wrong, (hours, key, wrong)
    return expected


def test_goods_segments_measure_their_listings_by_the_definitions(db, settings):
    script = make_script(7, n_crawls=30, titles=list(TITLES))
    now = max(at for at, _ in script.crawls) + 600
    ip_id = deliver(settings, script, "duplicated", 7)  # every result twice, shuffled: derived once
    goods = members(script, {title: g for title, (g, _) in TITLES.items()})
    assert stored(ip_id, GOODS) == goods
    assert stored(ip_id, CHARACTER) == {}  # the IP lists no characters
    bundles = goods["acrylic_stand"] & goods["can_badge"]
    assert bundles
    for hours in (6, 24):
        expected = check_segments(script, ip_id, GOODS, goods, hours, now)
        # a bundle counts in both its types: the segments' inflows add up to the IP's and the bundles' again
        whole = expected_window(script, hours, now, MINIMUMS)
        both = expected_window(restricted(script, bundles), hours, now, MINIMUMS)
        assert sum(e["inflow"] for e in expected.values()) == whole["inflow"] + both["inflow"] > whole["inflow"]
    # not vacuous: a day has enough of the stands' listings for every measure
    stands = expected_window(restricted(script, goods["acrylic_stand"]), 24, now, MINIMUMS)
    assert all(stands[k] is not None for k in ("median_price", "sell_through", "time_to_sell_median",
                                               "price_cut_share")), stands


def test_reapply_follows_a_taxonomy_change(db, settings, tmp_path):
    script = make_script(8, n_crawls=20, titles=list(TITLES))
    now = max(at for at, _ in script.crawls) + 600
    ip_id = deliver(settings, script, "in_order", 8)
    before = stored(ip_id, GOODS)
    taxonomy = tmp_path / "goods_types.toml"
    taxonomy.write_text(CHANGED_TAXONOMY, encoding="utf-8")
    changed = dataclasses.replace(settings, segments_taxonomy=str(taxonomy))

    report = reapply(changed, ip_id, batch=37)  # several batches
    goods = members(script, CHANGED_GOODS)
    assert stored(ip_id, GOODS) == goods != before
    assert report.listings == len(titles_of(script)) and report.added and report.removed
    assert report.changed_ips == [ip_id]
    for hours in (6, 24):
        check_segments(script, ip_id, GOODS, goods, hours, now)

    again = reapply(changed, batch=37)  # every IP: nothing left to change
    assert (again.added, again.removed, again.listings, again.changed_ips) == (0, 0, report.listings, [])
    # a listing no longer kept loses its rows
    gone = sorted(goods["badge"])[0]
    ItemSnapshot.delete().where((ItemSnapshot.ip_id == ip_id) & (ItemSnapshot.source_id == gone)).execute()
    swept = reapply(changed, ip_id, batch=37)
    assert (swept.added, swept.removed) == (0, 1)
    assert gone not in stored(ip_id, GOODS)["badge"]


def test_a_reapply_stopped_midway_leaves_what_it_changed_marked_for_the_rollup(db, settings, tmp_path, monkeypatch):
    """The segments' daily rows follow a reapply: each transaction that changes an IP's segments marks the IP's kept
    days for the rollup in the same transaction, so a reapply stopped after its first batch (a killed process)
    leaves no committed change unmarked, and the next rollup takes those days up."""
    from lib.core.clock import naive_utc
    from lib.market.daily import roll_up_pending
    from lib.market.read_side import ReadSide
    from lib.market.statistics import day_of
    from lib.segments import stored as segments_stored
    from models import IpDayPending, IpStatsDaily

    script = make_script(8, n_crawls=20, titles=list(TITLES))
    now = max(at for at, _ in script.crawls) + 2 * 86_400.0  # the script's days are complete
    ip_id = deliver(settings, script, "in_order", 8)
    roll_up_pending(now)
    days = {d for (d,) in IpStatsDaily.select(IpStatsDaily.day).where(IpStatsDaily.ip_id == ip_id).tuples()}
    assert days and not IpDayPending.select().exists()
    taxonomy = tmp_path / "goods_types.toml"
    taxonomy.write_text(CHANGED_TAXONOMY, encoding="utf-8")
    changed = dataclasses.replace(settings, segments_taxonomy=str(taxonomy))
    batch, calls = segments_stored._reapply_batch, []

    def stopped_after_the_first(*args, **kwargs):
        if calls:
            raise KeyboardInterrupt  # the process stopped between two batches
        calls.append(1)
        return batch(*args, **kwargs)

    monkeypatch.setattr(segments_stored, "_reapply_batch", stopped_after_the_first)
    with pytest.raises(KeyboardInterrupt):
        segments_stored.resegment(changed, ReadSide(changed, None, FrozenClock(now)), ip_id)
    since = day_of(naive_utc(now - settings.retention_detail))
    marked = {d for (d,) in IpDayPending.select(IpDayPending.day).where(IpDayPending.ip_id == ip_id).tuples()}
    assert marked == {d for d in days if d >= since} != set()
    assert roll_up_pending(now) == len(marked)


def test_character_segments_follow_the_ip_character_list(db, settings):
    """Characters listed before the results come are matched as they are applied; a character removed from the
    list loses its segment at the next reapply."""
    script = make_script(9, n_crawls=20, titles=list(TITLES))
    now = max(at for at, _ in script.crawls) + 600
    r = state_redis(settings)
    ip_id = Catalogue(ScheduleStore(r), settings, FrozenClock(T0)).add("呪術廻戦 characters").id
    replace_characters(ip_id, CHARACTERS)
    proc = ResultProcessor(settings, r, FrozenClock(T0))
    for n, (at, items) in enumerate(script.crawls):
        proc.apply(CrawlResult.parse(ip_id, f"{ip_id}-{n}", at, items, search=script.search[n]))
    characters = members(script, {title: c for title, (_, c) in TITLES.items()})
    assert stored(ip_id, CHARACTER) == characters
    assert characters["五条悟"] & characters["虎杖悠仁"]  # a listing naming two characters is in both
    check_segments(script, ip_id, CHARACTER, characters, 12, now)

    assert remove_character(ip_id, "伏黒恵") is not None
    report = reapply(settings, ip_id)
    assert (report.added, report.removed) == (0, len(characters.pop("伏黒恵")))
    assert stored(ip_id, CHARACTER) == characters
    check_segments(script, ip_id, CHARACTER, characters, 12, now)


def test_the_board_across_ips_pools_every_ips_listings_of_a_type(db, settings, env):
    """docs/concepts/measures.md "Segments": what sells across franchises. Two IPs' scripted markets: each goods
    type's flows are the IPs' flows of that type added up; its sold prices and its cohort are the pooled
    listings' (computed here from the definitions' events), so its median price and sell-through are the pooled
    ones. The CLI prints the same board."""
    import json
    import statistics

    from lib.market.read_side import ReadSide

    from ..helpers import run_cli
    from .scripted import _starts, expected_events

    scripts = {seed: make_script(seed, n_crawls=24, titles=list(TITLES)) for seed in (17, 18)}
    now = max(at for s in scripts.values() for at, _ in s.crawls) + 600
    ips = {seed: deliver(settings, script, "in_order", seed) for seed, script in scripts.items()}
    goods_of = {title: g for title, (g, _) in TITLES.items()}
    hours = 24
    board = ReadSide(settings, None, FrozenClock(now)).segments_board(hours, GOODS)
    got = {row["key"]: row["measures"] for row in board["segments"]}
    since, cohort_since, _, _ = _starts(now, hours, None)
    end = now + 1e-6
    expected: dict[str, dict] = {}
    for key in {k for g in goods_of.values() for k in g}:
        inflow = outflow = sold_of_cohort = cohort = 0
        prices: list[int] = []
        for script in scripts.values():
            segment = restricted(script, members(script, goods_of).get(key, set()))
            one = expected_window(segment, hours, now, MINIMUMS)
            inflow, outflow = inflow + one["inflow"], outflow + one["outflow"]
            created, sold = expected_events(segment)
            first_sale: dict[str, float] = {}
            for sid, when, *_ in sorted(sold, key=lambda e: e[1]):
                first_sale.setdefault(sid, when)
            prices += [p for _, when, p, _, _ in sold if cohort_since <= when < end and p is not None]
            in_cohort = [sid for sid, when in created if cohort_since <= when < end]
            cohort += len(in_cohort)
            sold_of_cohort += sum(1 for sid in in_cohort if sid in first_sale and first_sale[sid] < end)
        if inflow or outflow:
            expected[key] = {"inflow": inflow, "outflow": outflow,
                             "median_price": statistics.median(prices) if len(prices) >= MINIMUMS["prices"] else None,
                             "sell_through": sold_of_cohort / cohort if cohort >= MINIMUMS["created"] else None}
    assert set(got) == set(expected)
    for key, e in expected.items():
        values = {k: got[key][k]["value"] for k in e}
        assert all(close(values[k], e[k]) for k in e), (key, values, e)
    assert got["acrylic_stand"]["median_price"]["value"] is not None  # not vacuous
    assert [row["key"] for row in board["segments"]] == sorted(
        expected, key=lambda k: (-expected[k]["outflow"], -expected[k]["inflow"], k))
    # the IPs' own boards add up to it
    for key in ("can_badge", "acrylic_stand"):
        per_ip = [segment_measures(ip, GOODS, hours, now).get(key) for ip in ips.values()]
        assert sum(m.outflow.value for m in per_ip if m) == got[key]["outflow"]["value"]
    # the command line (on the wall clock, the scripted market's hours ahead of it: the table's shape, and JSON)
    table = run_cli(env, "segments", "board", "--hours", "24")
    assert table.returncode == 0, table.stderr
    assert table.stdout.startswith("Across every IP, last 24 h by goods") and "GOODS" in table.stdout
    shown = run_cli(env, "segments", "board", "--format", "json")
    assert shown.returncode == 0 and json.loads(shown.stdout)["hours"] == 168, shown.stderr
    assert run_cli(env, "segments", "board", "--hours", "100000").returncode == 1  # past RETENTION_WINDOW
