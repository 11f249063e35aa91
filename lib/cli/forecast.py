"""``animetop forecast``: each IP's next days forecast from its daily rows (docs/concepts/forecasts.md)."""

from __future__ import annotations

import json
import sys

from lib.cli.common import app_database, command, parse_ip_id


@command("forecast")
def cmd_forecast(args) -> int:
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
    if args.format == "json":
        print(json.dumps(answer, ensure_ascii=False, indent=2))
        return 0
    if args.format == "csv":
        import csv

        writer = csv.DictWriter(sys.stdout, fieldnames=CSV_COLUMNS)
        writer.writeheader()
        writer.writerows(csv_rows(answer))
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
