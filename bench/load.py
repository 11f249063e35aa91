"""``python -m bench load``: the whole system under load, and how its cost grows with the number of IPs.

For each scale (``--ips 100,1000``) it starts what the demo starts, fresh: the embedded Redis and SQLite
under a temporary DATA_DIR, the market simulator on the same accelerated clock, and the Procfile's
scheduler, crawler and worker as separate processes (``python -m lib.cli run TYPE``). It loads that many
IPs, lets the real closed loop crawl each of them ``--cycles`` times, and stops everything. The schedule's
interval is short in simulated time, so the system runs saturated: the numbers are its capacity.

Reported per scale:

* crawls/min (``crawl_ip`` completed) and results/s (``process_result`` applied), over the window from
  the first crawl's start to the moment every IP had its cycles applied;
* latency p50/p99, in real seconds: *end to end* is crawl start → result applied (the ledger
  ``applied_results``: ``crawled_at`` and ``applied_at`` in clock time, divided by the clock speed);
  *pipeline* is result sent → applied, i.e. that minus the crawl's own duration (the crawler's event-log
  line of the task);
* queue depth over time: the crawl and pipeline queues (waiting + taken by a worker) sampled every second;
* peak memory per process type, summed over each process tree (``crawler`` includes Chromium): PSS
  (shared pages split among the processes sharing them) every 5 s and RSS (shared pages counted in every
  process) every second; Redis (with its AOF-rewrite child) and the bench process (which serves the
  simulator) on their own rows;
* CPU seconds per crawl per process type (utime + stime of the tree, reaped children included, minus what
  it had used once booted and idle);
* cost per IP: Redis bytes per IP (``INFO memory``'s ``used_memory`` delta, and the state keys' own
  ``MEMORY USAGE`` summed by kind, item states apart), database bytes per IP (each table's pages: SQLite's
  ``dbstat``, MySQL/MariaDB's ``information_schema.TABLES`` after ``ANALYZE TABLE``) with rows per crawl and
  bytes per row of each table, and pipeline latency; each as a ratio to the first scale (flat is the goal);
* with ``--cycles`` 2 or more, database bytes (and rows) per crawl per table in steady state: what the crawls
  applied after every IP had its first added, divided by their count, the first crawls (every listing new)
  reported apart.

What grows with what: crawls, CPU, Redis bytes and database bytes grow with the IPs × their crawls (the cost *per
IP* is what should stay flat); within a crawl, the crawler's work and the item states grow with the pages read,
and the database bytes of a steady-state crawl with what changed in the IP's market since its previous crawl (new
listings, sales, price cuts: the facts are stored as changes), not with the listings seen.

``--production`` runs the same on the services that ``BROKER_URL``, ``REDIS_URL`` and ``DATABASE_URL`` name
(RabbitMQ, a Redis server, MySQL/MariaDB: the production profile) instead of the embedded Redis and SQLite.
They must be empty when it starts (it refuses otherwise, as the demo does); it empties them again after each
scale (Redis database flushed, the application's queues purged, the tables it created dropped).

Ratios, per the house rule, are against floors measured in the same run: the cost per IP-crawl at the
smallest scale (the cost per IP should stay flat as IPs grow), and a bare navigate-and-read of the same
pages in one Chromium tab (what a crawl costs with no system around it).

The simulator's keywords are chosen among its quieter markets (at most 40 new listings an hour, pages
still full): its cost of generating a market is the stand-in's, not the system's, and it should not
decide the result.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from .common import report

PROCESS_TYPES = ("scheduler", "crawler", "worker")
ROWS = (*PROCESS_TYPES, "redis", "bench+simulator")
CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024
SAMPLE_EVERY = 1.0
#: Every how many samples PSS is read too (it costs the kernel a page-table walk per process).
PSS_EVERY = 5


# -- IPs ----------------------------------------------------------------------

def keywords(count: int, max_rate: float = 40.0) -> list[str]:
    """``count`` distinct keywords whose simulated market is quiet (cheap for the simulator to generate)."""
    from lib.standins.simulator import market

    out, n = [], 0
    while len(out) < count:
        keyword = f"負荷IP{n:05d}"
        if market.listings_per_hour(keyword) <= max_rate:
            out.append(keyword)
        n += 1
    return out


# -- processes ----------------------------------------------------------------

@dataclass
class Proc:
    ppid: int
    cpu: float       # own utime + stime, seconds
    children: float  # cutime + cstime: children already reaped
    rss_mb: float
    start: int       # start time in clock ticks since boot (tells a reused pid apart)


def proc_table() -> dict[int, Proc]:
    """Every process on the machine, from /proc/PID/stat."""
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError, IndexError):
            continue
        table[int(entry)] = Proc(ppid=int(fields[1]), cpu=(int(fields[11]) + int(fields[12])) / CLK_TCK,
                                 children=(int(fields[13]) + int(fields[14])) / CLK_TCK,
                                 rss_mb=int(fields[21]) * PAGE_KB / 1024, start=int(fields[19]))
    return table


def tree(table: dict[int, Proc], root: int | None) -> list[int]:
    """``root`` and all its descendants."""
    if root is None or root not in table:
        return []
    kids: dict[int, list[int]] = {}
    for pid, proc in table.items():
        kids.setdefault(proc.ppid, []).append(pid)
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(kids.get(pid, ()))
    return out


def pss_mb(pid: int) -> float:
    """Proportional set size: the process's own pages plus its share of pages it shares (0 if unreadable)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("Pss:")) / 1024
    except (OSError, StopIteration, ValueError):
        return 0.0


@dataclass
class Usage:
    rss_mb: float = 0.0
    cpu_s: float = 0.0
    pss_mb: float | None = None  # only on some samples: reading it walks the page tables


def usage(table: dict[int, Proc], pids: list[int], own_only: bool = False, pss: bool = False) -> Usage:
    """Memory and CPU time of a set of processes (CPU of reaped children included unless ``own_only``)."""
    found = [p for p in pids if p in table]
    return Usage(rss_mb=sum(table[p].rss_mb for p in found),
                 cpu_s=sum(table[p].cpu + (0 if own_only else table[p].children) for p in found),
                 pss_mb=sum(pss_mb(p) for p in found) if pss else None)


