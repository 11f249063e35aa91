"""``animetop``: the operator's command line."""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import datetime, timezone
from typing import Callable

from .settings import SPECS, SettingsError, redact_url

COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {}


def command(name: str):
    def register(fn):
        COMMANDS[name] = fn
        return fn
    return register


def _broker():
    """Import the actors (which configures this process) and return the broker."""
    import actors

    return actors.broker


def _settings():
    from .app import settings_or_exit

    return settings_or_exit()


# -- settings ----------------------------------------------------------------

@command("settings")
def cmd_settings(args) -> int:
    if args.markdown:
        print("| Variable | Default | Meaning |\n|---|---|---|")
        for spec in SPECS:
            default = f"`{spec.default}`" if spec.default is not None else "(unset)"
            print(f"| `{spec.name}` | {default} | {spec.doc} |")
        return 0
    settings = _settings()
    for spec in SPECS:
        value = settings.values[spec.name]
        if "PASSWORD" in spec.name and value:
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


# -- database ----------------------------------------------------------------

@command("db")
def cmd_db(args) -> int:
    from .db import bind_database, create_tables

    settings = _settings()
    bind_database(settings.database_url_resolved)
    tables = create_tables()
    print(f"database {redact_url(settings.database_url_resolved)}: {len(tables)} tables ready"
          + (f" ({', '.join(tables)})" if tables else ""))
    return 0


# -- messages ----------------------------------------------------------------

@command("enqueue")
def cmd_enqueue(args) -> int:
    from dramatiq.errors import ActorNotFound

    from .middleware.arguments import check_arguments
    from .errors import BadMessage

    try:
        kwargs = json.loads(args.kwargs) if args.kwargs else {}
    except json.JSONDecodeError as e:
        print(f"animetop enqueue: the arguments are not JSON: {e}", file=sys.stderr)
        return 2
    if not isinstance(kwargs, dict):
        print("animetop enqueue: the arguments must be a JSON object of keyword arguments", file=sys.stderr)
        return 2
    broker = _broker()
    try:
        actor = broker.get_actor(args.actor)
    except ActorNotFound:
        print(f"animetop enqueue: no actor {args.actor!r}; actors: {', '.join(sorted(broker.actors))}",
              file=sys.stderr)
        return 2
    try:
        check_arguments(actor.fn, (), kwargs)
    except BadMessage as e:
        print(f"animetop enqueue: {e}", file=sys.stderr)
        return 2
    message = actor.send_with_options(kwargs=kwargs, delay=args.delay_ms)
    print(message.message_id)
    return 0


@command("deadletters")
def cmd_deadletters(args) -> int:
    from .deadletters import DeadLetters, NotRequeueable

    broker = _broker()
    letters = DeadLetters.for_broker(broker, broker.reasons)
    if args.action == "list":
        rows = letters.list(args.queue)
        if args.format == "json":
            print(json.dumps([r.as_dict() for r in rows], ensure_ascii=False, default=str, indent=2))
            return 0
        if not rows:
            print("no dead letters")
            return 0
        print(f"{'ID':36}  {'QUEUE':12} {'ACTOR':18} {'RETRIES':>7}  {'DEAD AT (UTC)':19}  REASON")
        for r in rows:
            when = datetime.fromtimestamp(r.dead_at, timezone.utc).strftime("%Y-%m-%d %H:%M:%S") if r.dead_at else "?"
            reason = (r.as_dict()["reason"] or "").splitlines()[0][:80] if r.as_dict()["reason"] else ""
            print(f"{r.id:36}  {r.queue:12} {r.actor:18} {r.retries:>7}  {when:19}  {reason}")
        print(f"{len(rows)} dead letter(s)")
        return 0
    if args.action == "show":
        letter = letters.get(args.ids[0]) if args.ids else None
        if letter is None:
            print(f"animetop deadletters: no dead letter {args.ids[0] if args.ids else ''!r}", file=sys.stderr)
            return 1
        print(json.dumps(letter.as_dict(), ensure_ascii=False, default=str, indent=2))
        return 0
    if args.action == "requeue":
        if not args.ids and not args.all:
            print("animetop deadletters requeue: name IDs or --all", file=sys.stderr)
            return 2
        try:
            done = letters.requeue(None if args.all else args.ids, args.queue)
        except NotRequeueable as e:
            print(f"animetop deadletters requeue: {e}", file=sys.stderr)
            return 1
        for letter in done:
            print(f"requeued {letter.message_id} ({letter.actor} on {letter.queue})")
        missing = set(args.ids or ()) - {i for letter in done for i in (letter.id, letter.message_id)}
        for ident in sorted(missing):
            print(f"animetop deadletters: no dead letter {ident!r}", file=sys.stderr)
        print(f"{len(done)} requeued")
        return 1 if missing else 0
    if args.action == "purge":
        count = letters.purge(args.queue)
        print(f"{count} dead letter(s) purged")
        return 0
    return 2


