"""The market's values (``lib.market.values``) leave as the JSON the answers, caches and stored rows have always held:
the same keys in the same order, the same CSV row, and read back to equal values. The schemas of ``/api/v1`` name
the same fields, so a field renamed on one side fails here rather than in a client."""

from __future__ import annotations

import json
from dataclasses import fields, replace

from lib.market.values import (
    SEGMENT_COLUMNS,
    Estimate,
    IpRow,
    Measure,
    RowMeasures,
    SegmentMeasures,
    SegmentRow,
    TimeToSell,
    WindowMeasures,
)
from lib.web import schemas

NEEDS_PRICES = "needs 5 sold prices in the window, has 3"


def time_to_sell() -> TimeToSell:
    return TimeToSell(p25=Estimate(1.5, 6, interval=(0.5, 3.25)), median=Estimate(4.0, 6, interval=(2.0, None)),
                      p75=Estimate(None, 6, why="fewer than 75% of the listings created in the window have sold yet"),
                      listings=12, curve=((0.0, 1.0), (1.5, 0.75), (4.0, 0.5)))


def window() -> WindowMeasures:
    return WindowMeasures(
        inflow=Measure(12, 24), outflow=Measure(6, 24), liquidity=Measure(0.5, 12),
        p25_price=Estimate(None, 3, why=NEEDS_PRICES), median_price=Estimate(None, 3, why=NEEDS_PRICES),
        p75_price=Estimate(None, 3, why=NEEDS_PRICES), trimmed_mean_price=Measure(None, 3, why=NEEDS_PRICES),
        sell_through=Estimate(0.5, 12, interval=(0.2538, 0.7462)), time_to_sell_hours=time_to_sell(),
        price_cut_share=Measure(None, 2, why="needs 5 sales in the window seen on sale first, has 2"),
        median_price_cut=Measure(0.1, 1), supply=Measure(340, 1), hours_of_supply=Measure(1360.0, 6),
        coverage=Measure(None, 0, why="needs 10 sales of growth in the sold search's total between the window's "
                                      "crawls, has none"),
        heat=Estimate(61.2, 40, interval=(48.3, 74.1)),
        momentum=Estimate(None, 30, why="needs the heat of this window and of the one before it: the previous "
                                        "window's heat is insufficient"))


#: ``window()`` as the answers held it: every key, in this order (``json.dumps`` compares the order too).
WINDOW_JSON = {
    "inflow": {"value": 12, "n": 24}, "outflow": {"value": 6, "n": 24}, "liquidity": {"value": 0.5, "n": 12},
    "p25_price": {"value": None, "n": 3, "interval": None, "why": NEEDS_PRICES},
    "median_price": {"value": None, "n": 3, "interval": None, "why": NEEDS_PRICES},
    "p75_price": {"value": None, "n": 3, "interval": None, "why": NEEDS_PRICES},
    "trimmed_mean_price": {"value": None, "n": 3, "why": NEEDS_PRICES},
    "sell_through": {"value": 0.5, "n": 12, "interval": [0.2538, 0.7462]},
    "time_to_sell_hours": {
        "p25": {"value": 1.5, "n": 6, "interval": [0.5, 3.25]},
        "median": {"value": 4.0, "n": 6, "interval": [2.0, None]},
        "p75": {"value": None, "n": 6, "interval": None,
                "why": "fewer than 75% of the listings created in the window have sold yet"},
        "listings": 12, "curve": [[0.0, 1.0], [1.5, 0.75], [4.0, 0.5]]},
    "price_cut_share": {"value": None, "n": 2, "why": "needs 5 sales in the window seen on sale first, has 2"},
    "median_price_cut": {"value": 0.1, "n": 1}, "supply": {"value": 340, "n": 1},
    "hours_of_supply": {"value": 1360.0, "n": 6},
    "coverage": {"value": None, "n": 0,
                 "why": "needs 10 sales of growth in the sold search's total between the window's crawls, has none"},
    "heat": {"value": 61.2, "n": 40, "interval": [48.3, 74.1]},
    "momentum": {"value": None, "n": 30, "interval": None,
                 "why": "needs the heat of this window and of the one before it: the previous window's heat is "
                        "insufficient"},
}


