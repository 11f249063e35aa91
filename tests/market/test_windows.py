"""Definitions 5 and 6: the window measures, heat and momentum equal the independent computation
(tests/market/scripted.py) for scripted markets on SQLite and MariaDB, in any delivery order; below their
minimum the measures are insufficient (None with their count), never 0."""

from collections import defaultdict

import pytest

from lib.market.windows import (
    Window,
    _IpData,
    _listings_by_key,
    _load_listings,
    _SegmentListings,
    window_measures,
)
from models import ListingEvent, ListingSegment

from ..helpers import flatten
from .scripted import expected_hours, expected_window, make_script
from .test_hourly_rows import deliver

MINIMUMS = {"prices": 5, "created": 10, "sales": 5, "cuts": 5, "coverage": 10}  # docs/concepts/measures.md's


def close(a, b, places=2):
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b) == 2 and not isinstance(a[0], list):
        # an interval [low, high]: equal once rounded, or one unit of the last place apart (x.xx5 rounds either way)
        return all(close(x, y, places) or (x is not None and y is not None and abs(x - y) <= 10 ** -places)
                   for x, y in zip(a, b, strict=True))
    if isinstance(a, list) or isinstance(b, list):  # a curve of [hours, share] points (stored to 4 places)
        return isinstance(a, list) and isinstance(b, list) and len(a) == len(b) and all(
            abs(x[0] - y[0]) < 1e-3 and abs(x[1] - y[1]) < 1e-3 for x, y in zip(a, b, strict=True))
    if a is None or b is None:
        return a is None and b is None
    return round(a, places) == round(b, places)


@pytest.mark.parametrize("seed", [4, 5])
def test_window_measures_equal_the_definition(db, settings, seed):
    script = make_script(seed, n_crawls=30)
    now = max(at for at, _ in script.crawls) + 600
    ip_ids = [deliver(settings, script, order, seed) for order in ("in_order", "duplicated")]
    for hours in (6, 12, 24, 1):
        expected = expected_window(script, hours, now, MINIMUMS)
        for ip_id in ip_ids:
            got = flatten(window_measures([ip_id], hours, now)[ip_id].to_json())
            wrong = {k: (got[k], expected[k]) for k in expected if not close(got[k], expected[k])}
            assert not wrong, (hours, wrong)
        if hours == 6:  # the script has enough for each measure here
            assert all(expected[k] is not None for k in ("median_price", "sell_through", "time_to_sell_median",
                                                         "heat", "momentum", "coverage", "hours_of_supply",
                                                         "median_price_interval", "sell_through_interval",
                                                         "time_to_sell_median_interval", "heat_interval",
                                                         "momentum_interval")), expected


