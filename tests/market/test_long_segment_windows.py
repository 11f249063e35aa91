"""Segments over long windows (docs/concepts/measures.md "Segments", docs/operating/storage.md "Long windows"), on
SQLite and MariaDB: a segment is one more key of the daily summaries, so a pruning pass folds each dormant listing
into its goods types' days (``segment_stats_daily``) as into its IP's, and a segments window reaching past
RETENTION_DETAIL answers the same before and after it — counts exactly, sold prices within α, times to sell within
their buckets, the intervals by their definitions — and equals the definitions computed here over the script
restricted to each segment (tests/market/scripted.py), never by the production computation."""

from __future__ import annotations

import pytest

from lib.core.clock import FrozenClock
from lib.market.read_side import ReadSide
from lib.market.retention import detail_horizon, prune, segment_horizon, segments_summarized_from
from lib.market.summaries import CUT_ACCURACY, DURATION_ACCURACY, PRICE_ACCURACY
from lib.market.windows import kind_measures
from lib.segments.character_store import replace_characters
from lib.segments.stored import CHARACTER, GOODS
from models import ListingEvent, SegmentStatsDaily

from ..helpers import flatten
from .scripted import (
    T0,
    H,
    _starts,
    expected_events,
    expected_hours,
    expected_window,
    make_script,
    restricted,
    shifted,
    window_durations,
)
from .test_intervals import km_interval_by_hand
from .test_long_windows import QUANTILES, WINDOW, short  # noqa: F401  (short: the fixture)
from .test_retention import DAY, add_ip, apply, long_lived, merged
from .test_segments import CHARACTERS, TITLES, members
from .test_summaries import bracket, represented
from .test_windows import MINIMUMS, close

#: Each title's goods types (TITLES'), and the long-lived listings' (titled by their ids: no type, so ``other``).
GOODS_OF = {**{title: goods for title, (goods, _) in TITLES.items()}, **{f"L{k}": {"other"} for k in range(20)}}
#: Each title's characters (none for the long-lived listings).
CHARACTERS_OF = {**{title: names for title, (_, names) in TITLES.items()}, **{f"L{k}": set() for k in range(20)}}
PER_LISTING = ("median_price", "p25_price", "p75_price", "trimmed_mean_price", "sell_through", "time_to_sell_median",
               "time_to_sell_p25", "time_to_sell_p75", "price_cut_share", "median_price_cut")


def history():
    """tests/market/test_long_windows.py's eight days of markets, their listings titled with TITLES."""
    days = [shifted(make_script(seed, n_crawls=30, titles=list(TITLES)), offset * DAY)
            for seed, offset in ((11, -8), (12, -6), (13, -4), (14, -2), (15, 0))]
    end = max(at for at, _ in days[-1].crawls)
    return merged(*days, long_lived(T0 - 5 * DAY, end)), end


def expected_segment(script, hours: int, now: float, detail: float) -> dict:
    """The definitions over the segment's listings, a long window's measures from the UTC midnight of its first
    hour (definition 7), flows too: its listings created and its sales from that midnight, over the IP's tracked
    hours from it."""
    _, cohort_since, _, _ = _starts(now, hours, detail)
    end = now - now % H + H
    created, sold = expected_events(script)
    expected = expected_window(script, hours, now, MINIMUMS, detail_from=detail)
    inflow = sum(1 for _, at in created if cohort_since <= at < end)
    outflow = sum(1 for _, at, *_ in sold if cohort_since <= at < end)
    return expected | {"inflow": inflow, "outflow": outflow, "liquidity": outflow / inflow if inflow else None,
                       "tracked_hours": sum(1 for h in expected_hours(script) if cohort_since <= h < end)}


def segments(settings, ip_id: int, at: float, hours: int, kind: str = GOODS) -> dict[str, dict]:
    answer = ReadSide(settings, None, FrozenClock(at)).segments(ip_id, hours, kind)
    return {s["key"]: s["measures"] for s in answer["segments"]}


