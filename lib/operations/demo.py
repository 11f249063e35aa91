"""``animetop demo``: the whole system doing its real job, offline, in a few minutes.

It starts the embedded Redis and SQLite under ``var/demo`` (or uses the broker, Redis and database that
``BROKER_URL``, ``REDIS_URL`` and ``DATABASE_URL`` name, which must hold no data yet), the market simulator and
the dashboard; loads a sample of real IP keywords; crawls two simulated days of each market's history through the
real result path (``lib.operations.backfill``: heat and time to sell need them); then runs the Procfile's three
process types (scheduler, crawler, worker) as separate processes on an accelerated clock, showing progress while
some simulated hours of crawls go by; stops them (no Chromium or redis-server left); and prints the leaderboard by
the richest measure the data supports, with the dashboard's URL. ``--dashboard`` keeps the dashboard serving the
demo's data until Ctrl-C.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from contextlib import ExitStack
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from lib.market.leaderboard_text import print_leaderboard
from lib.operations.demo_clock import DemoClock

if TYPE_CHECKING:
    from types import FrameType

    from dramatiq import Broker

    from lib.core.clock import Clock
    from lib.core.settings import Settings
    from lib.market.read_side import ReadSide
    from lib.standins.simulator.server import MarketSimulator
    from lib.web.server import BackgroundServer

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
        # the simulator on this machine, its market faster than real time: no site's request budget to keep
        "CRAWL_RATE_LIMIT": "0",
        "WORKER_PROCESSES": "1", "WORKER_THREADS": "4", "WORKER_SHUTDOWN_TIMEOUT": "20s",
        "LOG_LEVEL": "WARNING",
    }


#: Services the demo takes from the environment when they are set (embedded ones otherwise).
SERVICE_VARIABLES = ("BROKER_URL", "REDIS_URL", "DATABASE_URL")
#: Settings of what is measured that the demo takes from the environment when they are set (its own otherwise):
#: ``FLOW_ESTIMATES=false animetop demo`` shows the counts its pages saw.
MEASURE_VARIABLES = ("FLOW_ESTIMATES",)


def configured_services(environ: dict[str, str] | os._Environ[str]) -> dict[str, str]:
    """The services set in the environment (a production profile: RabbitMQ, Redis, MySQL), by variable."""
    return {name: environ[name] for name in SERVICE_VARIABLES if environ.get(name)}


def describe_services(settings: Settings) -> str:
    """Which broker, Redis and database a demo runs on, credentials redacted."""
    from lib.core.redaction import redact_url

    embedded = "embedded" if settings.redis_url is None else "configured"
    return (f"broker {redact_url(settings.broker_url_resolved)}"
            f"{' (embedded Redis)' if settings.broker_url is None and settings.redis_url is None else ''}, "
            f"state Redis {redact_url(settings.state_redis_url)} ({embedded}), "
            f"database {redact_url(settings.database_url_resolved)}"
            f"{' (embedded SQLite)' if settings.database_url is None else ''}")


def refuse_non_empty(settings: Settings, services: dict[str, str]) -> str | None:
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


#: The closing leaderboard's window at most: the dashboard's first window (a day).
BOARD_HOURS = 24
#: What the closing leaderboard ranks by: the first of these that ranks any IP (heat needs a day of history
#: before its window; outflow only a tracked hour).
BOARD_BY = ("heat", "outflow")
#: The history's crawl interval: production's default SCHEDULER_BASE_INTERVAL (an IP of weight 1). Five pages of
#: the on-sale search hold two hours of the busiest sample market's new listings, and the history costs half what
#: the live phase's hourly crawls would.
HISTORY_STEP = 2 * 3600.0


def run_demo(minutes: float, speed: float, ips: int, keep: bool = False, record: str | None = None,
             history: float = 48.0, dashboard: bool = False, port: int = 8790, market: str = "deterministic") -> int:
    from lib.app import configure_logging
    from lib.core.clock import set_clock
    from lib.core.db import bind_database
    from lib.core.embedded_redis import EmbeddedRedis
    from lib.core.redis_client import state_redis
    from lib.core.settings import load_settings, use_settings
    from lib.crawling.install import ensure_chromium
    from lib.market.read_side import ReadSide
    from lib.market.schema import create_tables
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
    # One clean-up for every way out (the end, Ctrl-C or SIGTERM at any step, an error), in reverse order of
    # what was started: the dashboard, the broker's connections, the simulator and the embedded Redis.
    with ExitStack() as cleanup:
        _stop_requested.clear()
        previous_term = signal.signal(signal.SIGTERM, _interrupt)  # a SIGTERM stops the demo as Ctrl-C does
        cleanup.callback(signal.signal, signal.SIGTERM, previous_term if previous_term is not None else signal.SIG_DFL)
        clock = DemoClock(speed)  # the history ends now; the live phase goes on from where it ended
        history_end = clock.now()
        clock.set(history_end - history * 3600)  # the IPs are added as their history begins
        set_clock(clock)
        sim = MarketSimulator(clock=clock, record=record, market=market).start()
        cleanup.callback(sim.stop)
        services = configured_services(os.environ)
        measures = {name: os.environ[name] for name in MEASURE_VARIABLES if os.environ.get(name)}
        env = {**demo_env(data_dir, sim.url, speed, history_end, chromium), **measures, **services}
        settings = load_settings(env)
        use_settings(settings)
        if not keep and settings.redis_url is None:
            cleanup.callback(EmbeddedRedis(data_dir).stop)
        bind_database(settings.database_url_resolved)
        create_tables()
        refused = refuse_non_empty(settings, services)
        if refused:
            print(f"animetop demo: {refused}", file=sys.stderr)
            return 2
        print(f"• services: {describe_services(settings)}", flush=True)
        broker = build_broker(settings)  # to read queue depths; the process types have their own
        cleanup.callback(broker.close)
        catalogue = Catalogue(ScheduleStore(state_redis(settings)), settings, clock)
        loaded = [catalogue.add(keyword) for keyword in SAMPLE_IPS[:ips]]
        print(f"• market simulator on {sim.url} at {speed:g}x; {ips} IPs loaded; data in {data_dir}", flush=True)
        # the demo's own read side reads the database alone (no cache): the dashboard and the closing leaderboard
        # always show every result applied so far, and agree with each other
        side = ReadSide(settings, None, clock)
        server = start_dashboard(settings, broker, side, port)
        cleanup.callback(server.stop)
        print(f"• dashboard on {server.url} while the demo runs, its charts growing as the crawls are applied "
              "(`--dashboard` keeps it serving afterwards)", flush=True)
        try:
            if history > 0:
                crawl_history(sim, settings, [(ip.id, ip.keyword) for ip in loaded], history_end, history, clock)
        except KeyboardInterrupt:
            print("\n• interrupted while crawling the history (no process type was started)", flush=True)
            return 130
        clock.run()  # simulated time goes on from the history's end (give or take its real duration), at `speed`
        env["CLOCK_ANCHOR"] = str(clock.anchor)

        logs = data_dir / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        procs: dict[str, subprocess.Popen[bytes]] = {}
        started = clock.now()
        interrupted = False
        try:  # a SIGTERM or Ctrl-C while the process types start stops the ones started, as in the live phase
            for kind in ("scheduler", "crawler", "worker"):
                log = open(logs / f"{kind}.log", "w")
                # a demo killed outright (SIGKILL, a test's timeout) still stops its process types: their runners
                # get the SIGTERM of a normal stop from the kernel
                procs[kind] = subprocess.Popen([sys.executable, "-m", "lib.cli", "run", kind],
                                               env={**os.environ, **env}, stdout=log, stderr=subprocess.STDOUT,
                                               start_new_session=True,
                                               preexec_fn=die_with(os.getpid(), signal.SIGTERM))
            print(f"• started scheduler, crawler and worker (logs in {logs}); running {minutes:g} min "
                  f"≈ {minutes * speed / 60:.1f} simulated hours", flush=True)
            deadline = time.monotonic() + minutes * 60
            while time.monotonic() < deadline:
                if _stop_requested.wait(min(10, max(0.5, deadline - time.monotonic()))):
                    raise KeyboardInterrupt  # a SIGTERM whose own KeyboardInterrupt was lost (see _interrupt)
                print("  " + progress(broker, clock, started), flush=True)
                dead = [k for k, p in procs.items() if p.poll() is not None]
                if dead:
                    print(f"! {', '.join(dead)} exited; see {logs}", flush=True)
                    break
        except KeyboardInterrupt:
            interrupted = True
            print("\n• interrupted", flush=True)
        finally:
            print("• stopping: the scheduler first, then the crawler and the worker once the work in flight "
                  "is done …", flush=True)
            _stop_started(procs, "scheduler")
            # the worker runs ticks too (a tick asks for the next one as a delayed message): pausing ends that chain
            schedule = ScheduleStore(state_redis(settings))
            schedule.pause()
            drained = drain(broker, settings, ("crawl", "pipeline"), timeout=90)
            _stop_started(procs, "crawler")  # finishes the crawl it is in and sends its result
            drained = drain(broker, settings, ("pipeline",), timeout=90) and drained
            _stop_started(procs, "worker")
            schedule.resume()  # what is left in Redis is a normal (stopped) deployment's state
            sim.stop()
            clock.stop()
            if not drained:
                print("! some work was still queued at the end (it stays in the broker)", flush=True)

        # every hour bucket the demo's data covers, from the history's first to the current one
        hours = int((clock.now() // 3600) - ((started - history * 3600) // 3600)) + 1
        window = min(BOARD_HOURS, hours)
        by = next((b for b in BOARD_BY if side.leaderboard(b, window, 1)), BOARD_BY[-1])
        print(f"\nLeaderboard at {datetime.fromtimestamp(clock.now(), timezone.utc):%Y-%m-%d %H:%M} UTC "
              f"(simulated time), as `animetop leaderboard --by {by} --hours {window}` prints it:")
        print_leaderboard(side, by, window, 20)
        print(f"dead letters: {dead_letters(broker)}")
        where_next(services, data_dir, logs, by, window)
        url = f"{server.url}/?by={by}&hours={window}"
        if dashboard and not interrupted:
            serve_until_interrupted(url)
        else:
            print(f"\nThe dashboard ({url}) stops with the demo: `animetop demo --dashboard` keeps it serving "
                  "the demo's data until Ctrl-C.", flush=True)
    return 0


def _stop_started(procs: dict[str, subprocess.Popen[bytes]], kind: str) -> None:
    """Stop the process type ``kind`` if the demo got as far as starting it."""
    if kind in procs:
        stop(procs[kind])


#: Set by a SIGTERM. Its handler also raises KeyboardInterrupt, as Ctrl-C does, but Python drops an exception a
#: handler raises while the main thread runs a hook whose exceptions are ignored (logging's after-fork hook, as
#: the demo starts its process types): the loops that wait check this too.
_stop_requested = threading.Event()


def _interrupt(signum: int, frame: FrameType | None) -> None:
    _stop_requested.set()
    raise KeyboardInterrupt


def crawl_history(sim: MarketSimulator, settings: Settings, ips: list[tuple[int, str]], end: float, hours: float,
                  clock: DemoClock) -> None:
    """The markets' past ``hours`` before ``end``, crawled and applied before the live phase
    (``lib.operations.backfill``)."""
    from lib.core.redis_client import state_redis
    from lib.operations.backfill import backfill

    print(f"• history: {hours:g} simulated hours of each market, a crawl every {HISTORY_STEP / 3600:g} h, applied "
          "through the result path …", flush=True)
    began = time.monotonic()
    count = backfill(sim, settings, state_redis(settings), ips, end, hours, HISTORY_STEP, clock,
                     progress=lambda done, total: print(f"  history: {done}/{total} crawls applied", flush=True))
    print(f"• history: {count} crawls applied in {time.monotonic() - began:.0f} s", flush=True)


def start_dashboard(settings: Settings, broker: Broker, side: ReadSide, port: int) -> BackgroundServer:
    """The dashboard (``lib.web``) over the demo's data on a thread, on ``port`` or, when that one is taken, on a
    free one."""
    from lib.operations.dashboard import app_for
    from lib.web.server import BackgroundServer

    app = app_for(settings, broker, side)
    try:
        return BackgroundServer(app, port=port).start()
    except RuntimeError:
        if port == 0:
            raise
        print(f"  (port {port} is taken: the dashboard listens on a free one)", flush=True)
        return BackgroundServer(app, port=0).start()


def serve_until_interrupted(url: str) -> None:
    """Keep the dashboard serving until Ctrl-C (or SIGTERM, which ``run_demo`` turns into the same)."""
    print(f"\nDashboard over the demo's data: {url} (Ctrl-C stops it)", flush=True)
    try:
        while not _stop_requested.wait(3600):
            pass
    except KeyboardInterrupt:
        pass
    print("\n• dashboard stopped", flush=True)


def where_next(services: dict[str, str], data_dir: Path, logs: Path, by: str, window: int) -> None:
    if services:
        print(f"""