def test_window_measures_serialize_as_the_answers_did() -> None:
    m = window()
    assert json.dumps(m.to_json()) == json.dumps(WINDOW_JSON)
    assert WindowMeasures.from_json(json.loads(json.dumps(m.to_json()))) == m


def test_a_measure_says_why_only_when_told() -> None:
    assert Measure(3, 24).to_json() == {"value": 3, "n": 24}
    assert list(Estimate(None, 3).to_json()) == ["value", "n", "interval"]
    assert Estimate.from_json({"value": 2.5, "n": 9, "interval": [1.0, None]}) == Estimate(2.5, 9, interval=(1.0, None))


def test_a_segments_measures_are_its_listings_in_the_segment_order() -> None:
    segment = window().segment()
    assert json.dumps(segment.to_json()) == json.dumps({k: WINDOW_JSON[k] for k in (
        "inflow", "outflow", "liquidity", "median_price", "p25_price", "p75_price", "trimmed_mean_price",
        "sell_through", "time_to_sell_hours", "price_cut_share", "median_price_cut")})
    row = SegmentRow("acrylic_stand", "アクリルスタンド", segment)
    assert SegmentRow.from_json(json.loads(json.dumps(row.to_json()))) == row
    assert row.csv_row() == {
        "key": "acrylic_stand", "label": "アクリルスタンド", "inflow": 12, "outflow": 6, "tracked_hours": 24,
        "liquidity": 0.5, "median_price": None, "p25_price": None, "p75_price": None, "price_n": 3,
        "trimmed_mean_price": None, "sell_through": 0.5, "sell_through_n": 12, "time_to_sell_median": 4.0,
        "time_to_sell_p25": 1.5, "time_to_sell_p75": None, "time_to_sell_n": 6, "price_cut_share": None,
        "price_cut_n": 2, "median_price_cut": 0.1}
    assert list(row.csv_row()) == SEGMENT_COLUMNS


def test_a_leaderboard_row_flattens_the_measures_as_before() -> None:
    row = IpRow(7, "呪術廻戦", "Jujutsu Kaisen", RowMeasures.of(window()))
    assert json.dumps(row.to_json()) == json.dumps({
        "ip_id": 7, "keyword": "呪術廻戦", "name": "Jujutsu Kaisen", "heat": 61.2, "heat_n": 40, "heat_low": 48.3,
        "momentum": None, "inflow": 12, "outflow": 6, "tracked_hours": 24, "liquidity": 0.5, "sell_through": 0.5,
        "sell_through_n": 12, "median_price": None, "median_price_n": 3, "time_to_sell": 4.0, "time_to_sell_n": 6,
        "supply": 340, "coverage": None, "inflow_interval": None, "outflow_interval": None})
    assert RowMeasures.of(window()).sort_value("heat_low") == 48.3
    estimated = replace(window(), outflow=Estimate(9.5, 24, interval=(7.0, 13.2)))
    assert RowMeasures.of(estimated).to_json()["outflow_interval"] == [7.0, 13.2]


def test_the_api_schemas_name_the_same_fields() -> None:
    """The OpenAPI document's shapes of a measure, the time to sell and a segment's measures are those the values
    serialize to."""
    assert set(schemas.Value.model_fields) == set(Estimate(1.0, 1, why="").to_json())
    assert list(schemas.TimeToSell.model_fields) == [f.name for f in fields(TimeToSell)]
    assert list(schemas.SegmentMeasures.model_fields) == [f.name for f in fields(SegmentMeasures)]
    assert list(schemas.Segment.model_fields) == [f.name for f in fields(SegmentRow)]
    assert {"rank", "sparkline"} | {f.name for f in fields(IpRow) if f.name != "measures"} \
        | {f.name for f in fields(RowMeasures)} >= set(schemas.LeaderboardRow.model_fields)
