"""``lib.core.fast_json``: what the read side caches reads back as it did through the standard library's json."""

import json
import math
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal

import pytest

from lib.core import fast_json


@dataclass
class Point:
    x: int


def through_stdlib(value):
    return json.loads(json.dumps(value, ensure_ascii=False, default=str))


@pytest.mark.parametrize("value", [
    {"hours": 24, "computed_at": 1_800_000_000.125, "rows": [
        {"ip_id": 3, "keyword": "呪術廻戦", "name": "Jujutsu \"Kaisen\" \\ \u2028", "heat": 12.345678901234567,
         "median_price": None, "sell_through": 0.1 + 0.2, "outflow": 0, "flags": [True, False]}],
     "sparklines": {"3": [0, 1, 2]}},
    {1: "integer keys", 2.5: "a float key", None: "null key"},
    {"at": datetime(2026, 11, 25, 6, 0, 0, 123456), "day": date(2026, 11, 25), "price": Decimal("1234.50"),
     "point": Point(3), "big": 2**63 - 1, "tiny": 5e-324, "neg": -0.0},
    ["ａｂｃ", "🔥", "", "\x00\x1f", [], {}],
])
def test_values_read_back_as_through_the_standard_library(value):
    assert fast_json.loads(fast_json.dumps(value)) == through_stdlib(value)


def test_what_the_standard_library_wrote_reads_back_nan_and_infinity_included():
    written = json.dumps({"a": math.inf, "b": -math.inf, "c": 1.5, "d": "キー"}, ensure_ascii=False)
    read = fast_json.loads(written)
    assert read["a"] == math.inf and read["b"] == -math.inf and read["c"] == 1.5 and read["d"] == "キー"
    assert math.isnan(fast_json.loads('{"n": NaN}')["n"])
    with pytest.raises(ValueError):
        fast_json.loads("{not json")
