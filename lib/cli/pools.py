"""``animetop pool``: title and content pools."""

from __future__ import annotations

import json
import sys

from lib.cli.common import app_settings, command


@command("pool")
def cmd_pool(args) -> int:
    from pathlib import Path

    from lib.core.db import bind_database
    from lib.text_pools.pool import KINDS, PoolError, load_rows, model_of

    settings = app_settings()
    bind_database(settings.database_url_resolved)
    if args.action == "status":
        from lib.core import keys
        from lib.core.redis_client import state_redis

        client = state_redis(settings)
        print(f"{'KIND':9} {'GROUP':>6} {'IN REDIS':>9} {'AVAILABLE':>10} {'QUEUED':>7} {'USED':>8}")
        for kind in KINDS:
            model = model_of(kind)
            for group_id in sorted({r.group_id for r in model.select(model.group_id).distinct()}):
                counts = {s: model.select().where((model.group_id == group_id) & (model.status == s)).count()
                          for s in (0, 1, 2)}
                print(f"{kind:9} {group_id:>6} {client.llen(keys.pool(kind, group_id)):>9} {counts[1]:>10} "
                      f"{counts[2]:>7} {counts[0]:>8}")
        return 0
    try:
        model_of(args.kind)
    except PoolError as e:
        print(f"animetop pool load: {e}", file=sys.stderr)
        return 2
    if args.group is None or args.batch is None or not args.file:
        print("animetop pool load: needs KIND FILE --group G --batch B", file=sys.stderr)
        return 2
    texts = _read_texts(Path(args.file))
    count = load_rows(args.kind, args.group, args.batch, texts)
    print(f"{count} {args.kind} loaded into group {args.group}, batch {args.batch}")
    return 0


def _read_texts(path) -> list[str]:
    """One text a line; CSV with a ``text`` column; or JSON lines with a ``text`` field."""
    import csv
    import io

    raw = path.read_text(encoding="utf-8-sig")
    lines = raw.splitlines()
    if lines and lines[0].lstrip().startswith("{"):
        return [json.loads(line)["text"] for line in lines if line.strip()]
    header = [f.strip().lower() for f in lines[0].split(",")] if lines else []
    if "text" in header:
        return [row["text"] for row in csv.DictReader(io.StringIO(raw)) if row.get("text")]
    return [line for line in lines if line.strip()]
