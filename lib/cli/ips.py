"""``animetop ip`` and ``leaderboard``: the IPs tracked and how they rank."""

from __future__ import annotations

import json
import sys
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from lib.cli.common import app_catalogue, app_read_side, command, parse_ip_id
from lib.market.leaderboard_text import print_leaderboard

if TYPE_CHECKING:
    from lib.market.values import Measure, WindowMeasures


@command("ip")
def cmd_ip(args) -> int:
    from lib.scheduling.catalogue import CatalogueError, aliases_of

    if args.action == "characters":
        from lib.cli.characters import cmd_characters

        return cmd_characters(args)
    if _misplaced(args):
        print(f"animetop ip {args.action}: too many or too few arguments (list, add, remove, import, export and NAME "
              f"go with `ip characters ID`; --alias with `ip add`, `ip aliases ID` and `ip characters ID add`; "
              f"--remove-alias with `ip aliases ID`; --every with `ip pin ID`, which needs it)", file=sys.stderr)
        return 2
    if args.action == "show":
        return _show_ip(args)
    catalogue = app_catalogue()
    try:
        if args.action == "add":
            ip = catalogue.add(args.value, args.name, args.weight, args.alias)
            named = f", aliases {list(aliases_of(ip))}" if ip.aliases else ""
            print(f"added IP {ip.id}: {ip.keyword!r} (weight {ip.weight}{named}), due now")
        elif args.action == "aliases":
            ip_id = parse_ip_id(args.value)
            if args.alias or args.remove_alias:
                ip = catalogue.edit_aliases(ip_id, args.alias, args.remove_alias)
            else:
                ip = catalogue.get(ip_id)
            aliases = aliases_of(ip)
            if args.format == "json":
                print(json.dumps({"id": ip.id, "keyword": ip.keyword, "aliases": list(aliases)}, ensure_ascii=False))
            else:
                print(f"IP {ip.id} ({ip.keyword!r}): " + (", ".join(aliases) if aliases else "no aliases"))
        elif args.action == "disable":
            ip = catalogue.disable(parse_ip_id(args.value))
            print(f"disabled IP {ip.id} ({ip.keyword!r}); removed from the schedule")
        elif args.action == "enable":
            ip = catalogue.enable(parse_ip_id(args.value))
            print(f"enabled IP {ip.id} ({ip.keyword!r})")
        elif args.action in ("pin", "unpin"):
            return _pin(catalogue, args)
        elif args.action == "import":
            added, problems = catalogue.import_file(args.value)
            for problem in problems:
                print(f"skipped {problem}", file=sys.stderr)
            print(f"{added} IP(s) added, {len(problems)} skipped")
        elif args.action == "list":
            _print_ips(catalogue, args.format)
    except CatalogueError as e:
        print(f"animetop ip {args.action}: {e}", file=sys.stderr)
        return 1
    return 0


def _misplaced(args) -> bool:
    """An argument given to an action that takes none such (or ``pin`` without its ``--every``)."""
    return bool(args.operation or args.operand or (args.alias and args.action not in ("add", "aliases"))
                or (args.remove_alias and args.action != "aliases") or ((args.every is None) == (args.action == "pin")))


def _pin(catalogue, args) -> int:
    """``ip pin ID --every D`` and ``ip unpin ID`` (a CatalogueError reaches the caller)."""
    from lib.core.parsers import format_duration, parse_duration

    every = None
    if args.action == "pin":
        try:
            every = parse_duration(args.every)
        except ValueError as e:
            print(f"animetop ip pin: --every {args.every!r}: {e}", file=sys.stderr)
            return 2
    ip = catalogue.pin(parse_ip_id(args.value), every)
    next_at = catalogue.schedule.time_of(ip.id)
    due = (f"; next crawl {datetime.fromtimestamp(next_at, timezone.utc):%Y-%m-%d %H:%M:%S} UTC" if next_at
           else "; not scheduled (disabled)")
    if ip.pinned_interval:
        print(f"pinned IP {ip.id} ({ip.keyword!r}): crawled every {format_duration(ip.pinned_interval)}, whatever "
              f"its heat{due}")
    else:
        print(f"unpinned IP {ip.id} ({ip.keyword!r}): its interval follows its heat again{due}")
    return 0