# -- what a scale leaves in Redis and in the database -----------------------------

def key_kind(key: str) -> str:
    """The kind of a state key, for the per-IP table: item states apart, the rest by their first two parts."""
    from lib.core import keys

    if key.startswith(keys.item_state(0, "x").split("{")[0]):
        return "item states"
    return ":".join(key.replace("{", "").replace("}", "").split(":")[:3])


def redis_key_sizes(client) -> dict[str, tuple[int, int]]:
    """Keys and bytes (``MEMORY USAGE``, nested values all counted) of every key of the state database, by kind."""
    out: dict[str, list[int]] = {}
    batch: list[str] = []

    def flush() -> None:
        pipe = client.pipeline(transaction=False)
        for key in batch:
            pipe.memory_usage(key, samples=0)
        for key, size in zip(batch, pipe.execute(), strict=True):
            entry = out.setdefault(key_kind(key), [0, 0])
            entry[0] += 1
            entry[1] += size or 0  # None: expired since the scan
        batch.clear()

    for key in client.scan_iter(count=1000):
        batch.append(key.decode() if isinstance(key, bytes) else key)
        if len(batch) >= 1000:
            flush()
    if batch:
        flush()
    return {k: (v[0], v[1]) for k, v in out.items()}


def table_sizes() -> dict[str, tuple[int, int]]:
    """Rows and bytes (data and indexes, in pages) of each application table."""
    from lib.core.db import database, is_mysql
    from models import ALL_MODELS

    names = [m._meta.table_name for m in ALL_MODELS]
    try:
        rows = {m._meta.table_name: m.select().count() for m in ALL_MODELS}
        if is_mysql():
            for t in names:  # InnoDB's sizes are statistics: bring them up to date first
                database.execute_sql(f"ANALYZE TABLE {t}").fetchall()
            cursor = database.execute_sql(
                "SELECT TABLE_NAME, DATA_LENGTH + INDEX_LENGTH FROM information_schema.TABLES "
                "WHERE TABLE_SCHEMA = DATABASE()")
        else:  # every page of each table and of its indexes, the write-ahead log's newer pages included
            cursor = database.execute_sql(
                "SELECT m.tbl_name, SUM(s.pgsize) FROM dbstat s JOIN sqlite_master m ON m.name = s.name "
                "GROUP BY m.tbl_name")
        size = {str(t): int(b or 0) for t, b in cursor.fetchall()}
        return {t: (rows[t], size.get(t, 0)) for t in names}
    finally:
        database.close()


def minus(after: dict[str, tuple[int, int]], before: dict[str, tuple[int, int]]) -> dict[str, tuple[int, int]]:
    zero = (0, 0)
    return {k: (v[0] - before.get(k, zero)[0], v[1] - before.get(k, zero)[1]) for k, v in after.items()}


# -- the production profile --------------------------------------------------------

def production_services() -> dict[str, str]:
    """BROKER_URL, REDIS_URL and DATABASE_URL from the environment (all three needed for ``--production``)."""
    from lib.operations.demo import SERVICE_VARIABLES, configured_services

    services = configured_services(os.environ)
    missing = [name for name in SERVICE_VARIABLES if name not in services]
    if missing:
        raise SystemExit(f"python -m bench load --production: set {', '.join(missing)} (the production profile: "
                         "RabbitMQ, a Redis server, MySQL/MariaDB)")
    return services


def purge_queues(broker) -> None:
    """Empty the application's queues with their delay and dead-letter queues (a scale starts on a fresh broker)."""
    from dramatiq.brokers.rabbitmq import RabbitmqBroker

    from lib.messaging.purge import purge_rabbitmq_queues

    if isinstance(broker, RabbitmqBroker):  # a Redis broker lives in the Redis database flushed with the state
        purge_rabbitmq_queues(broker.parameters)


def empty_services(settings, broker) -> None:
    """What a production-profile scale wrote, gone: state Redis flushed, queues purged, tables dropped."""
    import redis

    from lib.core.db import database
    from lib.core.redis_client import state_redis
    from models import ALL_MODELS

    state_redis(settings).flushdb()
    if settings.broker_url and settings.broker_url.startswith(("redis://", "rediss://", "unix://")):
        redis.Redis.from_url(settings.broker_url).flushdb()
    purge_queues(broker)
    try:
        database.drop_tables(ALL_MODELS, safe=True)
    finally:
        database.close()


# -- one scale ----------------------------------------------------------------

@dataclass
class Sample:
    t: float                 # real seconds since the IPs were loaded
    queues: dict[str, int]   # crawl, pipeline: waiting + running
    usage: dict[str, Usage]
    done: int                # IPs with all their cycles applied


@dataclass
class Outcome:
    ips: int
    cycles: int
    complete: bool = False
    reason: str = ""
    done_ips: int = 0
    crawls: int = 0
    results: int = 0
    window: float = 0.0
    end_to_end: list[float] = field(default_factory=list)
    pipeline: list[float] = field(default_factory=list)
    crawl_seconds: list[float] = field(default_factory=list)
    samples: list[Sample] = field(default_factory=list)
    cpu: dict[str, float] = field(default_factory=dict)
    peak_mb: dict[str, float] = field(default_factory=dict)
    peak_pss_mb: dict[str, float] = field(default_factory=dict)
    redis_kb: float = 0.0
    sqlite_kb: float = 0.0
    #: state keys by kind → (keys, bytes) added by the scale (MEMORY USAGE of each key)
    redis_keys: dict[str, tuple[int, int]] = field(default_factory=dict)
    #: table → (rows, bytes) added by the scale
    tables: dict[str, tuple[int, int]] = field(default_factory=dict)
    #: table → (rows, bytes) added by every IP's first crawl (and the few later ones applied by then): ``first_results``
    first_tables: dict[str, tuple[int, int]] = field(default_factory=dict)
    first_results: int = 0
    #: table → (rows, bytes) added by the crawls applied after every IP had its first (the steady state)
    steady_tables: dict[str, tuple[int, int]] = field(default_factory=dict)
    steady_results: int = 0
    dead_letters: int = 0

    @property
    def db_kb(self) -> float:
        return sum(b for _, b in self.tables.values()) / 1024

    @property
    def redis_keys_kb(self) -> float:
        return sum(b for _, b in self.redis_keys.values()) / 1024

    def cpu_per_crawl(self, kinds=PROCESS_TYPES) -> float:
        return sum(self.cpu.get(k, 0) for k in kinds) / self.results if self.results else float("nan")

    @property
    def seconds_per_crawl(self) -> float:
        return self.window / self.results if self.results else float("inf")


