"""The leaderboard as text on standard output: a table, JSON or CSV (``animetop leaderboard``, and the board the
demo prints at its end)."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING

from lib.market.values import JsonObject

if TYPE_CHECKING:
    from lib.market.read_side import ReadSide

#: Leaderboard columns: (key, header, width, format of a value).
BOARD_COLUMNS = [("heat", "HEAT", 6, "{:.1f}"), ("momentum", "MOM", 6, "{:+.1f}"), ("outflow", "OUT", 6, "{}"),
                 ("inflow", "IN", 6, "{}"), ("liquidity", "LIQ", 6, "{:.2f}"), ("sell_through", "SELL%", 6, "{:.0%}"),
                 ("median_price", "MEDIAN¥", 8, "{:,.0f}"), ("time_to_sell", "TTS h", 6, "{:.1f}")]
#: The count shown, in parentheses, where a measure is insufficient.
COUNT_OF = {"heat": "heat_n", "sell_through": "sell_through_n", "median_price": "median_price_n",
            "time_to_sell": "time_to_sell_n"}


def _cell(row: JsonObject, key: str, fmt: str) -> str:
    value = row.get(key)
    if value is not None and row.get(f"{key}_interval") is not None:
        return f"≈{value:.0f}"  # an estimated flow (its interval: the JSON's and the CSV's)
    if value is not None:
        return fmt.format(value)
    count = row.get(COUNT_OF.get(key, ""), None)
    return f"({count})" if count is not None else "-"


#: The leaderboard's columns in CSV.
CSV_COLUMNS = ["rank", "ip_id", "keyword", "heat", "heat_n", "momentum", "outflow", "outflow_low", "outflow_high",
               "inflow", "inflow_low", "inflow_high", "liquidity", "sell_through", "sell_through_n", "median_price",
               "median_price_n", "time_to_sell", "time_to_sell_n", "supply", "coverage", "tracked_hours"]


def csv_row(row: JsonObject) -> JsonObject:
    """A leaderboard row as ``CSV_COLUMNS`` hold it: an estimated flow's interval as its low and high (empty for a
    counted flow)."""
    out = dict(row)
    for flow in ("inflow", "outflow"):
        interval = row.get(f"{flow}_interval") or (None, None)
        out[f"{flow}_low"], out[f"{flow}_high"] = interval
    return out


def print_leaderboard(side: ReadSide, by: str, hours: int, limit: int | None, fmt: str = "table") -> None:
    """The first ``limit`` IPs ranked by ``by`` over the last ``hours`` hours of ``side`` (a ``ReadSide``), as a
    table (``BOARD_COLUMNS``), JSON or CSV: ``animetop leaderboard``, and the demo's closing board."""
    rows = side.leaderboard(by, hours, limit)
    if fmt == "json":
        print(json.dumps(rows, ensure_ascii=False, indent=2))
    elif fmt == "csv":
        import csv

        writer = csv.DictWriter(sys.stdout, fieldnames=CSV_COLUMNS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(csv_row(r) for r in rows)
    else:
        print(f"top {len(rows)} by {by}, last {hours} h, since {side.window_start(hours):%Y-%m-%d %H:00} UTC "
              "(a count in parentheses: too few observations)")
        print(f"{'#':>3}  {'IP':>5}  " + "  ".join(f"{h:>{w}}" for _, h, w, _ in BOARD_COLUMNS) + "  KEYWORD")
        for r in rows:
            cells = "  ".join(f"{_cell(r, k, f):>{w}}" for k, _, w, f in BOARD_COLUMNS)
            print(f"{r['rank']:>3}  {r['ip_id']:>5}  {cells}  {r['keyword']}")
        left_out, why = side.left_out(by, hours)
        if left_out:  # an empty ranking is not "no data": say how many IPs and why
            print(f"{left_out} IP(s) with data in the window left out: {why}")