def _print_ips(catalogue, fmt: str) -> None:
    from lib.core.parsers import format_duration
    from lib.crawling.page_plan import caps, load_plans, most_on_sale_pages, most_sold_pages
    from lib.scheduling.budget_plan import CostStore
    from lib.scheduling.catalogue import aliases_of
    from lib.scheduling.schedule import interval_reason, planned_interval

    settings = catalogue.settings
    ips = catalogue.list()
    plans = load_plans(catalogue.schedule.client, [ip.id for ip in ips], most_on_sale_pages(settings),
                       most_sold_pages(settings)) if settings.scheduler_page_plan else {}
    fixed = caps(settings)
    costs = CostStore(catalogue.schedule.client)
    price, reckoned = costs.price(), costs.all(catalogue.clock.now())
    rows = []
    for ip in ips:
        next_at = catalogue.schedule.time_of(ip.id)
        plan = plans.get(ip.id) or fixed
        interval, why = planned_interval(ip, plan.flow, settings), interval_reason(ip, settings, plan.flow)
        cost = reckoned.get(ip.id)
        if price is not None and price.price > 0 and cost is not None and ip.active:
            interval, why = cost.interval_at(price.price), cost.lengthened_why(price) or why
        rows.append({
            "id": ip.id, "keyword": ip.keyword, "name": ip.display_name, "active": ip.active,
            "weight": ip.weight, "aliases": list(aliases_of(ip)), "pinned_interval_s": ip.pinned_interval,
            "interval_s": interval, "interval_why": why, "flow_per_hour": plan.flow,
            "last_crawled_at": ip.last_crawled_at.isoformat() + "Z" if ip.last_crawled_at else None,
            "next_crawl_at": datetime.fromtimestamp(next_at, timezone.utc).isoformat() if next_at else None,
            "pages": {label: {"most": depth.pages, "back_to": _iso(depth.until), "why": depth.why}
                      for label, depth in (("on_sale", plan.on_sale), ("sold", plan.sold))},
            "checks": len(plan.checks),
        })
    if fmt == "json":
        print(json.dumps(rows, ensure_ascii=False, indent=2))
        return
    print(f"{'ID':>6}  {'ACTIVE':6}  {'WEIGHT':>6}  {'EVERY':>5}  {'NEXT CRAWL (UTC)':19}  {'ON SALE BACK TO':19}  "
          f"{'SOLD BACK TO':19}  KEYWORD")
    for r in rows:
        nxt = r["next_crawl_at"][:19].replace("T", " ") if r["next_crawl_at"] else "-"
        aliases = f"  (aliases: {', '.join(r['aliases'])})" if r["aliases"] else ""
        pinned = "  (pinned)" if r["pinned_interval_s"] else ""
        every = format_duration(round(r["interval_s"]))
        depth = [_depth(r["pages"][label]) for label in ("on_sale", "sold")]
        print(f"{r['id']:>6}  {'yes' if r['active'] else 'no':6}  {r['weight']:>6.2f}  {every:>5}  {nxt:19}  "
              f"{depth[0]:19}  {depth[1]:19}  {r['keyword']}{aliases}{pinned}")
    print(f"{len(rows)} IP(s)")


def _iso(at: float | None) -> str | None:
    return None if at is None else datetime.fromtimestamp(at, timezone.utc).isoformat()


def _depth(search: dict) -> str:
    """A search's planned depth in the table: the creation time it reads back to, else its end within the cap."""
    if search["back_to"] is not None:
        return str(search["back_to"])[:19].replace("T", " ")
    return f"the end (≤ {search['most']} pages)"


@command("leaderboard")
def cmd_leaderboard(args) -> int:
    from lib.market.retention import WindowBeyondRetention

    try:
        print_leaderboard(app_read_side(), args.by, args.hours, args.limit, args.format)
    except WindowBeyondRetention as e:
        print(f"animetop leaderboard: {e}", file=sys.stderr)
        return 2
    return 0