@pytest.mark.slow  # eight days of markets, pruned
def test_segments_answer_long_windows_from_their_daily_summaries(db, short):  # noqa: F811
    script, end = history()
    ip_id = add_ip(short)
    replace_characters(ip_id, CHARACTERS)
    apply(short, ip_id, script)
    now = end + 600
    detail = detail_horizon(short, now)
    kinds = {GOODS: members(script, GOODS_OF), CHARACTER: members(script, CHARACTERS_OF)}
    windows = (24, 60, 80, WINDOW)  # the last two start past the detail horizon (60 h: its previous window does)
    before = {(kind, hours): segments(short, ip_id, now, hours, kind) for kind in kinds for hours in windows}
    assert [now - now % H - (hours - 1) * H < detail for hours in windows] == [False, False, True, True]
    for (kind, hours), got in before.items():  # the definitions, before any pass
        restricted_to = {key: restricted(script, sids) for key, sids in kinds[kind].items()}
        expected = {key: expected_segment(seg, hours, now, detail) for key, seg in restricted_to.items()}
        assert set(got) == {key for key, e in expected.items() if e["inflow"] or e["outflow"]}, hours
        for key, m in got.items():
            values = flatten(m, segment=True) | {
                f"{k}_interval": m[k]["interval"] for k in ("median_price", "sell_through")} | {
                f"time_to_sell_{k}_interval": m["time_to_sell_hours"][k]["interval"] for k in ("p25", "median", "p75")}
            wrong = {k: (v, expected[key][k]) for k, v in values.items() if not close(v, expected[key][k])}
            assert not wrong, (hours, key, wrong)
    for kind, key in ((GOODS, "acrylic_stand"), (CHARACTER, "五条悟")):
        long = before[kind, WINDOW][key]
        assert long["median_price"]["value"] is not None and long["time_to_sell_hours"]["median"]["interval"], key
    events = ListingEvent.select().where(ListingEvent.ip_id == ip_id).count()

    report = prune(short, now)

    # the first pass: summarized from the start, kept from the segments' horizon (the windows read no further back)
    assert report.dormant_listings > 500 and segments_summarized_from() == segment_horizon(short, now)
    assert ListingEvent.select().where(ListingEvent.ip_id == ip_id).count() < events / 2
    # every goods type's days, each pruned listing counted once per type it is in
    rows = SegmentStatsDaily.select().where(SegmentStatsDaily.ip_id == ip_id)
    assert {(r.kind, r.key) for r in rows} == {(kind, key) for kind, found in kinds.items() for key in found}
    for (kind, hours), was in before.items():
        after = segments(short, ip_id, now, hours, kind)
        assert set(after) == set(was), (kind, hours)
        for key, sids in kinds[kind].items():
            if key in after:
                assert_within_bounds(was[key], after[key], restricted(script, sids), hours, now, detail)
    # the board across IPs reads the same summaries (one IP here: its segments, over the window's hours)
    board = kind_measures(GOODS, WINDOW, now, detail_from=detail)
    mine = segments(short, ip_id, now, WINDOW)
    assert set(board) == set(mine)
    for key, m in board.items():
        assert {k: v for k, v in flatten(m.to_json(), segment=True).items()} == flatten(mine[key], segment=True), key
    # a second pass changes nothing
    assert prune(short, now).dormant_listings == 0
    assert segments(short, ip_id, now, WINDOW) == mine


def assert_within_bounds(before: dict, after: dict, script, hours: int, at: float, detail: float) -> None:
    """``after`` (partly from the segment's summaries) against ``before`` (all from the per-listing facts), as
    tests/market/test_long_windows.py checks an IP's."""
    a, b = flatten(after, segment=True), flatten(before, segment=True)
    assert {k: a[k] for k in ("inflow", "outflow", "tracked_hours", "liquidity", "sell_through", "price_cut_share")} \
        == {k: b[k] for k in ("inflow", "outflow", "tracked_hours", "liquidity", "sell_through", "price_cut_share")}
    assert {k: v["n"] for k, v in after.items() if "n" in v} == {k: v["n"] for k, v in before.items() if "n" in v}
    for k in ("median_price", "p25_price", "p75_price", "trimmed_mean_price"):
        assert (a[k] is None) == (b[k] is None), k
        assert b[k] is None or abs(a[k] - b[k]) <= PRICE_ACCURACY * b[k] + 0.01, (k, a[k], b[k])
    k = "median_price_cut"
    assert b[k] is None or abs(a[k] - b[k]) <= CUT_ACCURACY * b[k] + 1e-4, (a[k], b[k])
    durations = window_durations(script, hours, at, detail)
    since = at - at % H - (hours - 1) * H
    bucketed = represented(durations, DURATION_ACCURACY) if since < detail else durations
    for k, q in QUANTILES.items():
        assert (a[k] is None) == (b[k] is None) or a[k] is None, k
        if b[k] is not None and a[k] is not None:
            low, high = bracket(durations, q, DURATION_ACCURACY)
            assert low is not None and high is not None and low / H - 0.005 <= a[k] <= high / H + 0.005, (k, a[k])
        expected = km_interval_by_hand(bucketed, q) if a[k] is not None else None
        got = after["time_to_sell_hours"][k.removeprefix("time_to_sell_")]["interval"]
        assert (got is None) == (expected is None), (k, got, expected)
        if got is not None and expected is not None:
            assert got[0] == pytest.approx(expected[0] / H, abs=0.0051) and (got[1] is None) == (expected[1] is None)
            assert got[1] is None or got[1] == pytest.approx(expected[1] / H, abs=0.0051), (k, got, expected)


def test_a_segments_window_before_the_first_segment_summaries_is_refused(db, short):  # noqa: F811
    """A database pruned by a version without segments' summaries: its first pass with them marks where they begin
    (the detail horizon pruned to before), and a segments window whose measures start before it is refused with
    that reason, not answered short of the listings pruned then; the IP's own windows are not affected."""
    from lib.core.db import write_transaction
    from lib.market.marks import DETAILS_PRUNED_BEFORE
    from lib.market.retention import WindowBeyondRetention
    from lib.market.retention import _set_mark as set_mark

    now = T0 + 10 * DAY + 5 * H
    earlier = now - now % DAY - 2 * DAY  # what the earlier version's passes pruned to
    with write_transaction():
        set_mark(earlier, DETAILS_PRUNED_BEFORE)
    ip_id = add_ip(short)
    prune(short, now)
    assert segments_summarized_from() == earlier
    side = ReadSide(short, None, FrozenClock(now))
    assert side.segments(ip_id, 24, GOODS)["segments"] == []  # starts after it
    with pytest.raises(WindowBeyondRetention, match="segments' daily summaries begin"):
        side.segments(ip_id, 72, GOODS)
    with pytest.raises(WindowBeyondRetention, match="segments' daily summaries begin"):
        side.segments_board(72, GOODS)
    assert side.measures(ip_id, 72).inflow.n == 0  # the IP's window is answered
    # a later pass keeps the mark where it was
    prune(short, now + DAY)
    assert segments_summarized_from() == earlier
