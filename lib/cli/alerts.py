"""``animetop alerts``: market alerts and their notifications."""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from lib.cli.common import app_settings, command


@command("alerts")
def cmd_alerts(args) -> int:
    from lib.alerts.notify import Channel, PermanentDeliveryError, TransientDeliveryError, body_for, post
    from lib.core.parsers import parse_duration

    settings = app_settings()
    if args.action == "test":
        if not args.url:
            print("animetop alerts test: name a CHANNEL_URL", file=sys.stderr)
            return 2
        channel = Channel.parse(args.url)
        sample = {"text": "[animetop] test notification: 鬼滅の刃 outflow surge — sample alert",
                  "alert": {"id": 0, "ip_id": 0, "rule": "outflow_surge", "message": "sample", "value": 42}}
        try:
            status = post(channel, body_for(channel, sample), settings.notify_timeout)
        except (PermanentDeliveryError, TransientDeliveryError) as e:
            print(f"animetop alerts test: {channel.name} failed: {e}", file=sys.stderr)
            return 1
        print(f"sent a sample alert to {channel.name} (HTTP {status})")
        return 0
    from lib.core.clock import naive_utc
    from lib.core.db import bind_database
    from models import AlertDelivery, IpAlert

    bind_database(settings.database_url_resolved)
    try:
        since = naive_utc(time.time() - parse_duration(args.since))
    except ValueError as e:
        print(f"animetop alerts list: --since {e}", file=sys.stderr)
        return 2
    query = IpAlert.select().where(IpAlert.created_at >= since).order_by(IpAlert.created_at.desc())
    if args.ip is not None:
        query = query.where(IpAlert.ip_id == args.ip)
    rows: list[dict[str, Any]] = []
    for alert in query:
        deliveries = {d.channel: d.status for d in AlertDelivery.select().where(AlertDelivery.alert_id == alert.id)}
        rows.append({"id": alert.id, "ip_id": alert.ip_id, "rule": alert.rule,
                     "hour": alert.hour_bucket.isoformat() + "Z", "message": alert.message,
                     "deliveries": deliveries})
    if args.format == "json":
        print(json.dumps(rows, ensure_ascii=False, indent=2))
        return 0
    for r in rows:
        delivered = ", ".join(f"{c}: {s}" for c, s in r["deliveries"].items()) or "not delivered"
        print(f"#{r['id']} IP {r['ip_id']} {r['rule']} at {r['hour']}: {r['message']} [{delivered}]")
    print(f"{len(rows)} alert(s)")
    return 0