SERIES_COLUMNS = ["hour", "inflow", "outflow", "liquidity", "samples", "median_price", "p25_price", "p75_price",
                  "avg_price", "min_price", "max_price"]


def _measure_lines(measures: WindowMeasures) -> list[str]:
    def show(m: Measure, fmt: str = "{:,.2f}") -> str:
        return fmt.format(m.value) + f" (n={m.n})" if m.value is not None else f"insufficient (n={m.n})"

    def flow(m: Measure) -> str:
        """A counted flow, or an estimate (the pages could not reach back, or a sample of checks tells the shops'
        undecided relists), with its 95 % interval."""
        from lib.market.values import Estimate  # as the module's other imports of the market: when a command runs

        if isinstance(m, Estimate) and m.interval is not None and m.value is not None:
            low, high = m.interval
            return f"≈{m.value:,.0f} (estimate, 95 % {low:,.0f}–{high:,.0f}; n={m.n})"
        return show(m, '{}')

    tts = measures.time_to_sell_hours
    return [
        f"heat {show(measures.heat, '{:.1f}')}, momentum {show(measures.momentum, '{:+.1f}')}",
        f"inflow {flow(measures.inflow)}, outflow {flow(measures.outflow)} (n: tracked hours), "
        f"liquidity {show(measures.liquidity)}",
        f"sold price median {show(measures.median_price, '¥{:,.0f}')}, quartiles "
        f"{show(measures.p25_price, '¥{:,.0f}')} – {show(measures.p75_price, '¥{:,.0f}')}, trimmed mean "
        f"{show(measures.trimmed_mean_price, '¥{:,.0f}')}",
        f"sell-through {show(measures.sell_through, '{:.0%}')}; time to sell (h) median {show(tts.median)}, "
        f"quartiles {show(tts.p25)} – {show(tts.p75)} over {tts.listings} listings",
        f"price cuts {show(measures.price_cut_share, '{:.0%}')}, median cut "
        f"{show(measures.median_price_cut, '{:.0%}')}",
        f"supply {show(measures.supply, '{:,}')} on sale, {show(measures.hours_of_supply, '{:,.1f}')} hours of "
        f"supply; coverage {show(measures.coverage, '{:.0%}')}",
        *_why_lines(measures),
    ]


#: The measures ``ip show`` names, for the reasons of the insufficient ones.
SHOWN = [("heat", "heat"), ("momentum", "momentum"), ("median sold price", "median_price"),
         ("sell-through", "sell_through"), ("price cuts", "price_cut_share"), ("hours of supply", "hours_of_supply"),
         ("coverage", "coverage")]


def _why_lines(measures: WindowMeasures) -> list[str]:
    """Why each named measure is insufficient (docs/concepts/measures.md, "Insufficient")."""
    named: list[tuple[str, Measure]] = [(label, getattr(measures, key)) for label, key in SHOWN]
    named.append(("median time to sell", measures.time_to_sell_hours.median))
    return [f"  {label}: {m.why}" for label, m in named if m.value is None and m.why]