def load_env(data_dir: Path, sim_url: str, speed: float, anchor: float, chromium: str, args) -> dict[str, str]:
    """The demo's settings, with a short interval (saturated closed loop), fewer pages, free metrics ports."""
    from lib.operations.demo import demo_env

    interval = f"{args.interval * speed:g}s"  # real seconds → clock seconds
    env = demo_env(data_dir, sim_url, speed, anchor, chromium)
    env.update({
        "SCHEDULER_BASE_INTERVAL": interval, "SCHEDULER_MIN_INTERVAL": interval, "SCHEDULER_MAX_INTERVAL": interval,
        # production's backpressure and batch, not the demo's
        "SCHEDULER_BACKPRESSURE_THRESHOLD": "25", "SCHEDULER_BATCH_SIZE": "50",
        # nothing counts as stuck within a run (clock time: a day at 60x is 24 real minutes)
        "JANITOR_TIMEOUT": "30d", "JANITOR_INTERVAL": "1d",
        "SCHEDULER_PAGES_ON_SALE": str(args.pages[0]), "SCHEDULER_PAGES_SOLD": str(args.pages[1]),
        "CRAWLER_THREADS": str(args.crawler_threads), "CRAWL_MAX_PAGES": str(args.crawler_threads),
        "METRICS_PORT": str(free_port_pair()),
    })
    return env


def free_port_pair() -> int:
    """A port p with p and p + 1 free on loopback (the worker's and the crawler's /metrics)."""
    import socket

    for _ in range(50):
        with socket.socket() as a:
            a.bind(("127.0.0.1", 0))
            port = a.getsockname()[1]
            with socket.socket() as b:
                try:
                    b.bind(("127.0.0.1", port + 1))
                except OSError:
                    continue
            return port
    raise RuntimeError("no two consecutive free ports on 127.0.0.1")


