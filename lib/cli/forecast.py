"""``animetop forecast``: each IP's next days forecast from its daily rows (docs/concepts/forecasts.md)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict
from typing import Any

from lib.cli.common import app_database, command, parse_ip_id


@command("forecast")
def cmd_forecast(args) -> int:
    if args.action == "backtest":
        return _backtest(args)
    if args.action == "rising":
        return _rising(args)
    if args.by in ("goods", "character"):
        return _segments(args)
    if args.by is not None:
        print("animetop forecast show: --by goods or character (outflow and inflow are rising's)", file=sys.stderr)
        return 2
    from lib.core.clock import get_clock
    from lib.forecast.read import CSV_COLUMNS, csv_rows, ip_forecast
    from lib.scheduling.catalogue import CatalogueError

    try:
        ip_id = parse_ip_id(args.value)
        app_database()
        answer = ip_forecast(ip_id, get_clock().now())
    except (CatalogueError, LookupError) as e:
        print(f"animetop forecast show: {e}", file=sys.stderr)
        return 1
    if _exported(args.format, answer, CSV_COLUMNS, csv_rows):
        return 0
    print(f"IP {answer['ip_id']}: {answer['keyword']}, the next days (UTC) with 80 % and 95 % intervals")
    for f in answer["forecasts"]:
        label = f["measure"].replace("_", " ")
        if not f["days"]:
            print(f"  {label}: no forecast ({f['why']})")
            continue
        print(f"  {label}: {f['model']} on {f['history_days']} days up to {f['origin']}")
        for d in f["days"]:
            lo80, hi80 = d["interval_80"]
            lo95, hi95 = d["interval_95"]
            print(f"    {d['day']}  {d['mean']:>10.1f}   80 %: {lo80:.1f}–{hi80:.1f}   95 %: {lo95:.1f}–{hi95:.1f}")
    return 0


def _exported(fmt: str, answer: dict[str, Any], columns: Sequence[str],
              rows: Callable[[dict[str, Any]], list[dict[str, Any]]]) -> bool:
    """Print a shown forecast's answer as JSON, or as CSV rows (``rows`` of it, by ``columns``); False for a table."""
    if fmt == "json":
        print(json.dumps(answer, ensure_ascii=False, indent=2))
        return True
    if fmt == "csv":
        import csv

        writer = csv.DictWriter(sys.stdout, fieldnames=list(columns))
        writer.writeheader()
        writer.writerows(rows(answer))
        return True
    return False


def _segments(args) -> int:
    from lib.core.clock import get_clock
    from lib.core.settings import get_settings
    from lib.forecast.read import SEGMENT_CSV_COLUMNS, segment_csv_rows, segment_forecasts
    from lib.market.read_side import display_ljust, display_width
    from lib.scheduling.catalogue import CatalogueError
    from lib.segments.stored import segment_labels

    if args.action != "show":
        print(f"animetop forecast {args.action}: --by goods or character is show's", file=sys.stderr)
        return 2
    try:
        ip_id = parse_ip_id(args.value)
        app_database()
        answer = segment_forecasts(ip_id, args.by, get_clock().now(), segment_labels(get_settings(), args.by))
    except (CatalogueError, LookupError) as e:
        print(f"animetop forecast show: {e}", file=sys.stderr)
        return 1
    if _exported(args.format, answer, SEGMENT_CSV_COLUMNS, segment_csv_rows):
        return 0
    what = "goods types" if args.by == "goods" else "characters"
    print(f"IP {answer['ip_id']}: {answer['keyword']}, its {what}: sales and new listings expected over the next 7 "
          f"days (UTC; the sums of each day's forecast), most sales first")
    if not answer["segments"]:
        print(f"  none of its {what} has daily rows yet")
    width = max([24] + [display_width(s["label"]) for s in answer["segments"]])
    for s in answer["segments"]:
        sold, listed = s["next_days"]["outflow"], s["next_days"]["inflow"]
        if sold is None:
            why = next(f["why"] for f in s["forecasts"] if f["measure"] == "outflow")
            print(f"  {display_ljust(s['label'], width)} no forecast of its sales ({why})")
            continue
        price = next(f for f in s["forecasts"] if f["measure"] == "median_price")
        median = f"   median price ¥{price['days'][0]['mean']:,.0f} (day 1)" if price["days"] else ""
        listed_text = "" if listed is None else f"{listed:>9.1f} listed"
        print(f"  {display_ljust(s['label'], width)} {sold:>9.1f} sold  {listed_text}{median}")
    return 0


