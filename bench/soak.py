"""``python -m bench soak``: whether each process type's memory stays flat over a long simulated run.

The real process types (scheduler, crawler with its Chromium, worker) run against the market simulator on an
accelerated clock, as ``animetop demo`` runs them (``lib.operations.demo``), for ``--hours`` simulated hours at
``--ips`` IPs. Every ``--every`` simulated minutes the PSS of each process type's process tree is sampled
(``bench.memory``), with how many results were applied by then. After ``--warmup`` simulated hours (caches filling,
the first crawls' baselines) a straight line is fitted to each type's samples: its slope in MB per simulated day
and in kB per 1,000 results applied. A worker that keeps what it has applied grows with the results; a flat one
does not.

``python -m bench soak --in-process`` runs the worker's result path in this process instead: a Dramatiq worker of
``--threads`` threads (4, the demo's) applies the simulator's crawls of ``--ips`` IPs (1,000 by default), one crawl
of each IP per simulated hour for ``--hours`` hours, with the worker's periodic work after each hour
(``refresh_leaderboards``, ``roll_up_days``, ``prune_storage``, ``refresh_forecasts``), and this process's PSS is
fitted against the results applied after the first ``--warmup`` hours: the growth per result of a market as large as
a deployment's. Each hour's line also says where the memory is held (``bench.memory.allocators``): glibc's heaps and
what of them is in use, SQLite's own allocations, the interpreter's blocks.

Options: ``--hours N`` (100; in-process 4), ``--ips N`` (12; in-process 1,000), ``--speed N`` (240: simulated
seconds per second), ``--warmup N`` (simulated hours, 20; in-process 1), ``--every N`` (simulated minutes between
samples, 30); in-process ``--pages N`` (pages read of each search, 2), ``--threads N`` (4) and ``--crawlers N``
(child processes making the crawls, 1: at 1,000 IPs the simulator's crawls are the run's bottleneck, so on a
machine with a core to spare 2 shorten it; the worker's path is the same, its crawls taken in the plan's order).
Runs on
BENCH_REDIS_URL as the other benchmarks do, and a SQLite file in a temporary directory."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import ExitStack, closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lib.core.settings import Settings
from lib.operations.demo_clock import DemoClock

from .common import bench_settings, load_average
from .memory import Growth, Sample, allocators, growth, print_table, pss_kb, tree_pss_mb

USAGE = ("usage: python -m bench soak [--in-process] [--hours N] [--ips N] [--speed N] [--warmup N] "
         "[--every N] [--pages N] [--threads N] [--crawlers N]")
KINDS = ("scheduler", "crawler", "worker")


@dataclass(frozen=True)
class Options:
    """What a soak runs.

    Parameters:
        in_process: drive the result path in this process instead of running the process types.
        hours: simulated hours.
        ips: IPs crawled, each about once a simulated hour.
        speed: simulated seconds per real second (the process types' ``CLOCK_SPEED``).
        warmup: simulated hours left out of the fit.
        every: simulated minutes between samples.
        pages: in process, the pages read of each search (the demo's crawler reads 2: ``CRAWL_MAX_PAGES``).
        threads: in process, the worker's threads (the demo's ``WORKER_THREADS``).
        crawlers: in process, the child processes making the simulator's crawls.
    """

    in_process: bool = False
    hours: float = 100.0
    ips: int = 12
    speed: float = 240.0
    warmup: float = 20.0
    every: float = 30.0
    pages: int = 2
    threads: int = 4
    crawlers: int = 1


def parse(argv: list[str]) -> Options:
    values: dict[str, float] = {}
    in_process = False
    rest = list(argv)
    while rest:
        name = rest.pop(0)
        if name == "--in-process":
            in_process = True
        elif name in ("--hours", "--ips", "--speed", "--warmup", "--every", "--pages", "--threads",
                      "--crawlers") and rest:
            try:
                values[name[2:]] = float(rest.pop(0))
            except ValueError:
                raise SystemExit(USAGE) from None
            if values[name[2:]] < 0 or (name != "--warmup" and values[name[2:]] == 0):
                raise SystemExit(USAGE)
        else:
            raise SystemExit(USAGE)
    defaults = {"hours": 4.0, "ips": 1000, "warmup": 1.0} if in_process else {}
    merged = {**defaults, **values}
    return Options(in_process, merged.get("hours", 100.0), int(merged.get("ips", 12)), merged.get("speed", 240.0),
                   merged.get("warmup", 20.0), merged.get("every", 30.0), int(merged.get("pages", 2)),
                   int(merged.get("threads", 4)), int(merged.get("crawlers", 1)))


def keywords(count: int) -> list[str]:
    """The demo's sample IPs, then numbered variants of them: each keyword its own simulated market."""
    from lib.operations.demo import SAMPLE_IPS

    return [SAMPLE_IPS[i % len(SAMPLE_IPS)] + (f" {i // len(SAMPLE_IPS)}" if i >= len(SAMPLE_IPS) else "")
            for i in range(count)]


def free_port_pair() -> int:
    """A loopback port p with p + 1 free too: the worker's and the crawler's /metrics (METRICS_PORT)."""
    for _ in range(50):
        with closing(socket.socket()) as first:
            first.bind(("127.0.0.1", 0))
            port = first.getsockname()[1]
            with closing(socket.socket()) as second:
                try:
                    second.bind(("127.0.0.1", port + 1))
                except OSError:
                    continue
            return port
    raise SystemExit("bench soak: no two adjacent free loopback ports for METRICS_PORT")


@contextmanager
def market(tmp: Path, options: Options) -> Iterator[tuple[Settings, DemoClock, list[tuple[int, str]]]]:
    """Settings on the benchmark's Redis and a SQLite file in ``tmp``, the clock and the IPs loaded: (settings,
    clock, [(IP id, keyword)])."""
    from lib.core.clock import set_clock
    from lib.core.db import bind_database
    from lib.core.redis_client import state_redis
    from lib.market.schema import create_tables
    from lib.scheduling.catalogue import Catalogue
    from lib.scheduling.schedule import ScheduleStore

    with bench_settings(tmp) as settings, ExitStack() as cleanup:
        bind_database(settings.database_url_resolved)
        create_tables()
        clock = DemoClock(options.speed)
        set_clock(clock)
        cleanup.callback(set_clock, None)
        catalogue = Catalogue(ScheduleStore(state_redis(settings)), settings, clock)
        ips = [(catalogue.add(keyword).id, keyword) for keyword in keywords(options.ips)]
        yield settings, clock, ips


def applied_results() -> int:
    from lib.core.db import database
    from models import AppliedResult

    try:
        return AppliedResult.select().count()
    finally:
        database.close()


# -- the process types ---------------------------------------------------------------------------------------------
def soak_processes(options: Options, tick: Callable[[], None] = lambda: None) -> list[Growth]:
    """Run the three process types for ``options.hours`` simulated hours, sampling their trees' PSS."""
    from lib.core.redis_client import state_redis
    from lib.crawling.install import ensure_chromium
    from lib.messaging.broker import build_broker
    from lib.operations.demo import dead_letters, demo_env, drain, stop
    from lib.operations.supervisor import die_with
    from lib.scheduling.schedule import ScheduleStore
    from lib.standins.simulator import MarketSimulator

    chromium = ensure_chromium()
    samples: dict[str, list[Sample]] = {kind: [] for kind in (*KINDS, "chromium")}
    with tempfile.TemporaryDirectory(prefix="bench-soak-") as name, ExitStack() as cleanup:
        tmp = Path(name)
        settings, clock, _ = cleanup.enter_context(market(tmp, options))
        sim = MarketSimulator(clock=clock).start()
        cleanup.callback(sim.stop)
        env = {key: value for key, value in os.environ.items()
               if key not in ("REDIS_URL", "BROKER_URL", "DATABASE_URL", "CLOCK_SPEED", "CLOCK_ANCHOR")}
        clock.run()
        env.update(demo_env(tmp, sim.url, options.speed, clock.anchor, chromium),
                   DATABASE_URL=settings.database_url_resolved, METRICS_PORT=str(free_port_pair()))
        if settings.redis_url is not None:
            env.update(REDIS_URL=settings.redis_url, BROKER_URL=settings.broker_url_resolved)
        broker = build_broker(settings)
        cleanup.callback(broker.close)
        logs = tmp / "logs"
        logs.mkdir()
        procs: dict[str, subprocess.Popen] = {}
        started = clock.now()
        try:
            for kind in KINDS:
                with open(logs / f"{kind}.log", "w") as log:
                    procs[kind] = subprocess.Popen([sys.executable, "-m", "lib.cli", "run", kind], env=env,
                                                   stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                                   preexec_fn=die_with(os.getpid(), signal.SIGTERM))
            print(f"  {options.ips} IPs, {options.hours:g} simulated hours at {options.speed:g}x "
                  f"(≈ {options.hours * 3600 / options.speed / 60:.1f} min); a sample every {options.every:g} "
                  f"simulated minutes", flush=True)
            end = started + options.hours * 3600
            next_sample = started
            told = -1
            while clock.now() < end:
                dead = [kind for kind, proc in procs.items() if proc.poll() is not None]
                if dead:
                    raise SystemExit(f"bench soak: {', '.join(dead)} exited; see {logs}")
                if clock.now() >= next_sample:
                    hours = (clock.now() - started) / 3600
                    results = applied_results()
                    for kind, proc in procs.items():
                        python, browser = tree_pss_mb(proc.pid)
                        samples[kind].append(Sample(hours, results, python))
                        if kind == "crawler":
                            samples["chromium"].append(Sample(hours, results, browser))
                    next_sample += options.every * 60
                    if int(hours // 10) != told:
                        told = int(hours // 10)
                        print(f"    +{hours:5.1f} h: {results:6d} results applied; PSS "
                              + ", ".join(f"{k} {s[-1].mb:.0f} MB" for k, s in samples.items()), flush=True)
                    tick()
                time.sleep(min(1.0, max(0.05, (min(next_sample, end) - clock.now()) / options.speed)))
        finally:
            for kind in ("scheduler",):
                if kind in procs:
                    stop(procs[kind])
            schedule = ScheduleStore(state_redis(settings))
            schedule.pause()
            drain(broker, settings, ("crawl", "pipeline"), timeout=90)
            for kind in ("crawler", "worker"):
                if kind in procs:
                    stop(procs[kind])
        errors = sum(line.count(" ERROR ") for kind in KINDS for line in (logs / f"{kind}.log").open())
        print(f"  {applied_results()} results applied; dead letters: {dead_letters(broker)}; ERROR lines: {errors}")
    return [growth(kind, kind_samples, options.warmup) for kind, kind_samples in samples.items()]


# -- the result path in this process -------------------------------------------------------------------------------
_crawler: dict = {}


def _start_crawler(pages: int, base_url: str) -> None:
    """In the child that makes the crawls: the simulator (its caches are not the worker's) and the settings the
    crawls are read with."""
    from lib.core.settings import load_settings
    from lib.standins.simulator import MarketSimulator

    _crawler["sim"] = MarketSimulator()
    _crawler["settings"] = load_settings({"SCHEDULER_PAGES_ON_SALE": str(pages), "SCHEDULER_PAGES_SOLD": str(pages),
                                          "MERCARI_BASE_URL": base_url, "CRAWL_RATE_LIMIT": "0"})


def _crawl(job: tuple[int, str, str, float]) -> dict:
    from lib.operations.backfill import past_crawl

    ip_id, keyword, task_id, at = job
    return past_crawl(_crawler["sim"], keyword, ip_id, task_id, at, _crawler["settings"])


def soak_in_process(options: Options) -> list[Growth]:
    """Send a crawl of each IP every simulated hour as ``process_result`` messages to a Dramatiq worker of
    ``options.threads`` threads running in this process, on the benchmark's broker, and the worker's periodic
    messages after each hour's crawls, sampling this process's PSS after every tenth of the IPs. The crawls are the
    simulator's answers (``lib.operations.backfill``), made in a child process (its caches are not the worker's),
    ``options.pages`` pages of each search as the demo's crawler reads them. At most two messages a thread wait in
    the queue, as a worker keeping up sees it."""
    import multiprocessing

    import dramatiq

    from lib.app import configure_logging
    from lib.core.clock import set_clock

    samples: list[Sample] = []
    with tempfile.TemporaryDirectory(prefix="bench-soak-") as name:
        with market(Path(name), options) as (settings, clock, ips):
            # the actors' start-up (lib.app.setup) runs on the benchmark's settings, then the clock is ours again
            from actors.maintenance import prune_storage, refresh_forecasts, refresh_leaderboards, roll_up_days
            from actors.pipeline import process_result

            # the worker's periodic work (periodiq sends it hourly or more often): the windows' rows and boards, the
            # daily rows, the pruning past RETENTION_DETAIL, the forecasts' refit
            periodic = (refresh_leaderboards, roll_up_days, prune_storage, refresh_forecasts)

            set_clock(clock)
            configure_logging("WARNING")  # as the demo's process types log (demo_env): no line per result
            start = clock.now()
            plan = [(ip_id, keyword, f"soak-{ip_id}-{hour}", start + hour * 3600 + 3600 * index / len(ips))
                    for hour in range(int(options.hours)) for index, (ip_id, keyword) in enumerate(ips)]
            step = max(1, len(ips) // 10)
            print(f"  {options.ips} IPs, a crawl of each every simulated hour for {int(options.hours)} hours: "
                  f"{len(plan)} results, applied by a worker of {options.threads} thread(s)", flush=True)
            worker = dramatiq.Worker(process_result.broker,
                                     queues={actor.queue_name for actor in (process_result, *periodic)},
                                     worker_threads=options.threads, worker_timeout=100)
            worker.start()
            context = multiprocessing.get_context("spawn")
            try:
                with context.Pool(options.crawlers, _start_crawler, (options.pages, settings.mercari_base_url)) as pool:
                    for sent, message in enumerate(_ahead(pool, plan, 2 * options.threads + 2), start=1):
                        clock.set(message["crawled_at"])
                        process_result.send(**message)
                        applied = _applied_at_least(sent - 2 * options.threads)
                        if sent % step == 0:
                            samples.append(Sample((clock.now() - start) / 3600, applied,
                                                  (pss_kb(os.getpid()) or 0) / 1024))
                        if sent % len(ips) == 0:
                            for actor in periodic:
                                actor.send()
                            print(f"    +{sent // len(ips):3d} h: {applied:6d} results applied; PSS "
                                  f"{(pss_kb(os.getpid()) or 0) / 1024:.0f} MB; {allocators().line()}", flush=True)
                    print(f"  {_applied_at_least(len(plan))} results applied", flush=True)
            finally:
                worker.stop()
    return [growth("worker", samples, options.warmup)]


def _ahead(pool: Any, jobs: list[tuple[int, str, str, float]], most: int) -> Iterator[dict]:
    """The crawls of ``jobs`` in order, at most ``most`` made ahead of the one taken: ``Pool.imap`` would keep every
    crawl the child has made and the worker has not yet taken in this process, and that backlog (half a megabyte a
    crawl) would count as the worker's growth."""
    pending: deque[Any] = deque()
    for job in jobs:
        pending.append(pool.apply_async(_crawl, (job,)))
        if len(pending) > most:
            yield pending.popleft().get(timeout=600)
    while pending:
        yield pending.popleft().get(timeout=600)


def _applied_at_least(count: int, timeout: float = 600.0) -> int:
    """Wait until ``count`` results are applied (at most ``timeout`` seconds); how many are."""
    deadline = time.monotonic() + timeout
    while (applied := applied_results()) < count:
        if time.monotonic() > deadline:
            raise SystemExit(f"bench soak: {applied} results applied after {timeout:.0f} s, {count} expected")
        time.sleep(0.05)
    return applied


def _stop(signum, frame) -> None:
    raise KeyboardInterrupt  # the clean-ups of Ctrl-C: process types stopped, the crawl child and temporary files gone


def main(argv: list[str]) -> int:
    options = parse(argv)
    signal.signal(signal.SIGTERM, _stop)
    try:
        if options.in_process:
            print(f"soak, the result path in one process ({load_average()})")
            rows = soak_in_process(options)
        else:
            print(f"soak, the process types against the simulator ({load_average()})")
            rows = soak_processes(options)
    except KeyboardInterrupt:
        print("  interrupted: no slope", flush=True)
        return 130
    print(f"  after a warm-up of {options.warmup:g} simulated hours (load at the end: {load_average()}):")
    print_table(rows)
    return 0