# -- IPs -----------------------------------------------------------------------

def _catalogue():
    from .db import bind_database
    from .ip_catalogue import Catalogue
    from .redis_state import state_redis
    from .schedule import ScheduleStore

    settings = _settings()
    bind_database(settings.database_url_resolved)
    return Catalogue(ScheduleStore(state_redis(settings)), settings)


@command("ip")
def cmd_ip(args) -> int:
    from .ip_catalogue import CatalogueError

    if args.action == "show":
        return _show_ip(args)
    catalogue = _catalogue()
    try:
        if args.action == "add":
            ip = catalogue.add(args.value, args.name, args.weight)
            print(f"added IP {ip.id}: {ip.keyword!r} (weight {ip.weight}), due now")
        elif args.action == "disable":
            ip = catalogue.disable(_ip_id(args.value))
            print(f"disabled IP {ip.id} ({ip.keyword!r}); removed from the schedule")
        elif args.action == "enable":
            ip = catalogue.enable(_ip_id(args.value))
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


def _ip_id(value: str | None) -> int:
    from .ip_catalogue import CatalogueError

    try:
        return int(value or "")
    except ValueError:
        raise CatalogueError(f"expected an IP id (a number); got {value!r}") from None


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


# -- pools -------------------------------------------------------------------

@command("pool")
def cmd_pool(args) -> int:
    from pathlib import Path

    from .db import bind_database
    from .pool import KINDS, PoolError, load_rows, model_of

    settings = _settings()
    bind_database(settings.database_url_resolved)
    if args.action == "status":
        from .redis_state import state_redis
        from . import keys

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


# -- collection ----------------------------------------------------------------

@command("collect")
def cmd_collect(args) -> int:
    from .collector import CollectError, add_task, find_task

    if args.action == "run":
        broker = _broker()  # configures the process: database, broker
        from .collector import app_collector

        try:
            first = app_collector(_settings()).start(find_task(args.task))
        except CollectError as e:
            print(f"animetop collect run: {e}", file=sys.stderr)
            return 1
        if first is None:
            print("nothing to collect: the source has no rows")
            return 0
        broker.get_actor("collect_batch").send(**first.as_kwargs())
        print(f"run {first.run_id} of task {args.task}: first window at offset {first.offset} (down to {first.end})")
        return 0
    from .db import bind_database
    from models import CollectionTask

    bind_database(_settings().database_url_resolved)
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


@command("status")
def cmd_status(args) -> int:
    from .redis_state import state_redis
    from .status import gather, render

    broker = _broker()
    settings = _settings()
    while True:
        status = gather(settings, broker, state_redis(settings))
        if args.format == "json":
            print(json.dumps(status, ensure_ascii=False, indent=2, default=str))
        else:
            if args.watch:
                print("\033[2J\033[H", end="")
            print(render(status), flush=True)
        if not args.watch:
            return 0
        try:
            time.sleep(args.interval)
        except KeyboardInterrupt:
            return 0


@command("dashboard")
def cmd_dashboard(args) -> int:
    from .dashboard import Dashboard, summary_status
    from .redis_state import state_redis

    broker = _broker()
    settings = _settings()
    side = _read_side()
    dash = Dashboard(settings, side, lambda: summary_status(settings, state_redis(settings), broker),
                     port=args.port).start()
    return _serve_until_interrupted(dash, f"dashboard on {dash.url} (read-only)")