def _show_ip(args) -> int:
    if args.by:
        return _show_segments(args)
    try:
        detail = app_read_side().ip_detail(parse_ip_id(args.value), args.hours)
    except (LookupError, ValueError) as e:  # ValueError: a window longer than the storage keeps
        print(f"animetop ip show: {e}", file=sys.stderr)
        return 1
    if args.format == "json":
        print(json.dumps(detail, ensure_ascii=False, indent=2))
        return 0
    if args.format == "csv":
        import csv

        writer = csv.DictWriter(sys.stdout, fieldnames=SERIES_COLUMNS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(detail["series"])
        return 0
    print(f"IP {detail['ip_id']}: {detail['keyword']} ({'active' if detail['active'] else 'disabled'}, "
          f"weight {detail['weight']}), last {detail['hours']} h in {detail['timezone']}")
    from lib.market.values import WindowMeasures

    for line in _measure_lines(WindowMeasures.from_json(detail["measures"])):
        print("  " + line)
    print(f"{'HOUR':25}  {'IN':>5}  {'OUT':>5}  {'LIQ':>6}  {'N':>4}  {'MEDIAN':>8}  {'P25':>8}  {'P75':>8}  "
          f"{'MIN':>8}  {'MAX':>8}")
    for s in detail["series"]:
        def yen(v):
            return f"{v:,.0f}" if v is not None else "-"
        liq = f"{s['liquidity']:.2f}" if s["liquidity"] is not None else "-"
        print(f"{s['hour']:25}  {s['inflow']:>5}  {s['outflow']:>5}  {liq:>6}  {s['samples']:>4}  "
              f"{yen(s.get('median_price')):>8}  {yen(s.get('p25_price')):>8}  {yen(s.get('p75_price')):>8}  "
              f"{yen(s['min_price']):>8}  {yen(s['max_price']):>8}")
    for a in detail["alerts"]:
        print(f"alert {a['rule']} at {a['hour']}: {a['message']}")
    return 0


#: The segments table's columns: (key of ``segment_row``, header, width, format, key of the count shown when the
#: value is insufficient).
SEGMENT_TABLE = [("inflow", "IN", 5, "{}", None), ("outflow", "OUT", 5, "{}", None),
                 ("median_price", "MEDIAN¥", 8, "{:,.0f}", "price_n"), ("p25_price", "P25¥", 8, "{:,.0f}", "price_n"),
                 ("p75_price", "P75¥", 8, "{:,.0f}", "price_n"),
                 ("sell_through", "SELL%", 6, "{:.0%}", "sell_through_n"),
                 ("time_to_sell_median", "TTS h", 6, "{:.1f}", "time_to_sell_n"),
                 ("price_cut_share", "CUT%", 5, "{:.0%}", "price_cut_n")]


def _show_segments(args) -> int:

    try:
        result = app_read_side().segments(parse_ip_id(args.value), args.hours, args.by)
    except (LookupError, ValueError) as e:  # ValueError: a window longer than the per-listing facts are kept
        print(f"animetop ip show: {e}", file=sys.stderr)
        return 1
    named = args.by == "goods"
    return print_segments(result, args.by, args.format, f"IP {result['ip_id']}: {result['keyword']}, last "
                          f"{result['hours']} h by {result['by']}",
                          f"no listing of this IP was created or sold in the last {result['hours']} h"
                          + ("" if named else " naming one of its characters (none are matched without its character "
                                              "list)"))


def print_segments(result: dict, by: str, fmt: str, heading: str, empty: str) -> int:
    """A segments answer (an IP's, or the board across IPs) as a table, JSON or CSV."""
    from lib.market.read_side import SEGMENT_COLUMNS, display_ljust, display_width, segment_row

    if fmt == "json":
        print(json.dumps(result, ensure_ascii=False, indent=2))
        return 0
    rows = [segment_row(s) for s in result["segments"]]
    if fmt == "csv":
        import csv

        writer = csv.DictWriter(sys.stdout, fieldnames=SEGMENT_COLUMNS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
        return 0
    print(f"{heading} (a count in parentheses: too few observations; a listing in several segments counts in each)")
    named = by == "goods"  # a goods type's id and its name; a character is its name
    width = max([display_width(r["key"]) for r in rows] + [len(by)])
    print(display_ljust(by.upper(), width) + "  " + "  ".join(f"{h:>{w}}" for _, h, w, _, _ in SEGMENT_TABLE)
          + ("  NAME" if named else ""))
    for row in rows:
        cells = []
        for key, _, w, fmt, count in SEGMENT_TABLE:
            value = row[key]
            cells.append(f"{fmt.format(value) if value is not None else f'({row[count]})' if count else '-':>{w}}")
        print(display_ljust(row["key"], width) + "  " + "  ".join(cells) + (f"  {row['label']}" if named else ""))
    if not rows:
        print(empty)
    return 0
