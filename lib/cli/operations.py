"""``animetop run``, ``status``, ``schedule``, ``dashboard``, ``demo`` and the local ``simulator``."""

from __future__ import annotations

import json
import time

from lib.cli.common import app_broker, app_read_side, app_settings, command, serve_until_interrupted


@command("run")
def cmd_run(args) -> int:
    from lib.app import configure_logging
    from lib.core.redis_client import ensure_redis_server
    from lib.operations.supervisor import run_process_type

    settings = app_settings()
    configure_logging(settings.log_level)
    ensure_redis_server(settings)
    if args.process_type == "scheduler":
        # periodiq's first tick may be up to a minute away: tick once now, so a restart resumes at once.
        from lib.scheduling.tick import tick_message

        broker = app_broker()
        broker.enqueue(tick_message())
        from actors import fill_all_pools

        fill_all_pools.send()  # the start-up fill
    return run_process_type(args.process_type, settings, args.actors)


@command("status")
def cmd_status(args) -> int:
    from lib.core.redis_client import state_redis
    from lib.operations.status import gather, render

    broker = app_broker()
    settings = app_settings()
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


@command("schedule")
def cmd_schedule(args) -> int:
    from lib.core.redis_client import state_redis
    from lib.scheduling.schedule import ScheduleStore

    schedule = ScheduleStore(state_redis(app_settings()))
    if args.action == "pause":
        schedule.pause()
        print("schedule paused: no crawl is sent until `animetop schedule resume` (crawls in flight finish)")
    elif args.action == "resume":
        schedule.resume()
        print("schedule resumed: the next tick sends what is due")
    else:
        print(f"schedule {'paused' if schedule.paused() else 'running'}: {schedule.count()} IPs scheduled")
    return 0


@command("dashboard")
def cmd_dashboard(args) -> int:
    from lib.operations.dashboard import app_for
    from lib.web.server import serve

    broker = app_broker()
    settings = app_settings()
    app = app_for(settings, broker, app_read_side())
    mode = "operator token set" if settings.dashboard_token else "read-only: DASHBOARD_TOKEN is not set"
    print(f"dashboard on http://{args.host}:{args.port} ({mode}); Ctrl-C stops it", flush=True)
    serve(app, args.host, args.port)
    return 0


@command("demo")
def cmd_demo(args) -> int:
    from lib.operations.demo import run_demo

    return run_demo(args.minutes, args.speed, args.ips, keep=args.keep, record=args.record, history=args.history,
                    dashboard=args.dashboard, port=args.port, market=args.market)


@command("simulator")
def cmd_simulator(args) -> int:
    from lib.standins.simulator import MarketSimulator

    sim = MarketSimulator(args.port, speed=args.speed, market=args.market, seed=args.seed).start()
    return serve_until_interrupted(
        sim, f"market simulator ({args.market} market) on {sim.url} (speed {args.speed}x); point MERCARI_BASE_URL "
             "at it. "
             f"Try {sim.url}/search?keyword=%E9%AC%BC%E6%BB%85%E3%81%AE%E5%88%83&status=on_sale")