def test_a_window_read_as_of_a_past_time_prices_the_sales_up_to_then(db, settings):
    """Read as of a time before the last crawls (a backtest, a benchmark's day), a window's price quantiles are
    those of the sales stored with a time inside it: not of the sales after it (all crawls applied, the
    observations of later crawls included: a read of the past sees what is known now)."""
    import statistics

    from models import ListingEvent

    script = make_script(4, n_crawls=30)
    times = sorted(at for at, _ in script.crawls)
    ip_id = deliver(settings, script, "in_order", 4)
    for now in (times[len(times) // 2] + 600, times[2 * len(times) // 3] + 600):
        start = now - now % 3600 - 5 * 3600  # six hours, the current one included
        prices = [p for (p,) in ListingEvent.select(ListingEvent.price).where(
            (ListingEvent.ip_id == ip_id) & (ListingEvent.kind == "sold") & (ListingEvent.event_at >= start)
            & (ListingEvent.event_at <= now) & ListingEvent.price.is_null(False)).tuples()]
        assert len(prices) >= MINIMUMS["prices"]
        got = window_measures([ip_id], 6, now)[ip_id]
        assert got.median_price.n == len(prices) and got.median_price.value == statistics.median(prices)


def test_insufficient_is_not_zero(db, settings):
    script = make_script(6, n_crawls=3)
    ip_id = deliver(settings, script, "in_order", 6)
    now = max(at for at, _ in script.crawls) + 60
    m = window_measures([ip_id], 1, now)[ip_id].to_json()
    for name in ("heat", "momentum"):
        assert m[name]["value"] is None  # no trailing baseline yet
    assert m["heat"]["n"] >= 0
    few = [k for k in ("median_price", "sell_through", "price_cut_share") if m[k]["n"] < MINIMUMS["prices"]]
    assert all(m[k]["value"] is None for k in few)


def test_insufficient_says_why_and_when(db, settings):
    """docs/concepts/measures.md, "Insufficient": each null measure says what it needs and what the window has,
    in the words written here from the definitions' minimums; heat says when its baseline will be long enough."""
    import datetime

    script = make_script(6, n_crawls=3)
    ip_id = deliver(settings, script, "in_order", 6)
    now = max(at for at, _ in script.crawls) + 60
    m = window_measures([ip_id], 1, now)[ip_id].to_json()
    wants = {"median_price": (5, "sold prices in the window"), "sell_through": (10, "listings created in the window"),
             "price_cut_share": (5, "sales in the window seen on sale first"),
             "coverage": (10, "sales of growth in the sold search's total between the window's crawls")}
    told = 0
    for name, (minimum, what) in wants.items():
        n = m[name]["n"]
        if n < minimum:
            assert m[name]["value"] is None
            assert m[name]["why"] == f"needs {minimum} {what}, " + (f"has {n}" if n else "has none"), name
            told += 1
    assert told >= 2
    for name, measure in m.items():
        if isinstance(measure, dict) and "n" in measure:
            assert ("why" in measure) is (measure["value"] is None), name  # every null says why, no value does
    # the tracked hours before the window (of the 7 days): 24 needed, one more each hour from now on
    since = now - now % 3600
    before = sum(1 for h in expected_hours(script) if since - 7 * 24 * 3600 <= h < since)
    assert before < 24
    hour = datetime.datetime.fromtimestamp(since, datetime.timezone.utc)
    ready = (hour + datetime.timedelta(hours=24 - before + 1)).strftime("%Y-%m-%d %H:00 UTC")
    assert m["heat"]["why"].startswith(f"needs 24 tracked hours in the 7 days before the window, has {before}: "
                                       f"ready at about {ready}"), m["heat"]["why"]
    assert m["momentum"]["why"] == "needs the heat of this window and of the one before it: this window's heat " \
        + m["heat"]["why"]
    tts = m["time_to_sell_hours"]["median"]
    if tts["value"] is None:
        assert tts["why"].startswith("needs 5 sales among the listings created in the window") or \
            tts["why"].startswith("fewer than 50% of the listings created in the window have sold yet")


def test_segments_are_read_one_key_at_a_time_in_code_point_order_with_what_the_whole_read_holds(db):
    """``_listings_by_key`` walks the sales and the created listings side by side, each ordered by key: every key
    comes once, in code-point order on both databases (MySQL's exact collations pad: "a" = "a "), with its sales and
    listings as the whole read (``_load_listings``) has them, a key with only sales or only listings included."""
    now = 1_800_000_000.0
    keys = {"Z": "both", "a": "both", "a ": "sold", "ア": "created", "五条悟": "both", "🎉": "sold", "🔥": "both"}
    events, segments = [], []
    for k, (key, has) in enumerate(keys.items()):
        for j in range(3):
            sid = f"m{k}{j}"
            at = now - 3600.0 * (j + 1)
            segments.append({"ip_id": 1, "source_id": sid, "kind": "character", "key": key})
            if has in ("both", "created"):
                events.append({"ip_id": 1, "source_id": sid, "kind": "created", "occurrence": 0, "event_at": at})
            if has in ("both", "sold"):
                events.append({"ip_id": 1, "source_id": sid, "kind": "sold", "occurrence": 0, "event_at": at + 60,
                               "price": 1000 + k * 10 + j, "listed_price": None})
    ListingSegment.insert_many(segments).execute()
    ListingEvent.insert_many(events).execute()
    w = Window(24, now)
    whole: dict[str, _IpData] = defaultdict(_IpData)
    _load_listings(_SegmentListings(1, "character"), w, whole)
    read = list(_listings_by_key(_SegmentListings(1, "character"), w))
    assert [key for key, _ in read] == sorted(keys)
    for key, d in read:
        assert sorted(d.sales) == sorted(whole[key].sales) and sorted(d.created) == sorted(whole[key].created), key
        assert (len(d.sales), len(d.created)) == (3 if keys[key] != "created" else 0, 3 if keys[key] != "sold" else 0)
