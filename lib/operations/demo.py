"""``animetop demo``: the whole system doing its real job, offline, in a couple of minutes.

It starts the embedded Redis and SQLite under ``var/demo`` (or uses the broker, Redis and database that
``BROKER_URL``, ``REDIS_URL`` and ``DATABASE_URL`` name, which must hold no data yet), the market
simulator with an accelerated clock, and the Procfile's three process types
(scheduler, crawler, worker) as separate processes; loads a sample of real IP
keywords; shows progress while some simulated hours of crawls go by; prints
the leaderboard; and stops everything (no Chromium or redis-server left).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

SAMPLE_IPS = ["鬼滅の刃", "呪術廻戦", "ONE PIECE", "推しの子", "チェンソーマン", "葬送のフリーレン", "SPY×FAMILY",
              "ブルーロック", "薬屋のひとりごと", "ダンジョン飯", "僕のヒーローアカデミア", "ハイキュー!!"]


def demo_env(data_dir: Path, sim_url: str, speed: float, anchor: float, chromium: str) -> dict[str, str]:
    """Settings of every demo process: all the same clock, schedule intervals in simulated time."""
    return {
        "DATA_DIR": str(data_dir),
        "MERCARI_BASE_URL": sim_url,
        "CHROMIUM_PATH": chromium,
        "CHROMIUM_NO_SANDBOX": "true" if os.geteuid() == 0 else "false",
        "CLOCK_SPEED": str(speed),
        "CLOCK_ANCHOR": str(anchor),
        "SCHEDULER_BASE_INTERVAL": "1h", "SCHEDULER_MIN_INTERVAL": "30m", "SCHEDULER_MAX_INTERVAL": "1h",
        "SCHEDULER_STARTUP_SPREAD": "10m", "SCHEDULER_BACKPRESSURE_THRESHOLD": "6",
        "JANITOR_TIMEOUT": "6h", "JANITOR_INTERVAL": "1h",
        "CRAWLER_PROCESSES": "1", "CRAWLER_THREADS": "2", "CRAWL_MAX_PAGES": "2",
        "WORKER_PROCESSES": "1", "WORKER_THREADS": "4", "WORKER_SHUTDOWN_TIMEOUT": "20s",
        "LOG_LEVEL": "WARNING",
    }


#: Services the demo takes from the environment when they are set (embedded ones otherwise).
SERVICE_VARIABLES = ("BROKER_URL", "REDIS_URL", "DATABASE_URL")


def configured_services(environ: dict[str, str] | os._Environ[str]) -> dict[str, str]:
    """The services set in the environment (a production profile: RabbitMQ, Redis, MySQL), by variable."""
    return {name: environ[name] for name in SERVICE_VARIABLES if environ.get(name)}


def describe_services(settings) -> str:
    """Which broker, Redis and database a demo runs on, credentials redacted."""
    from lib.core.redaction import redact_url

    embedded = "embedded" if settings.redis_url is None else "configured"
    return (f"broker {redact_url(settings.broker_url_resolved)}"
            f"{' (embedded Redis)' if settings.broker_url is None and settings.redis_url is None else ''}, "
            f"state Redis {redact_url(settings.state_redis_url)} ({embedded}), "
            f"database {redact_url(settings.database_url_resolved)}"
            f"{' (embedded SQLite)' if settings.database_url is None else ''}")


def refuse_non_empty(settings, services: dict[str, str]) -> str | None:
    """The demo loads its own sample market and counts from zero: a configured database or Redis that already
    holds data is refused (never wiped), naming the variable."""
    from lib.core.redaction import redact_url
    from lib.core.redis_client import state_redis
    from models import AppliedResult, IpMetadata

    if "DATABASE_URL" in services:
        ips, results = IpMetadata.select().count(), AppliedResult.select().count()
        if ips or results:
            return (f"DATABASE_URL={redact_url(services['DATABASE_URL'])} already holds {ips} IPs and {results} "
                    "crawl results; the demo needs an empty database (it loads its own sample market)")
    if "REDIS_URL" in services and state_redis(settings).dbsize():
        return (f"REDIS_URL={redact_url(settings.state_redis_url)} is not empty; the demo needs an empty Redis "
                "database (it would mix its schedule and item states with what is there)")
    return None


def run_demo(minutes: float, speed: float, ips: int, keep: bool = False, record: str | None = None) -> int:
    from lib.app import configure_logging
    from lib.core.clock import Clock, set_clock
    from lib.core.db import bind_database
    from lib.core.embedded_redis import EmbeddedRedis
    from lib.core.redis_client import state_redis
    from lib.core.schema import create_tables
    from lib.core.settings import load_settings, use_settings
    from lib.crawling.install import ensure_chromium
    from lib.market.read_side import ReadSide, display_ljust
    from lib.messaging.broker import build_broker
    from lib.operations.supervisor import die_with
    from lib.scheduling.catalogue import Catalogue
    from lib.scheduling.schedule import ScheduleStore
    from lib.standins.simulator import MarketSimulator

    configure_logging("WARNING")
    data_dir = Path("var/demo").resolve()
    EmbeddedRedis(data_dir).stop()
    if data_dir.exists():
        shutil.rmtree(data_dir)  # a fresh market every run: running it twice in a row works
    print("• checking Chromium …", flush=True)
    chromium = ensure_chromium()
    anchor = time.time()
    clock = Clock(speed, anchor)
    set_clock(clock)
    sim = MarketSimulator(clock=clock, record=record).start()
    services = configured_services(os.environ)
    env = {**demo_env(data_dir, sim.url, speed, anchor, chromium), **services}
    settings = load_settings(env)
    use_settings(settings)
    bind_database(settings.database_url_resolved)
    create_tables()
    refused = refuse_non_empty(settings, services)
    if refused:
        sim.stop()
        print(f"animetop demo: {refused}", file=sys.stderr)
        return 2
    print(f"• services: {describe_services(settings)}", flush=True)
    broker = build_broker(settings)  # to read queue depths; the process types have their own
    catalogue = Catalogue(ScheduleStore(state_redis(settings)), settings, clock)
    for keyword in SAMPLE_IPS[:ips]:
        catalogue.add(keyword)
    print(f"• market simulator on {sim.url} at {speed:g}x; {ips} IPs loaded; data in {data_dir}", flush=True)

    logs = data_dir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    procs = {}
    for kind in ("scheduler", "crawler", "worker"):
        log = open(logs / f"{kind}.log", "w")
        # a demo killed outright (SIGKILL, a test's timeout) still stops its process types: their runners get
        # the SIGTERM of a normal stop from the kernel
        procs[kind] = subprocess.Popen([sys.executable, "-m", "lib.cli", "run", kind], env={**os.environ, **env},
                                       stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                       preexec_fn=die_with(os.getpid(), signal.SIGTERM))
    print(f"• started scheduler, crawler and worker (logs in {logs}); running {minutes:g} min "
          f"≈ {minutes * speed / 60:.1f} simulated hours", flush=True)
    started = clock.now()
    try:
        deadline = time.monotonic() + minutes * 60
        while time.monotonic() < deadline:
            time.sleep(min(10, max(0.5, deadline - time.monotonic())))
            print("  " + progress(broker, clock, started), flush=True)
            dead = [k for k, p in procs.items() if p.poll() is not None]
            if dead:
                print(f"! {', '.join(dead)} exited; see {logs}", flush=True)
                break
    except KeyboardInterrupt:
        print("\n• interrupted", flush=True)
    finally:
        print("• stopping: the scheduler first, then the crawler and the worker once the work in flight "
              "is done …", flush=True)
        stop(procs["scheduler"])
        # the worker runs ticks too (a tick asks for the next one as a delayed message): pausing ends that chain
        schedule = ScheduleStore(state_redis(settings))
        schedule.pause()
        drained = drain(broker, settings, ("crawl", "pipeline"), timeout=90)
        stop(procs["crawler"])  # finishes the crawl it is in and sends its result
        drained = drain(broker, settings, ("pipeline",), timeout=90) and drained
        stop(procs["worker"])
        schedule.resume()  # what is left in Redis is a normal (stopped) deployment's state
        sim.stop()
        if not drained:
            print("! some work was still queued at the end (it stays in the broker)", flush=True)

    # every hour bucket the run touched, from the first to the current one
    hours = int((clock.now() // 3600) - (started // 3600)) + 1
    side = ReadSide(settings, state_redis(settings), clock)
    # sales are counted in the hour they happened (event time), and a crawl can see sales from before the run
    print(f"\nLeaderboard by outflow (sales), last {hours} simulated hours "
          f"(since {side.window_start(hours):%Y-%m-%d %H:00} UTC):")
    print(f"{'#':>3}  {'IP':22} {'INFLOW':>7} {'OUTFLOW':>8} {'LIQUIDITY':>10}")
    for row in side.leaderboard("outflow", hours, 20):
        liquidity = f"{row['liquidity']:.2f}" if row["liquidity"] is not None else "-"
        print(f"{row['rank']:>3}  {display_ljust(row['keyword'], 22)} {row['inflow']:>7} {row['outflow']:>8} "
              f"{liquidity:>10}")
    print(f"dead letters: {dead_letters(broker)}")
    broker.close()
    if not keep and settings.redis_url is None:
        EmbeddedRedis(data_dir).stop()
    if services:
        print(f"""