Where to look next (with the same {', '.join(services)} set):
  animetop ip show 1 --hours {window}
  animetop leaderboard --by {by} --hours {window}
  animetop dashboard
  logs of each process type: {logs}""")
    else:
        print(f"""
Where to look next:
  DATA_DIR={data_dir} animetop ip show 1 --hours {window}
  DATA_DIR={data_dir} animetop leaderboard --by {by} --hours {window}
  logs of each process type: {logs}
  (those start the demo's embedded Redis again; `DATA_DIR={data_dir} animetop redis stop` ends it)
  for real: docs/operating/production.md (REDIS_URL, BROKER_URL, DATABASE_URL, PROXY_URLS, `honcho start`)""")


def stop(proc: subprocess.Popen[bytes], timeout: float = 60) -> None:
    """SIGTERM a process type (its runner stops it gracefully); SIGKILL its group if it hangs."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def drain(broker: Broker, settings: Settings, queues: tuple[str, ...], timeout: float) -> bool:
    """Wait until no crawl is in flight and these queues hold no ready or running message."""
    from lib.core.redis_client import state_redis
    from lib.messaging.in_flight import InFlight
    from lib.messaging.queue_stats import queue_counts

    in_flight = InFlight(state_redis(settings))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        counts = [queue_counts(broker, q) for q in queues]
        busy = sum(c["ready"] + c.get("running", 0) for c in counts)
        if busy == 0 and ("crawl" not in queues or not in_flight.members()):
            return True
        time.sleep(0.5)
    return False


def progress(broker: Broker, clock: Clock, started: float) -> str:
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


def dead_letters(broker: Broker) -> int:
    """Messages that failed for good during the run (a healthy demo has none)."""
    from lib.messaging.queue_stats import queue_counts
    from lib.messaging.queues import ALL_QUEUES

    return sum(queue_counts(broker, q)["dead"] for q in ALL_QUEUES)
