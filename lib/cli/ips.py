"""``animetop ip`` and ``leaderboard``: the IPs tracked and how they rank."""

from __future__ import annotations

import json
import sys
from datetime import datetime, timezone

from lib.cli.common import app_catalogue, app_read_side, command, parse_ip_id


@command("ip")
def cmd_ip(args) -> int:
    from lib.scheduling.catalogue import CatalogueError

    if args.action == "show":
        return _show_ip(args)
    catalogue = app_catalogue()
    try:
        if args.action == "add":
            ip = catalogue.add(args.value, args.name, args.weight)
            print(f"added IP {ip.id}: {ip.keyword!r} (weight {ip.weight}), due now")
        elif args.action == "disable":
            ip = catalogue.disable(parse_ip_id(args.value))
            print(f"disabled IP {ip.id} ({ip.keyword!r}); removed from the schedule")
        elif args.action == "enable":
            ip = catalogue.enable(parse_ip_id(args.value))
            print(f"enabled IP {ip.id} ({ip.keyword!r})")
        elif args.action == "import":
            added, problems = catalogue.import_file(args.value)
            for problem in problems:
                print(f"skipped {problem}", file=sys.stderr)
            print(f"{added} IP(s) added, {len(problems)} skipped")
        elif args.action == "list":
            _print_ips(catalogue, args.format)
        elif args.action == "show":
            return _show_ip(args)
    except CatalogueError as e:
        print(f"animetop ip {args.action}: {e}", file=sys.stderr)
        return 1
    return 0


def _print_ips(catalogue, fmt: str) -> None:
    rows = []
    for ip in catalogue.list():
        next_at = catalogue.schedule.time_of(ip.id)
        rows.append({
            "id": ip.id, "keyword": ip.keyword, "name": ip.display_name, "active": ip.active,
            "weight": ip.weight,
            "last_crawled_at": ip.last_crawled_at.isoformat() + "Z" if ip.last_crawled_at else None,
            "next_crawl_at": datetime.fromtimestamp(next_at, timezone.utc).isoformat() if next_at else None,
        })
    if fmt == "json":
        print(json.dumps(rows, ensure_ascii=False, indent=2))
        return
    print(f"{'ID':>6}  {'ACTIVE':6}  {'WEIGHT':>6}  {'NEXT CRAWL (UTC)':19}  KEYWORD")
    for r in rows:
        nxt = r["next_crawl_at"][:19].replace("T", " ") if r["next_crawl_at"] else "-"
        print(f"{r['id']:>6}  {'yes' if r['active'] else 'no':6}  {r['weight']:>6.2f}  {nxt:19}  {r['keyword']}")
    print(f"{len(rows)} IP(s)")


@command("leaderboard")
def cmd_leaderboard(args) -> int:
    rows = app_read_side().leaderboard(args.by, args.hours, args.limit)
    columns = ["rank", "ip_id", "keyword", "inflow", "outflow", "liquidity"]
    if args.format == "json":
        print(json.dumps(rows, ensure_ascii=False, indent=2))
    elif args.format == "csv":
        import csv

        writer = csv.DictWriter(sys.stdout, fieldnames=columns, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    else:
        print(f"top {len(rows)} by {args.by}, last {args.hours} h")
        print(f"{'#':>3}  {'IP':>5}  {'INFLOW':>7}  {'OUTFLOW':>7}  {'LIQUIDITY':>9}  KEYWORD")
        for r in rows:
            liq = f"{r['liquidity']:.2f}" if r["liquidity"] is not None else "-"
            print(f"{r['rank']:>3}  {r['ip_id']:>5}  {r['inflow']:>7}  {r['outflow']:>7}  {liq:>9}  {r['keyword']}")
    return 0


def _show_ip(args) -> int:
    try:
        detail = app_read_side().ip_detail(parse_ip_id(args.value), args.hours)
    except LookupError as e:
        print(f"animetop ip show: {e}", file=sys.stderr)
        return 1
    if args.format == "json":
        print(json.dumps(detail, ensure_ascii=False, indent=2))
        return 0
    print(f"IP {detail['ip_id']}: {detail['keyword']} ({'active' if detail['active'] else 'disabled'}, "
          f"weight {detail['weight']}), last {detail['hours']} h in {detail['timezone']}")
    print(f"{'HOUR':25}  {'IN':>5}  {'OUT':>5}  {'LIQ':>6}  {'AVG SOLD':>9}  {'MIN':>8}  {'MAX':>8}")
    for s in detail["series"]:
        def yen(v):
            return f"{v:,.0f}" if v is not None else "-"
        liq = f"{s['liquidity']:.2f}" if s["liquidity"] is not None else "-"
        print(f"{s['hour']:25}  {s['inflow']:>5}  {s['outflow']:>5}  {liq:>6}  {yen(s['avg_price']):>9}  "
              f"{yen(s['min_price']):>8}  {yen(s['max_price']):>8}")
    for a in detail["alerts"]:
        print(f"alert {a['rule']} at {a['hour']}: {a['message']}")
    return 0