def _backtest(args) -> int:
    from lib.core.clock import get_clock, naive_utc
    from lib.forecast.backtest import MIN_HISTORY, stored
    from lib.forecast.values import INFLOW, OUTFLOW
    from lib.market.statistics import day_of

    if args.format == "csv" or args.cuts < 1:
        print("animetop forecast backtest: --format table or json, --cuts 1 or more", file=sys.stderr)
        return 2
    app_database()
    today = day_of(naive_utc(get_clock().now()))
    results = stored(today, args.cuts, (OUTFLOW, INFLOW))
    if args.format == "json":
        print(json.dumps({measure: {"ips": ips, **({} if summary is None else asdict(summary))}
                          for measure, (summary, ips) in results.items()}, indent=2))
        return 0
    print(f"Backtest of the stored daily rows: up to {args.cuts} weekly cuts of 7 days ahead per IP, each after at "
          f"least {MIN_HISTORY} tracked days in a row (docs/concepts/forecasts.md)")
    print(f"  {'measure':<8} {'IPs':>5} {'cuts':>5} {'MASE':>7} {'naive':>7} {'ratio':>6} {'80 % held':>10} "
          f"{'95 % held':>10} {'pinball':>8} {'80 % smoothed':>14} {'95 % smoothed':>14}")
    for measure, (summary, ips) in results.items():
        if summary is None:
            print(f"  {measure:<8} {ips:>5} {0:>5}   no IP has the history yet")
            continue
        print(f"  {measure:<8} {ips:>5} {summary.cuts:>5} {summary.mase:>7.3f} {summary.naive_mase:>7.3f} "
              f"{summary.mase_ratio:>6.2f} {100 * summary.coverage80:>9.1f}% {100 * summary.coverage95:>9.1f}% "
              f"{summary.pinball:>8.3f} {_percent(summary.smooth_coverage80):>14} "
              f"{_percent(summary.smooth_coverage95):>14}")
    return 0


def _rising(args) -> int:
    from lib.forecast.breakouts import MARGIN, MIN_SAMPLE, rising

    if args.by not in (None, "outflow", "inflow"):
        print("animetop forecast rising: --by outflow or inflow", file=sys.stderr)
        return 2
    app_database()
    measure = "inflow" if args.by == "inflow" else "outflow"
    rows = rising(measure, args.limit, args.of)
    if args.format == "json":
        print(json.dumps({"measure": measure, "of": args.of, "rows": rows}, ensure_ascii=False, indent=2))
        return 0
    if args.format == "csv":
        import csv

        writer = csv.writer(sys.stdout)
        writer.writerow(["rank", "ip_id", "keyword", "kind", "key", "day", "value", "expected", "lo95", "hi95", "score",
                         "breakout"])
        writer.writerows([r["rank"], r["ip_id"], r["keyword"], *(r["segment"] or {"kind": "", "key": ""}).values(),
                          r["day"], r["value"], r["expected"], *r["interval_95"], r["score"], r["breakout"]]
                         for r in rows)
        return 0
    what = "sales" if measure == "outflow" else "new listings"
    ranked = {"ips": "IP", "goods": "goods type", "character": "character"}[args.of]
    if not rows:
        print(f"no {ranked} has a closed day checked against its forecast yet (or none with {MIN_SAMPLE}+ {what})")
        return 0
    print(f"Rising: {what} of the last closed day ({rows[0]['day']}, UTC) against the forecast made the day before; "
          f"score: how far above it, in units of the upper half of an ordinary day's 95 % interval (above 1: out of "
          f"the interval; above {1 + MARGIN:g}: a breakout)")
    for r in rows:
        lo, hi = r["interval_95"]
        name = r["name"] if r["segment"] is None else f"{r['name']} / {r['segment']['key']}"
        print(f"  {r['rank']:>3}. {name:<24} {r['value']:>9.0f}  expected {r['expected']:>8.1f} "
              f"({lo:.0f}-{hi:.0f})  score {r['score']:>6.2f}{'  BREAKOUT' if r['breakout'] else ''}")
    return 0


def _percent(share: float | None) -> str:
    return "" if share is None else f"{100 * share:.1f}%"
