"""``animetop settings``, ``db`` and ``redis``: configuration and the stores."""

from __future__ import annotations

from lib.cli.common import app_settings, command
from lib.core.redaction import redact_url
from lib.core.settings import SPECS


@command("settings")
def cmd_settings(args) -> int:
    if args.markdown:
        print("| Variable | Default | Meaning |\n|---|---|---|")
        for spec in SPECS:
            default = f"`{spec.default}`" if spec.default is not None else "(unset)"
            print(f"| `{spec.name}` | {default} | {spec.doc} |")
        return 0
    settings = app_settings()
    for spec in SPECS:
        value = getattr(settings, spec.name.lower())
        if ("PASSWORD" in spec.name or "TOKEN" in spec.name) and value:
            value = "***"
        elif isinstance(value, tuple):
            value = ",".join(redact_url(v) for v in value)
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
    from lib.core.schema import create_tables

    settings = app_settings()
    bind_database(settings.database_url_resolved)
    from lib.market.migrate import migrate_market_facts

    tables = create_tables()
    print(f"database {redact_url(settings.database_url_resolved)}: {len(tables)} tables ready"
          + (f" ({', '.join(tables)})" if tables else ""))
    rebuilt = migrate_market_facts()
    if rebuilt:
        print(f"market facts rebuilt from the stored snapshots for {len(rebuilt)} IP(s)")
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
