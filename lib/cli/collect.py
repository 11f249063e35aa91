"""``animetop collect`` and the local ``fake-export-api``."""

from __future__ import annotations

import sys

from lib.cli.common import app_broker, app_settings, command, serve_until_interrupted


@command("collect")
def cmd_collect(args) -> int:
    from lib.collection.collector import CollectError, add_task, find_task

    if args.action == "run":
        app_broker()  # configures the process: database, broker
        from actors import collect_batch
        from lib.collection.collector import app_collector

        try:
            first = app_collector(app_settings()).start(find_task(args.task))
        except CollectError as e:
            print(f"animetop collect run: {e}", file=sys.stderr)
            return 1
        if first is None:
            print("nothing to collect: the source has no rows")
            return 0
        collect_batch.send(**first.as_kwargs())
        print(f"run {first.run_id} of task {args.task}: first window at offset {first.offset} (down to {first.end})")
        return 0
    from lib.core.db import bind_database
    from models import CollectionTask

    bind_database(app_settings().database_url_resolved)
    try:
        if args.action == "add":
            task = add_task(args.task, args.source or args.task, batch_size=args.batch_size,
                                 date_field=args.date_field, key_field=args.key_field, filter_days=args.filter_days,
                                 max_expired_batches=args.max_expired, interval=args.interval)
            print(f"added collection task {task.task_id} (id {task.id})")
        elif args.action in ("enable", "disable"):
            task = find_task(args.task)
            CollectionTask.update(enabled=args.action == "enable").where(CollectionTask.id == task.id).execute()
            print(f"{args.action}d collection task {task.task_id}")
        elif args.action == "list":
            print(f"{'ID':>4}  {'TASK':20} {'ON':3} {'BATCH':>5} {'LAST START':>10} {'RUN AT':>8} {'ROWS':>9}")
            for t in CollectionTask.select().order_by(CollectionTask.id):
                run = t.run_current_offset if t.run_id else "-"
                print(f"{t.id:>4}  {t.task_id:20} {'yes' if t.enabled else 'no':3} {t.batch_size:>5} "
                      f"{t.last_start_offset if t.last_start_offset is not None else '-':>10} {run:>8} "
                      f"{t.rows_collected:>9}")
    except CollectError as e:
        print(f"animetop collect {args.action}: {e}", file=sys.stderr)
        return 1
    return 0


@command("fake-export-api")
def cmd_fake_export_api(args) -> int:
    from lib.standins.fake_export_api import FakeExportApi

    api = FakeExportApi(args.port).start()
    for spec in args.task:
        name, _, rows = spec.partition(":")
        api.add_task(name, int(rows or 1000), bad_every=args.bad_every)
    return serve_until_interrupted(
        api, f"fake export API on {api.url} (user demo / password demo); tasks: {', '.join(api.tasks) or 'none'}")