def _serve_until_interrupted(server, banner: str) -> int:
    """Keep a background server (LocalHttpServer) up until Ctrl-C."""
    print(f"{banner}; Ctrl-C stops it", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.stop()
    return 0


@command("demo")
def cmd_demo(args) -> int:
    from .demo import run_demo

    return run_demo(args.minutes, args.speed, args.ips, keep=args.keep, record=args.record)


@command("simulator")
def cmd_simulator(args) -> int:
    from .simulator import MarketSimulator

    sim = MarketSimulator(args.port, speed=args.speed).start()
    return _serve_until_interrupted(
        sim, f"market simulator on {sim.url} (speed {args.speed}x); point MERCARI_BASE_URL at it. "
             f"Try {sim.url}/search?keyword=%E9%AC%BC%E6%BB%85%E3%81%AE%E5%88%83&status=on_sale")


@command("fake-export-api")
def cmd_fake_export_api(args) -> int:
    from .fake_export_api import FakeExportApi

    api = FakeExportApi(args.port).start()
    for spec in args.task:
        name, _, rows = spec.partition(":")
        api.add_task(name, int(rows or 1000), bad_every=args.bad_every)
    return _serve_until_interrupted(
        api, f"fake export API on {api.url} (user demo / password demo); tasks: {', '.join(api.tasks) or 'none'}")


# -- alerts ----------------------------------------------------------------------

@command("alerts")
def cmd_alerts(args) -> int:
    from .notify import Channel, PermanentDeliveryError, TransientDeliveryError, body_for, post
    from .settings import parse_duration

    settings = _settings()
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
    from .clock import naive_utc
    from .db import bind_database
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
    rows = []
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


# -- read side -----------------------------------------------------------------

def _read_side():
    from .db import bind_database
    from .read_side import ReadSide
    from .redis_state import state_redis

    settings = _settings()
    bind_database(settings.database_url_resolved)
    try:
        client = state_redis(settings)
    except Exception as e:  # the database answers on its own
        print(f"animetop: Redis unavailable ({e}); reading the database", file=sys.stderr)
        client = None
    return ReadSide(settings, client)


@command("leaderboard")
def cmd_leaderboard(args) -> int:
    rows = _read_side().leaderboard(args.by, args.hours, args.limit)
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
        detail = _read_side().ip_detail(_ip_id(args.value), args.hours)
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


# -- processes ---------------------------------------------------------------

@command("run")
def cmd_run(args) -> int:
    from .app import configure_logging
    from .redis_state import ensure_redis_server
    from .supervisor import run_process_type

    settings = _settings()
    configure_logging(settings.log_level)
    ensure_redis_server(settings)
    if args.process_type == "scheduler":
        # periodiq's first tick may be up to a minute away: tick once now, so a restart resumes at once.
        from .schedule_tick import tick_message

        broker = _broker()
        broker.enqueue(tick_message())
        broker.get_actor("fill_all_pools").send()  # the start-up fill
    return run_process_type(args.process_type, settings, args.actors)


@command("redis")
def cmd_redis(args) -> int:
    from .embedded_redis import EmbeddedRedis

    settings = _settings()
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="animetop", description=__doc__.strip("` \n"))
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("settings", help="print the effective settings (passwords redacted)")
    p.add_argument("--markdown", action="store_true", help="print the settings table for the README")

    p = sub.add_parser("db", help="database tasks")
    p.add_argument("action", choices=["init"], help="init: create all tables (idempotent)")

    p = sub.add_parser("enqueue", help="send a message to an actor")
    p.add_argument("actor")
    p.add_argument("kwargs", nargs="?", default="{}", help='keyword arguments as a JSON object')
    p.add_argument("--delay-ms", type=int, default=None)

    p = sub.add_parser("deadletters", help="inspect and requeue dead-lettered messages")
    p.add_argument("action", choices=["list", "show", "requeue", "purge"])
    p.add_argument("ids", nargs="*", help="dead letter IDs (the ID column or the message id)")
    p.add_argument("--queue", help="only this queue")
    p.add_argument("--all", action="store_true", help="requeue: every dead letter (of --queue)")
    p.add_argument("--format", choices=["table", "json"], default="table")

    p = sub.add_parser("ip", help="manage the IPs (franchises) being tracked")
    p.add_argument("action", choices=["add", "list", "show", "disable", "enable", "import"])
    p.add_argument("value", nargs="?", help="add: KEYWORD; show/disable/enable: ID; import: FILE")
    p.add_argument("--hours", type=int, default=24, help="show: hours of history (default 24)")
    p.add_argument("--name", help="add: display name (default: the keyword)")
    p.add_argument("--weight", type=float, default=1.0, help="add: initial weight (default 1.0)")
    p.add_argument("--format", choices=["table", "json"], default="table")

    p = sub.add_parser("pool", help="title/content pools")
    p.add_argument("action", choices=["load", "status"])
    p.add_argument("kind", nargs="?", help="titles or contents")
    p.add_argument("file", nargs="?", help="one text a line, CSV with a text column, or JSON lines")
    p.add_argument("--group", type=int)
    p.add_argument("--batch", type=int)

    p = sub.add_parser("collect", help="incremental collection tasks from the export API")
    p.add_argument("action", choices=["add", "list", "enable", "disable", "run"])
    p.add_argument("task", nargs="?", help="the source's task id (or our numeric id)")
    p.add_argument("--source", help="add: source name")
    p.add_argument("--batch-size", type=int, default=100)
    p.add_argument("--date-field", default="date")
    p.add_argument("--key-field", help="add: a stable id field of the rows (default: hash of the row)")
    p.add_argument("--filter-days", type=int, default=7)
    p.add_argument("--max-expired", type=int, default=3, help="add: expired batches in a row that end a first run")
    p.add_argument("--interval", type=int, default=3600, help="add: seconds between runs")

    p = sub.add_parser("status", help="queue depths, in-flight crawls, schedule, locks, recent errors")
    p.add_argument("--watch", action="store_true", help="refresh until Ctrl-C")
    p.add_argument("--interval", type=float, default=2.0)
    p.add_argument("--format", choices=["table", "json"], default="table")

    p = sub.add_parser("dashboard", help="serve the read-only web dashboard")
    p.add_argument("--port", type=int, default=8790)

    p = sub.add_parser("demo", help="run the whole system offline against the simulator for a few minutes")
    p.add_argument("--minutes", type=float, default=2.0)
    p.add_argument("--speed", type=float, default=120.0, help="simulated seconds per real second")
    p.add_argument("--ips", type=int, default=12, help="how many sample IPs (at most 12)")
    p.add_argument("--keep", action="store_true", help="leave the embedded Redis running afterwards")
    p.add_argument("--record", metavar="FILE",
                   help="write every search page the simulator served as JSON lines (ground truth to check "
                        "the numbers against)")

    p = sub.add_parser("simulator", help="serve the local Mercari market simulator")
    p.add_argument("--port", type=int, default=8780)
    p.add_argument("--speed", type=float, default=1.0, help="simulated seconds per real second")

    p = sub.add_parser("fake-export-api", help="serve a local fake of the export API (tests, demo)")
    p.add_argument("--port", type=int, default=8765)
    p.add_argument("--task", action="append", default=[], help="NAME:ROWS, repeatable (default rows 1000)")
    p.add_argument("--bad-every", type=int, default=0, help="every Nth row malformed")

    p = sub.add_parser("alerts", help="market alerts and their notifications")
    p.add_argument("action", choices=["list", "test"])
    p.add_argument("url", nargs="?", help="test: a channel URL (https://…, slack+https://…, dingtalk+https://…)")
    p.add_argument("--ip", type=int)
    p.add_argument("--since", default="24h")
    p.add_argument("--format", choices=["table", "json"], default="table")

    p = sub.add_parser("leaderboard", help="IPs ranked by market flow")
    p.add_argument("--by", choices=["inflow", "outflow", "liquidity"], default="outflow")
    p.add_argument("--hours", type=int, default=24)
    p.add_argument("--limit", type=int, default=20)
    p.add_argument("--format", choices=["table", "json", "csv"], default="table")

    p = sub.add_parser("run", help="run a process type of the Procfile, restarting it if it dies")
    p.add_argument("process_type", choices=["worker", "crawler", "scheduler"])
    p.add_argument("--actors", default="actors", help="module that declares the actors (default: actors)")

    p = sub.add_parser("redis", help="the embedded redis-server (when REDIS_URL is unset)")
    p.add_argument("action", choices=["start", "stop", "status"])
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args) or 0
    except SettingsError as e:
        print(f"animetop: bad setting {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