Where to look next (with the same {', '.join(services)} set):
  animetop ip show 1 --hours {hours}
  animetop leaderboard --by liquidity --hours {hours}
  animetop dashboard
  logs of each process type: {logs}""")
    else:
        print(f"""
Where to look next:
  DATA_DIR={data_dir} animetop ip show 1 --hours {hours}
  DATA_DIR={data_dir} animetop leaderboard --by liquidity --hours {hours}
  logs of each process type: {logs}
  (those start the demo's embedded Redis again; `DATA_DIR={data_dir} animetop redis stop` ends it)
  for real: docs/operating/production.md (REDIS_URL, BROKER_URL, DATABASE_URL, PROXY_URLS, `honcho start`)""")
    return 0


def stop(proc: subprocess.Popen, timeout: float = 60) -> None:
    """SIGTERM a process type (its runner stops it gracefully); SIGKILL its group if it hangs."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def drain(broker, settings, queues: tuple[str, ...], timeout: float) -> bool:
    """Wait until no crawl is in flight and these queues hold no ready or running message."""
    from lib.core.redis_client import state_redis
    from lib.messaging.queue_stats import queue_counts
    from lib.scheduling.schedule import InFlight

    in_flight = InFlight(state_redis(settings))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        counts = [queue_counts(broker, q) for q in queues]
        busy = sum(c["ready"] + c.get("running", 0) for c in counts)
        if busy == 0 and ("crawl" not in queues or not in_flight.members()):
            return True
        time.sleep(0.5)
    return False


def progress(broker, clock, started: float) -> str:
    """One line: simulated time elapsed, crawls applied, items seen, queue depths."""
    from lib.core.db import database
    from lib.messaging.queue_stats import queue_counts
    from models import AppliedResult, ItemSnapshot

    depths = {q: queue_counts(broker, q)["ready"] for q in ("crawl", "pipeline")}
    try:
        crawls, items = AppliedResult.select().count(), ItemSnapshot.select().count()
    finally:
        database.close()
    elapsed = (clock.now() - started) / 3600
    return (f"simulated +{elapsed:4.1f} h | crawls applied {crawls:4d} | items seen {items:6d} | "
            f"queued: crawl {depths['crawl']}, pipeline {depths['pipeline']}")


def dead_letters(broker) -> int:
    """Messages that failed for good during the run (a healthy demo has none)."""
    from lib.messaging.queue_stats import queue_counts
    from lib.messaging.queues import ALL_QUEUES

    return sum(queue_counts(broker, q)["dead"] for q in ALL_QUEUES)
