"""``animetop settings``, ``db`` and ``redis``: configuration and the stores."""

from __future__ import annotations

from lib.cli.common import app_settings, command
from lib.core.redaction import redact_url
from lib.core.settings import SPECS


@command("settings")
def cmd_settings(args) -> int:
    if args.markdown:
        from lib.docs.configuration import settings_table

        print("\n".join(settings_table()))
        return 0
    settings = app_settings()
    for spec in SPECS:
        value = getattr(settings, spec.name.lower())
        if ("PASSWORD" in spec.name or "TOKEN" in spec.name or "SECRET" in spec.name) and value:
            value = "***"
        elif isinstance(value, tuple):  # proxy URLs (redacted) or leaderboard windows (hours)
            value = ",".join(redact_url(v) if isinstance(v, str) else f"{v}h" for v in value)
        elif isinstance(value, str) and "://" in value:
            value = redact_url(value)
        print(f"{spec.name}={'' if value is None else value}")
    print(f"# state redis: {redact_url(settings.state_redis_url)}")
    print(f"# broker:      {redact_url(settings.broker_url_resolved)}")
    print(f"# database:    {redact_url(settings.database_url_resolved)}")
    return 0


@command("db")
def cmd_db(args) -> int:
    from lib.core.db import bind_database
    from lib.market.schema import create_tables

    settings = app_settings()
    bind_database(settings.database_url_resolved)
    if args.action == "prune":
        return _db_prune(settings, args.dry_run)
    if args.action == "partitions":
        return _db_partitions(settings, args.drop_before)
    from lib.market.migrate import migrate_market_facts

    tables = create_tables()
    print(f"database {redact_url(settings.database_url_resolved)}: {len(tables)} tables ready"
          + (f" ({', '.join(tables)})" if tables else ""))
    rebuilt = migrate_market_facts()
    if rebuilt:
        print(f"market facts rebuilt from the stored snapshots for {len(rebuilt)} IP(s)")
    return 0


def _db_prune(settings, dry_run: bool) -> int:
    from lib.core.clock import get_clock
    from lib.market.retention import prune

    report = prune(settings, get_clock().now(), dry_run=dry_run)
    print(("would remove" if dry_run else "removed") + f" everything before {report.as_dict()['horizon_utc']} UTC "
          f"(RETENTION_WINDOW {settings.retention_window / 86400:g} days):")
    for name, value in report.as_dict().items():
        if name not in ("horizon", "horizon_utc"):
            print(f"  {name.replace('_', ' ')}: {value}")
    return 0


def _db_partitions(settings, drop_before: str | None) -> int:
    import sys
    from datetime import datetime

    from lib.core.clock import get_clock, naive_utc
    from lib.core.db import is_mysql
    from lib.market import partitions
    from lib.market.retention import horizon

    if not is_mysql():
        print("animetop db partitions: only MySQL/MariaDB partitions the hourly rows; on SQLite `animetop db prune` "
              "deletes them", file=sys.stderr)
        return 2
    now = get_clock().now()
    if drop_before is not None:
        try:
            month = datetime.strptime(drop_before, "%Y-%m")
        except ValueError:
            print(f"animetop db partitions: --drop-before wants YYYY-MM, got {drop_before!r}", file=sys.stderr)
            return 2
        keep = naive_utc(horizon(settings, now))
        if month > keep:
            print(f"animetop db partitions: {drop_before} is after the retention horizon ({keep:%Y-%m-%d}): "
                  f"open windows still read those hours", file=sys.stderr)
            return 2
        from lib.core.db import database
        from lib.market.daily import roll_up
        from models import IpMetadata

        with database.atomic():
            for ip in IpMetadata.select(IpMetadata.id):
                roll_up(ip.id, month)  # the daily rows outlive the dropped hours
        dropped = partitions.drop_before(month)
        print(f"dropped {len(dropped)} partition(s){': ' + ', '.join(dropped) if dropped else ''}")
    partitions.ensure_future(now)
    print("partition  until (exclusive)  rows (estimate)")
    for p in partitions.list_partitions():
        print(f"{p.name:<10} {p.until.strftime('%Y-%m-%d') if p.until else 'MAXVALUE':<18} {p.rows}")
    return 0


@command("redis")
def cmd_redis(args) -> int:
    from lib.core.embedded_redis import EmbeddedRedis

    settings = app_settings()
    if not settings.embedded_redis:
        print(f"REDIS_URL is set ({redact_url(settings.state_redis_url)}): no embedded Redis to manage")
        return 1
    server = EmbeddedRedis(settings.data_path)
    if args.action == "start":
        server.ensure_running()
        print(f"embedded redis-server on {server.socket}, data in {server.data_dir}")
    elif args.action == "stop":
        print("stopped" if server.stop() else "was not running")
    else:
        print("running" if server.ping() else "not running")
    return 0