class Run:
    """One scale: everything started fresh in ``data_dir``, stopped in ``close()`` whatever happened."""

    def __init__(self, ips: int, cycles: int, data_dir: Path, chromium: str, args) -> None:
        self.ips, self.cycles, self.data_dir, self.chromium, self.args = ips, cycles, data_dir, chromium, args
        self.procs: dict[str, subprocess.Popen] = {}
        self.known: dict[int, int] = {}  # every pid seen in our trees → its start time (to kill leftovers)
        self.sim = None
        self.broker = None
        self.redis_server = None
        self.logs = data_dir / "logs"

    # -- start --------------------------------------------------------------
    def start(self) -> None:
        from lib.core.clock import Clock, set_clock
        from lib.core.db import bind_database
        from lib.core.embedded_redis import EmbeddedRedis
        from lib.core.settings import load_settings, use_settings
        from lib.market.schema import create_tables
        from lib.messaging.broker import build_broker
        from lib.standins.simulator import MarketSimulator

        speed = self.args.speed
        self.anchor = time.time()
        self.clock = Clock(speed, self.anchor)
        set_clock(self.clock)
        self.sim = MarketSimulator(at=self.clock.now(), speed=speed)  # the same time as the process types
        # a browser that goes away mid-request (a draining restart, the shutdown) is not news here
        self.sim.server.handle_error = lambda request, address: None
        self.sim.start()
        self.env = load_env(self.data_dir, self.sim.url, speed, self.anchor, self.chromium, self.args)
        if self.args.production:
            self.env.update(production_services())
        self.settings = load_settings(self.env)
        use_settings(self.settings)
        if not self.args.production:
            self.redis_server = EmbeddedRedis(self.data_dir)
            self.redis_server.ensure_running()
        bind_database(self.settings.database_url_resolved)
        create_tables()
        self.broker = build_broker(self.settings)
        self.logs.mkdir(parents=True, exist_ok=True)
        from lib.core.settings import SPECS

        # the process types get exactly the bench's settings, none of the caller's (REDIS_URL, DATABASE_URL…)
        inherited = {k: v for k, v in os.environ.items() if k not in {spec.name for spec in SPECS}}
        for kind in PROCESS_TYPES:
            env = {**inherited, **self.env}
            if kind == "crawler":
                env["LOG_LEVEL"] = "INFO"  # its event lines carry each crawl's duration (pipeline latency)
            elif kind == "scheduler":
                # its runner's restarts of periodiq and periodiq's sends (a few lines a minute): a scheduler that
                # dies mid-scale says what it was doing
                env["LOG_LEVEL"] = "INFO"
            with open(self.logs / f"{kind}.log", "w") as log:
                self.procs[kind] = subprocess.Popen([sys.executable, "-m", "lib.cli", "run", kind], env=env,
                                                    stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def redis_pid(self) -> int | None:
        if self.redis_server is None:  # a configured Redis: its own pid, if it runs on this machine
            if getattr(self, "_redis_pid", None) is None:
                from lib.core.redis_client import state_redis

                try:
                    pid = int(state_redis(self.settings).info("server")["process_id"])
                    self._redis_pid = pid if os.path.exists(f"/proc/{pid}") else 0
                except Exception:
                    self._redis_pid = 0
            return self._redis_pid or None
        try:
            return int(self.redis_server.pidfile.read_text().strip())
        except (OSError, ValueError, AttributeError):
            return None

    def measure(self, pss: bool = False) -> tuple[dict[int, Proc], dict[str, Usage]]:
        table = proc_table()
        out = {}
        for kind, proc in self.procs.items():
            pids = tree(table, proc.pid)
            for pid in pids:
                self.known.setdefault(pid, table[pid].start)
            out[kind] = usage(table, pids, pss=pss)
        out["redis"] = usage(table, tree(table, self.redis_pid()), pss=pss)
        out["bench+simulator"] = usage(table, [os.getpid()], own_only=True, pss=pss)
        return table, out

    def wait_idle(self, timeout: float = 60.0) -> dict[str, Usage]:
        """Until every process type has booted: CPU use of all of them flat for two seconds."""
        deadline = time.monotonic() + timeout
        _, last = self.measure()
        calm = 0
        while time.monotonic() < deadline:
            time.sleep(0.5)
            self.check_alive()
            _, now = self.measure()
            busy = sum(now[k].cpu_s - last[k].cpu_s for k in PROCESS_TYPES)
            booted = all(now[k].rss_mb > 0 for k in PROCESS_TYPES)
            calm = calm + 1 if booted and busy < 0.05 else 0
            last = now
            if calm >= 4:
                break
        return last

    def check_alive(self) -> None:
        dead = [f"{k} {exit_status(p.returncode)}" for k, p in self.procs.items() if p.poll() is not None]
        if dead:
            raise ProcessDied(f"{', '.join(dead)}; see {self.logs}")

    # -- run ------------------------------------------------------------------
    def run(self) -> Outcome:
        from lib.core.redis_client import state_redis
        from lib.messaging.queue_stats import queue_counts
        from lib.scheduling.catalogue import Catalogue
        from lib.scheduling.schedule import ScheduleStore
        from lib.scheduling.tick import tick_message

        out = Outcome(self.ips, self.cycles)
        baseline = self.wait_idle()
        client = state_redis(self.settings)
        redis_before, sqlite_before = self.redis_memory_kb(client), self.sqlite_kb()
        keys_before, tables_before = redis_key_sizes(client), table_sizes()
        catalogue = Catalogue(ScheduleStore(client), self.settings, self.clock)
        for keyword in keywords(self.ips):
            catalogue.add(keyword)
        self.broker.enqueue(tick_message())  # periodiq's next tick may be a minute away
        loaded = time.monotonic()
        deadline = loaded + self.args.timeout_per_ip * self.ips * self.cycles + 60
        last = None
        first: dict[str, tuple[int, int]] | None = None  # the tables once every IP had a crawl
        try:
            while True:
                t0 = time.monotonic()
                self.check_alive()
                _, now = self.measure(pss=len(out.samples) % PSS_EVERY == 0)
                queues = {q: sum(queue_counts(self.broker, q).get(k, 0) for k in ("ready", "running"))
                          for q in ("crawl", "pipeline")}
                done = self.done_ips()
                if first is None and self.cycles > 1 and self.done_ips(1) >= self.ips:
                    # every first crawl (each IP's listings all new) is in: what comes after is the steady state
                    first = table_sizes()
                last = Sample(t0 - loaded, queues, now, done)
                out.samples.append(last)
                if done >= self.ips:
                    out.complete = True
                    break
                if t0 > deadline:
                    out.reason = f"timed out after {t0 - loaded:.0f}s"
                    break
                if self.args.progress and len(out.samples) % 10 == 0:
                    print(f"    {self.ips} IPs: +{t0 - loaded:4.0f}s, {done} IPs done, queues {queues}", flush=True)
                time.sleep(max(0.0, SAMPLE_EVERY - (time.monotonic() - t0)))
        except ProcessDied as e:  # what was measured until then is still reported
            out.reason = str(e)
        except KeyboardInterrupt:
            out.reason = "interrupted"
            raise
        finally:
            if out.complete:
                self.stop_crawling(client)
                self.settle(client)
            out.done_ips = last.done if last else 0
            if last is not None:
                out.cpu = {k: last.usage[k].cpu_s - baseline[k].cpu_s for k in ROWS}
                out.peak_mb = {k: max(s.usage[k].rss_mb for s in out.samples) for k in ROWS}
                out.peak_pss_mb = {k: max(s.usage[k].pss_mb or 0 for s in out.samples) for k in ROWS}
            out.redis_kb = self.redis_memory_kb(client) - redis_before
            out.sqlite_kb = self.sqlite_kb() - sqlite_before
            out.redis_keys = minus(redis_key_sizes(client), keys_before)
            end = table_sizes()
            out.tables = minus(end, tables_before)
            if first is not None:
                # results counted by the ledger's rows read with the sizes (a result is one ledger row)
                out.first_tables, out.steady_tables = minus(first, tables_before), minus(end, first)
                out.first_results = out.first_tables.get("applied_results", (0, 0))[0]
                out.steady_results = out.steady_tables.get("applied_results", (0, 0))[0]
        return out

    def stop_crawling(self, client) -> None:
        """No crawl past the scale's cycles: the schedule paused (no tick sends one) and the crawls queued but not
        taken dropped. The process types run until ``close()``, and the sizes are read after this; the IPs
        crawled first were due again long before the last one was done, so without it a small scale measured
        1.5 crawls per IP and a large one 1.04, and its bytes per IP looked smaller than they are."""
        from lib.messaging.queues import CRAWL
        from lib.scheduling.schedule import ScheduleStore

        ScheduleStore(client).pause()
        self.broker.flush(CRAWL)

    def settle(self, client, timeout: float = 20.0) -> None:
        """Until the last results' Redis writes are in: a result is in the ledger (the database transaction)
        before its item states are written, so the pipeline queue is empty and the state keys stop changing."""
        from lib.messaging.queue_stats import queue_counts

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            counts = queue_counts(self.broker, "pipeline")
            if counts.get("ready", 0) + counts.get("running", 0) == 0:
                break
            time.sleep(0.2)
        keys = -1
        while time.monotonic() < deadline:
            now = client.dbsize()
            if now == keys:
                break
            keys = now
            time.sleep(1.0)

    def done_ips(self, cycles: int | None = None) -> int:
        """IPs with ``cycles`` (default: the scale's) results applied."""
        from lib.core.db import database

        try:
            mark = database.param  # ? on SQLite, %s on MySQL: the placeholder, not a value
            sql = f"SELECT COUNT(*) FROM (SELECT ip_id FROM applied_results GROUP BY ip_id HAVING COUNT(*) >= {mark}) AS d"  # noqa: E501, S608
            row = database.execute_sql(sql, (cycles or self.cycles,)).fetchone()
            return int(row[0])
        finally:
            database.close()

    def applied(self) -> int:
        from lib.core.db import database
        from models import AppliedResult

        try:
            return AppliedResult.select().count()
        finally:
            database.close()

    def sqlite_kb(self) -> float:
        """The database with its write-ahead log."""
        return sum(p.stat().st_size for p in self.data_dir.glob("animetop.sqlite3*")) / 1024

    @staticmethod
    def redis_memory_kb(client) -> float:
        try:
            return int(client.info("memory")["used_memory"]) / 1024
        except Exception:
            return 0.0

    def dead_letters(self) -> int:
        from lib.messaging.queue_stats import counting_broker, queue_counts
        from lib.messaging.queues import ALL_QUEUES

        # a broker of its own: RabbitMQ drops the sampling broker's connection once it has gone unused past the
        # heartbeat timeout, as it does while the table sizes are read at the end of a large scale
        broker = counting_broker(self.settings)
        try:
            return sum(queue_counts(broker, q)["dead"] for q in ALL_QUEUES)
        finally:
            broker.close()

    def collect(self, out: Outcome, window_end: float | None = None) -> None:
        """Ledger and crawler log, read after the processes stopped. The window runs from the first crawl's
        start to ``window_end`` (clock time; default: the last result applied)."""
        from datetime import datetime

        from lib.core.db import database
        from models import AppliedResult

        speed = self.args.speed
        # task id → (crawl seconds, Unix time it finished); Dramatiq may print an event line twice
        crawls: dict[str, tuple[float, float]] = {}
        pattern = re.compile(r"^\[?(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+)\]? .*actor=crawl_ip .*?task_id=(\S+) "
                             r".*?outcome=ok duration_ms=(\d+)")
        log = self.logs / "crawler.log"
        for line in (log.read_text(errors="replace") if log.exists() else "").splitlines():
            match = pattern.search(line)
            if match:
                finished = datetime.strptime(match.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()
                crawls[match.group(2)] = (int(match.group(3)) / 1000, finished)
        try:
            rows = list(AppliedResult.select(AppliedResult.task_id, AppliedResult.crawled_at,
                                             AppliedResult.applied_at).tuples())
        finally:
            database.close()
        if not rows:
            return
        start = min(r[1] for r in rows)
        end = window_end if window_end is not None else max(r[2] for r in rows)
        inside = [r for r in rows if r[2] <= end]
        out.window = (end - start) / speed
        out.results = len(inside)
        real = lambda t: self.anchor + (t - self.anchor) / speed  # noqa: E731  clock time → Unix time
        # log times have millisecond resolution; a crawl whose result was applied in the window counts whatever its
        # line's time: the crawler logs it after sending the result, and the worker may apply it before that
        applied = {task for task, _, _ in inside}
        out.crawls = sum(1 for task, (_, t) in crawls.items()
                         if task in applied or real(start) - 0.001 <= t <= real(end) + 0.001)
        for task, crawled, applied in inside:
            total = (applied - crawled) / speed
            out.end_to_end.append(total)
            if task in crawls:
                out.crawl_seconds.append(crawls[task][0])
                out.pipeline.append(max(0.0, total - crawls[task][0]))

    def done_at(self) -> float | None:
        """Clock time when the last IP got its ``cycles``-th result applied."""
        from lib.core.db import database

        try:
            mark = database.param  # ? on SQLite, %s on MySQL: the placeholder, not a value
            nth = f"SELECT b.applied_at FROM applied_results b WHERE b.ip_id = a.ip_id ORDER BY b.applied_at LIMIT 1 OFFSET {mark}"  # noqa: E501, S608
            sql = f"SELECT MAX(t) FROM (SELECT a.ip_id, ({nth}) AS t FROM applied_results a GROUP BY a.ip_id) AS d"  # noqa: S608
            row = database.execute_sql(sql, (self.cycles - 1,)).fetchone()
            return row[0]
        finally:
            database.close()

    # -- stop -----------------------------------------------------------------
    def stop_processes(self) -> None:
        """One SIGTERM to each supervisor (it forwards it once; in-flight work finishes), then kill what is left."""
        if self.procs:
            self.measure()  # remember the newest pids of each tree
        for kind in PROCESS_TYPES:  # the scheduler's first: it sends no new crawls while the others wind down
            proc = self.procs.get(kind)
            if proc is not None and proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        grace = self.settings.worker_shutdown_timeout + 20 if hasattr(self, "settings") else 30
        deadline = time.monotonic() + grace
        for proc in self.procs.values():
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        table = proc_table()
        for pid, started in self.known.items():
            if pid in table and table[pid].start == started and pid != os.getpid():
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

    def close(self) -> None:
        """Stop everything this scale started; Ctrl-C and SIGTERM wait until it is done."""
        handlers = {sig: signal.signal(sig, signal.SIG_IGN) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            self.stop_processes()
        finally:
            try:
                if self.broker is not None:
                    self.broker.close()
                if self.redis_server is not None:
                    pid = self.redis_pid()
                    self.redis_server.stop()
                    table = proc_table()
                    if pid in table and table[pid].ppid == 1:  # still there: it did not stop
                        os.kill(pid, signal.SIGKILL)
                if self.sim is not None:
                    self.sim.stop()
            finally:
                for sig, handler in handlers.items():
                    signal.signal(sig, handler)


class ProcessDied(RuntimeError):
    pass


def exit_status(code: int) -> str:
    """How a process ended, from ``Popen.returncode``: a signal (negative) by its name."""
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exited with code {code}"


def run_scale(ips: int, cycles: int, root: Path, chromium: str, args) -> Outcome:
    data_dir = root / f"{ips}"
    run = Run(ips, cycles, data_dir, chromium, args)
    out, window_end = Outcome(ips, cycles), None
    try:
        try:
            run.start()
            out = run.run()
            window_end = run.done_at() if out.complete else None
            out.dead_letters = run.dead_letters()
        except ProcessDied as e:
            out.reason = str(e)
        finally:
            run.close()
        if run.broker is not None:  # the scale's database was bound
            run.collect(out, window_end)
    finally:  # interrupted too: the next run refuses services that hold data
        if args.production and run.broker is not None:
            empty_services(run.settings, run.broker)
    if args.keep or not out.complete:  # a failed scale keeps its logs: the reason is in them
        args.kept = True
        print(f"  {ips} IPs: data and logs kept in {data_dir}")
    else:
        shutil.rmtree(data_dir, ignore_errors=True)
    return out


# -- the floor ------------------------------------------------------------------

async def bare_crawl_seconds(sim_url: str, chromium: str, pages: tuple[int, int], ips: int = 6) -> float:
    """Median seconds to navigate to and read one IP's pages in one tab of one browser, nothing else around."""
    from lib.crawling.driver import Browser
    from lib.crawling.page_fetch import search_url
    from lib.crawling.selectors import ON_SALE_PARAM, SOLD_PARAM

    browser = await Browser.launch(chromium, no_sandbox=os.geteuid() == 0)
    try:
        tab = await browser.new_tab(r"$^", block_resources=False)
        times = []
        for keyword in ["負荷floor"] + keywords(ips):  # the first one warms the browser up
            start = time.perf_counter()
            for status, count in ((ON_SALE_PARAM, pages[0]), (SOLD_PARAM, pages[1])):
                for n in range(1, count + 1):
                    await tab.goto(search_url(sim_url, keyword, status, n), 30)
                    await tab.wait_for("() => document.querySelector('li[data-testid=\"item-cell\"] a')", 30)
                    await tab.evaluate("() => document.body.innerText.length")
            times.append(time.perf_counter() - start)
        return statistics.median(times[1:])
    finally:
        await browser.close()


def floor_seconds(chromium: str, pages: tuple[int, int], speed: float) -> float:
    from lib.standins.simulator import MarketSimulator

    sim = MarketSimulator(speed=speed).start()
    try:
        return asyncio.run(bare_crawl_seconds(sim.url, chromium, pages))
    finally:
        sim.stop()


# -- the report -------------------------------------------------------------------

def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def series(values: list[int], width: int = 12) -> str:
    if not values:
        return "-"
    if len(values) <= width:
        picked = values
    else:
        picked = [values[round(i * (len(values) - 1) / (width - 1))] for i in range(width)]
    return " ".join(str(v) for v in picked)


def print_report(outs: list[Outcome], floor: float, args) -> None:
    print(f"\n  {'IPs':>5} {'crawls':>7} {'window s':>9} {'crawls/min':>10} {'results/s':>9}  "
          f"{'end-to-end p50/p99 s':>20}  {'pipeline p50/p99 s':>18}  {'crawl p50 s':>11}  {'done':>11}")
    for o in outs:
        rate = o.results / o.window if o.window else 0.0
        crawls_min = o.crawls / o.window * 60 if o.window else 0.0
        done = f"{o.done_ips}/{o.ips}" + ("" if o.complete else "!")
        print(f"  {o.ips:>5} {o.crawls:>7} {o.window:>9.1f} {crawls_min:>10.1f} {rate:>9.2f}  "
              f"{pct(o.end_to_end, .5):>9.2f} /{pct(o.end_to_end, .99):>8.2f}  "
              f"{pct(o.pipeline, .5):>8.2f} /{pct(o.pipeline, .99):>7.2f}  {pct(o.crawl_seconds, .5):>11.2f}  "
              f"{done:>11}")
    print("\n  queue depth (waiting + running), sampled every second: max / mean, and the series over the run")
    for o in outs:
        for q in ("crawl", "pipeline"):
            values = [s.queues[q] for s in o.samples]
            mean = statistics.fmean(values) if values else 0.0
            print(f"  {o.ips:>5} {q:9} {max(values, default=0):>4} / {mean:6.1f}   [{series(values)}]")
    print(f"\n  peak memory per process type, MB: PSS (every {PSS_EVERY} s; shared pages split among the processes "
          "sharing them) / RSS (every second; shared pages counted in each process); crawler includes Chromium")
    print("  " + f"{'IPs':>5} " + " ".join(f"{k:>16}" for k in ROWS))
    for o in outs:
        print("  " + f"{o.ips:>5} " + " ".join(
            f"{f'{o.peak_pss_mb.get(k, 0):.0f} / {o.peak_mb.get(k, 0):.0f}':>16}" for k in ROWS))
    print("\n  CPU seconds per crawl (after boot), and what each IP added to Redis and SQLite")
    print("  " + f"{'IPs':>5} " + " ".join(f"{k:>16}" for k in ROWS) + f" {'Redis KB/IP':>12} {'SQLite KB/IP':>13}")
    for o in outs:
        n = max(o.results, 1)
        print("  " + f"{o.ips:>5} " + " ".join(f"{o.cpu.get(k, 0) / n:>16.3f}" for k in ROWS)
              + f" {o.redis_kb / o.ips:>12.1f} "
              + (f"{'-':>13}" if args.production else f"{o.sqlite_kb / o.ips:>13.1f}"))  # no SQLite file there
    print_cost_per_ip(outs)
    problems = [f"{o.ips} IPs: {o.reason or 'incomplete'}" for o in outs if not o.complete]
    problems += [f"{o.ips} IPs: {o.dead_letters} dead letters" for o in outs if o.dead_letters]
    print()
    base = outs[0]
    for o in outs:
        if o.results and floor == floor:  # not NaN (--no-floor)
            report(f"seconds per crawl, {o.ips} IPs (floor: bare fetch of its pages)", o.seconds_per_crawl, floor)
    for o in outs[1:]:
        if o.results and base.results:
            report(f"seconds per crawl, {o.ips} IPs (floor: {base.ips} IPs)", o.seconds_per_crawl,
                   base.seconds_per_crawl)
            cpu = sum(o.cpu.get(k, 0) for k in PROCESS_TYPES) / o.results
            cpu_base = sum(base.cpu.get(k, 0) for k in PROCESS_TYPES) / base.results
            report(f"CPU seconds per crawl, all process types, {o.ips} IPs (floor: {base.ips} IPs)", cpu, cpu_base)
            report(f"pipeline p50 latency, {o.ips} IPs (floor: {base.ips} IPs)", pct(o.pipeline, .5),
                   pct(base.pipeline, .5))
            report(f"Redis memory per IP, {o.ips} IPs (floor: {base.ips} IPs)", o.redis_kb / o.ips,
                   base.redis_kb / base.ips, "KB")
            report(f"Redis state keys per IP, {o.ips} IPs (floor: {base.ips} IPs)", o.redis_keys_kb / o.ips,
                   base.redis_keys_kb / base.ips, "KB")
            report(f"database bytes per IP, {o.ips} IPs (floor: {base.ips} IPs)", o.db_kb / o.ips,
                   base.db_kb / base.ips, "KB")
    for problem in problems:
        print(f"  ! {problem}")


def print_cost_per_ip(outs: list[Outcome]) -> None:
    """The per-IP table (flat from the first scale is the goal), then where the bytes are: Redis keys by kind
    and database tables, per IP and per crawl."""
    print("\n  cost per IP: CPU seconds per crawl (all process types = scheduler + crawler + worker), Redis KB per "
          "IP (used_memory; the state keys' MEMORY USAGE; item states alone), database KB per IP, pipeline latency")
    print(f"  {'IPs':>5} {'CPU s/crawl':>11} {'crawler':>8} {'worker':>7} {'Redis KB':>9} {'keys KB':>8} "
          f"{'items KB':>9} {'DB KB':>7} {'DB rows/crawl':>13} {'pipeline p50/p99 s':>19}")
    for o in outs:
        items = o.redis_keys.get("item states", (0, 0))[1] / 1024
        rows = sum(r for r, _ in o.tables.values())
        applied = max(o.tables.get("applied_results", (0, 0))[0], 1)  # every result applied, in the window or not
        print(f"  {o.ips:>5} {o.cpu_per_crawl():>11.3f} {o.cpu_per_crawl(('crawler',)):>8.3f} "
              f"{o.cpu_per_crawl(('worker',)):>7.3f} {o.redis_kb / o.ips:>9.1f} {o.redis_keys_kb / o.ips:>8.1f} "
              f"{items / o.ips:>9.1f} {o.db_kb / o.ips:>7.1f} {rows / applied:>13.1f} "
              f"{pct(o.pipeline, .5):>9.2f} /{pct(o.pipeline, .99):>7.2f}")
    print("\n  Redis state keys by kind: keys per IP, bytes per key (MEMORY USAGE)")
    kinds = sorted({k for o in outs for k, v in o.redis_keys.items() if v[0] > 0},
                   key=lambda k: -max(o.redis_keys.get(k, (0, 0))[1] for o in outs))
    print(f"  {'kind':32} " + " ".join(f"{f'{o.ips} IPs':>20}" for o in outs))
    for kind in kinds:
        cells = []
        for o in outs:
            n, b = o.redis_keys.get(kind, (0, 0))
            cells.append(f"{f'{n / o.ips:.2f} x {b / n:.0f} B' if n > 0 else '-':>20}")
        print(f"  {kind:32} " + " ".join(cells))
    print("\n  database tables: rows per crawl (per result applied), KB per IP, bytes per row (data and indexes; "
          "whole pages, so a table of a few rows may show 0)")
    names = sorted({t for o in outs for t, v in o.tables.items() if v[0] > 0 or v[1] > 0},
                   key=lambda t: -max(o.tables.get(t, (0, 0))[1] for o in outs))
    print(f"  {'table':22} " + " ".join(f"{f'{o.ips} IPs':>26}" for o in outs))
    for name in names:
        cells = []
        for o in outs:
            n, b = o.tables.get(name, (0, 0))
            applied = max(o.tables.get("applied_results", (0, 0))[0], 1)
            text = f"{n / applied:.1f} / {b / 1024 / o.ips:.1f} / {b / n:.0f}" if n > 0 else \
                f"0 / {b / 1024 / o.ips:.1f} / -"
            cells.append(f"{text:>26}")
        print(f"  {name:22} " + " ".join(cells))
    print_steady_state(outs)


def _table_total(tables: dict[str, tuple[int, int]], name: str) -> tuple[int, int]:
    if name == "all tables":
        return sum(r for r, _ in tables.values()), sum(b for _, b in tables.values())
    return tables.get(name, (0, 0))


def print_steady_state(outs: list[Outcome]) -> None:
    """Database bytes per crawl, per table: the first crawls (each IP's listings all new) apart from the steady
    state, i.e. the bytes the crawls applied once every IP had its first added, divided by their count (what a
    crawl costs from then on: with the facts stored as changes, it grows with what changed in the market since the
    IP's previous crawl, not with the listings seen). Needs ``--cycles`` 2 or more."""
    measured = [o for o in outs if o.steady_results > 0]
    if not measured:
        print("\n  database bytes per crawl in steady state: needs --cycles 2 or more")
        return
    print("\n  database bytes per crawl, per table: first crawls (every IP's first, with the crawls applied by then) "
          "/ steady state (the crawls after): KB and rows per crawl")
    names = sorted({t for o in measured for tables in (o.first_tables, o.steady_tables)
                    for t, v in tables.items() if v[0] or v[1]},
                   key=lambda t: (-max(o.steady_tables.get(t, (0, 0))[1] for o in measured),
                                  -max(o.first_tables.get(t, (0, 0))[1] for o in measured), t))
    print(f"  {'table':22} " + " ".join(f"{f'{o.ips} IPs: first KB, rows / steady KB, rows':>46}" for o in measured))
    for name in [*names, "all tables"]:
        cells = []
        for o in measured:
            (fr, fb), (sr, sb) = _table_total(o.first_tables, name), _table_total(o.steady_tables, name)
            first, steady = max(o.first_results, 1), o.steady_results
            text = f"{fb / 1024 / first:.1f}, {fr / first:.1f} / {sb / 1024 / steady:.1f}, {sr / steady:.1f}"
            cells.append(f"{text:>46}")
        print(f"  {name:22} " + " ".join(cells))
    for o in measured:
        print(f"  {o.ips} IPs: {o.first_results} results by the last first crawl, {o.steady_results} after")


# -- entry point --------------------------------------------------------------------

def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench load", description=__doc__.split("\n\n")[0])
    p.add_argument("--ips", default="100,300",
                   help="comma-separated scales; the first is the floor the others are compared with (100,300; "
                        "the issue's full run: 100,1000)")
    p.add_argument("--cycles", type=int, default=1, help="crawls of each IP per scale (1)")
    p.add_argument("--pages", default="1,1", help="on-sale,sold search pages per crawl (1,1; production: 5,5)")
    p.add_argument("--speed", type=float, default=60.0, help="clock speed (60: a real second is a simulated minute)")
    p.add_argument("--interval", type=float, default=10.0,
                   help="crawl interval of every IP in REAL seconds (10; shorter than a cycle: saturated)")
    p.add_argument("--crawler-threads", type=int, default=2, help="concurrent crawls of the crawler process (2)")
    p.add_argument("--timeout-per-ip", type=float, default=5.0,
                   help="give up a scale after this many real seconds per IP-cycle, plus a minute (5)")
    p.add_argument("--no-floor", action="store_true", help="skip the bare-fetch floor (saves a few seconds)")
    p.add_argument("--progress", action="store_true", help="a progress line every 10 s")
    p.add_argument("--production", action="store_true",
                   help="on the services BROKER_URL, REDIS_URL and DATABASE_URL name (RabbitMQ, Redis, MySQL), empty "
                        "at the start and emptied after each scale, instead of the embedded Redis and SQLite")
    p.add_argument("--keep", action="store_true", help="keep each scale's DATA_DIR (logs, database) and print it")
    args = p.parse_args(argv)
    try:
        args.scales = [int(x) for x in args.ips.split(",") if x.strip()]
        args.pages = tuple(int(x) for x in args.pages.split(","))
    except ValueError:
        p.error("--ips and --pages take comma-separated whole numbers")
    if not args.scales or min(args.scales) < 1 or len(args.pages) != 2 or min(args.pages) < 1 or args.cycles < 1:
        p.error("--ips, --pages and --cycles must be at least 1")
    return args


def check_production_services() -> str | None:
    """The production profile's services, described (credentials redacted); None, with the reason printed, when
    one of them already holds data (the bench counts from zero and empties them after each scale)."""
    from lib.core.db import bind_database, database
    from lib.core.settings import load_settings, use_settings
    from lib.market.schema import create_tables
    from lib.operations.demo import describe_services, refuse_non_empty

    services = production_services()
    settings = load_settings(services)
    use_settings(settings)
    bind_database(settings.database_url_resolved)
    try:
        create_tables()
        refused = refuse_non_empty(settings, services)
    finally:
        database.close()
    if refused:
        print(f"python -m bench load --production: {refused.replace('the demo', 'the benchmark')}", file=sys.stderr)
        return None
    return describe_services(settings)


def main(argv: list[str] | None = None) -> int:
    from lib.app import configure_logging
    from lib.crawling.install import ensure_chromium

    args = parse_args(argv)
    configure_logging("WARNING")
    chromium = ensure_chromium()
    pages = args.pages[0] + args.pages[1]
    services = "embedded Redis, SQLite"
    if args.production:
        services = check_production_services()
        if services is None:
            return 2
    print(f"load: {args.ips} IPs x {args.cycles} cycles, {args.pages[0]} on-sale + {args.pages[1]} sold pages per "
          f"crawl, clock {args.speed:g}x, interval {args.interval:g} real s; real scheduler, crawler "
          f"({args.crawler_threads} threads, Chromium) and worker processes, {services}", flush=True)

    def on_term(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, on_term)
    root = Path(tempfile.mkdtemp(prefix="animetop-load-"))
    outs: list[Outcome] = []
    try:
        floor = float("nan") if args.no_floor else floor_seconds(chromium, args.pages, args.speed)
        if not args.no_floor:
            print(f"  floor: bare navigate-and-read of one IP's {pages} pages in one tab: {floor:.3f} s", flush=True)
        for ips in args.scales:
            out = run_scale(ips, args.cycles, root, chromium, args)
            outs.append(out)
            print(f"  {ips} IPs: {out.results} results in {out.window:.1f} s"
                  + ("" if out.complete else f" ({out.reason or 'incomplete'})"), flush=True)
            if not out.complete:
                break
            if args.progress and ips != args.scales[-1]:  # a long run keeps what it measured so far
                print_report(outs, floor if not args.no_floor else float("nan"), args)
    except KeyboardInterrupt:
        print("\n  interrupted: everything stopped", flush=True)
    finally:
        signal.signal(signal.SIGTERM, previous)
        if not getattr(args, "kept", False):
            shutil.rmtree(root, ignore_errors=True)
    if outs:
        print_report(outs, floor if not args.no_floor else float("nan"), args)
    return 0 if outs and all(o.complete for o in outs) and len(outs) == len(args.scales) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
