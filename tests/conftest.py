"""Fixtures on real services: Redis, SQLite, MariaDB/MySQL, RabbitMQ, Dramatiq workers.

Where a service is not reachable, the tests that need it skip with the
reason, except under CI=true, where they fail: CI must run them all.
Redis falls back to a private redis-server, so the core suite runs on a
machine with no services at all.
"""

from __future__ import annotations

import fcntl
import os
import socket
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit, urlunsplit

import dramatiq
import pytest
import redis

from lib.app import setup
from lib.core.db import bind_database, database
from lib.core.embedded_redis import EmbeddedRedis
from lib.core.settings import load_settings, use_settings
from models import IpStatsHourly

#: DATA_DIR of the start-up at import (nothing is written there: the stub broker needs no Redis); removed at exit.
_START_UP_DIR = tempfile.TemporaryDirectory(prefix="animetop-test-start-up-")


def _import_actors():
    """Import the production actors the way a process does (``import actors`` runs the start-up code), with the
    broker Dramatiq's testing guidance chooses at start-up: ``BROKER_URL=stub://``, Dramatiq's StubBroker. The
    environment is restored afterwards; each test then declares the actors on a broker of its own
    (``app_actors``)."""
    saved = {name: os.environ.get(name) for name in ("BROKER_URL", "DATA_DIR")}
    os.environ.update(BROKER_URL="stub://", DATA_DIR=_START_UP_DIR.name)
    try:
        import actors
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        use_settings(None)
    return actors


actors = _import_actors()

IN_CI = os.environ.get("CI") == "true"
#: The pytest-xdist worker this process is ("gw0", "gw1", …; none without xdist): each worker gets Redis
#: databases, a MySQL database and a metrics port of its own, so the two halves of the suite never meet.
XDIST_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
WORKER_INDEX = int(XDIST_WORKER[2:]) if XDIST_WORKER.startswith("gw") else 0

#: Redis databases the tests flush (TEST_REDIS_DBS="8,9" lets a second test run share the server); each
#: xdist worker takes the pair below the previous one's.
STATE_DB, BROKER_DB = (int(n) - 2 * WORKER_INDEX for n in os.environ.get("TEST_REDIS_DBS", "14,15").split(","))
if XDIST_WORKER:
    # process types the tests start (and the demo's) serve /metrics here unless a test picks a port
    # (TEST_METRICS_PORT moves the range, for a second test run on the same machine)
    metrics_base = int(os.environ.get("TEST_METRICS_PORT", "9191"))
    os.environ.setdefault("METRICS_PORT", str(metrics_base + 10 * (WORKER_INDEX + 1)))

#: Fast reliability settings so tests never wait for production delays.
FAST = {
    "RETRY_MIN_BACKOFF": "100ms",
    "RETRY_MAX_BACKOFF": "1s",
    "LOCK_BUSY_RETRY_DELAY": "200ms",
    "BROKER_HEARTBEAT_TIMEOUT": "3s",
    "BROKER_MAINTENANCE_CHANCE": "500000",
    "LOG_LEVEL": "INFO",
    "CRAWL_RATE_LIMIT": "0",  # the simulator on loopback; the budget's own tests set it
}


def _reachable(url: str) -> bool:
    parts = urlsplit(url)
    try:
        with socket.create_connection((parts.hostname, parts.port), timeout=1):
            return True
    except OSError:
        return False


def need(url: str, what: str) -> None:
    if not _reachable(url):
        message = f"{what} not reachable at {url}"
        if IN_CI:
            pytest.fail(message + " (CI=true: these tests must run)")
        pytest.skip(message)


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory) -> str:
    """Base URL of a Redis server: TEST_REDIS_URL, the local one, or a private one."""
    url = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379")
    if _reachable(url):
        yield url.rstrip("/")
        return
    server = EmbeddedRedis(Path("/tmp") / f"animetop-test-redis-{uuid.uuid4().hex[:8]}")
    server.ensure_running()
    yield server.url
    server.stop()


def _with_db(base: str, db: int) -> str:
    from lib.core.redis_urls import with_redis_db

    return with_redis_db(base, db)


@pytest.fixture
def env(request, redis_server, tmp_path) -> dict[str, str]:
    """Environment of an isolated app: its own Redis databases (flushed) and SQLite file, or the database of
    the test's ``database_url`` when it has one (so the start-up code binds the database the test uses)."""
    database_url = (request.getfixturevalue("database_url") if "database_url" in request.fixturenames
                    else f"sqlite:///{tmp_path / 'test.sqlite3'}")
    values = {
        "DATA_DIR": str(tmp_path / "var"),
        "REDIS_URL": _with_db(redis_server, STATE_DB),
        "BROKER_URL": _with_db(redis_server, BROKER_DB),
        "DATABASE_URL": database_url,
        **FAST,
    }
    for db in (STATE_DB, BROKER_DB):
        client = redis.Redis.from_url(_with_db(redis_server, db))
        client.flushdb()
        client.close()
    return values


@pytest.fixture
def settings(env):
    settings = load_settings(env)
    use_settings(settings)
    yield settings
    use_settings(None)


def _worker_vhost_url(base: str) -> str:
    """``base`` on a virtual host of this xdist worker's own (``<vhost>_gwN``; ``/`` gives ``animetop_test_gwN``):
    RabbitMQ queues have no namespace, so workers sharing a vhost would take each other's messages."""
    if not XDIST_WORKER:
        return base
    parts = urlsplit(base)
    vhost = unquote(parts.path[1:]) or "/"
    own = f"animetop_test_{XDIST_WORKER}" if vhost == "/" else f"{vhost}_{XDIST_WORKER}"
    return urlunsplit(parts._replace(path="/" + quote(own, safe="")))


#: RabbitMQ of the tests: TEST_RABBITMQ_URL (default the local server's ``/``), on this worker's own vhost.
RABBITMQ_URL = _worker_vhost_url(os.environ.get("TEST_RABBITMQ_URL", "amqp://guest:guest@127.0.0.1:5672/%2F"))
_rabbitmq_ready: list[bool] = []


def need_rabbitmq() -> None:
    """RabbitMQ reachable (``need``), with this worker's vhost, created with ``rabbitmqctl`` where missing (as
    root, like Chromium's install); without it the tests fail under CI=true and skip otherwise."""
    need(RABBITMQ_URL, "RabbitMQ")
    if _rabbitmq_ready:
        return
    import shutil
    import subprocess

    import pika
    import pika.exceptions

    def reachable() -> bool:
        try:
            pika.BlockingConnection(pika.URLParameters(RABBITMQ_URL)).close()
            return True
        except pika.exceptions.AMQPConnectionError:
            return False

    if not reachable() and shutil.which("rabbitmqctl"):
        parts = urlsplit(RABBITMQ_URL)
        vhost, user = unquote(parts.path[1:]), parts.username or "guest"
        subprocess.run(["rabbitmqctl", "add_vhost", vhost], capture_output=True, timeout=60)
        subprocess.run(["rabbitmqctl", "set_permissions", "-p", vhost, user, ".*", ".*", ".*"], capture_output=True,
                       timeout=60)
    if not reachable():
        message = f"RabbitMQ vhost of {RABBITMQ_URL} not usable (create it, or run as root with rabbitmqctl)"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    _rabbitmq_ready.append(True)


MYSQL_URL = os.environ.get("TEST_MYSQL_URL", "mysql://root@127.0.0.1:3306/animetop_test") + (
    f"_{XDIST_WORKER}" if XDIST_WORKER else "")


@pytest.fixture(params=["sqlite", pytest.param("mysql", marks=pytest.mark.mysql)])
def database_url(request, tmp_path) -> str:
    """Each database test runs on SQLite and on MariaDB/MySQL."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'db.sqlite3'}"
    need(MYSQL_URL, "MySQL/MariaDB")
    from .helpers import empty_mysql_tables, recreate_mysql_database

    # a test that will create every table (``db``) starts from the previous such test's tables, emptied, unless
    # a test changed the schema since: creating them costs seconds on MariaDB, emptying them a fraction. The
    # hourly table is made again: its monthly partitions start at the month of the clock that created it
    schema = _FULL_MYSQL_SCHEMA.get(MYSQL_URL)
    if schema is not None and "db" in request.fixturenames \
            and empty_mysql_tables(MYSQL_URL, schema, drop=(IpStatsHourly._meta.table_name,)):
        return MYSQL_URL
    recreate_mysql_database(MYSQL_URL)[0].close()
    return MYSQL_URL


#: The schema fingerprint (``helpers.mysql_schema``) of a MySQL database right after ``db`` created its tables.
_FULL_MYSQL_SCHEMA: dict[str, str] = {}


@pytest.fixture
def db(database_url):
    """The database bound and all tables created."""
    from lib.market.schema import create_tables

    bound = bind_database(database_url)
    create_tables()
    if database_url.startswith("mysql"):
        from .helpers import mysql_schema

        _FULL_MYSQL_SCHEMA[database_url] = mysql_schema(database_url)
    yield bound
    if not database.is_closed():
        database.close()


@pytest.fixture
def broker(settings):
    """A real broker (Redis unless the test overrides BROKER_URL), built by the start-up code every process
    runs (``lib.app.setup``: logging, clock, database, broker) and installed as Dramatiq's global."""
    broker = setup(settings)
    yield broker
    broker.close()


@pytest.fixture
def app_actors(broker):
    """The production actors (the ``actors`` package), declared on this test's broker: what they send goes
    there, and a worker started on it runs them."""
    actors.declare_on(broker)
    return actors


@pytest.fixture
def stub_broker(env):
    """Dramatiq's StubBroker with the app's middleware and the production actors, for tests where the broker
    is not what is under test (the same start-up code, with ``BROKER_URL=stub://``)."""
    settings = load_settings({**env, "BROKER_URL": "stub://"})
    use_settings(settings)
    broker = setup(settings)
    actors.declare_on(broker)
    yield broker
    broker.close()
    use_settings(None)


#: Test files whose every test starts real process types, the demo, a benchmark run, a simulated week, the
#: OpenAPI fuzzer or CLI processes that wait out unreachable services (the chaos suite is slow as a whole);
#: single slow tests elsewhere carry ``@pytest.mark.slow``. Besides these, every test that drives Chromium (it
#: uses the ``chromium`` fixture) and the MariaDB variant of every test that runs on both databases (the
#: ``mysql`` mark of ``database_url``'s parameters) is slow: the fast tier runs on SQLite, without a browser,
#: and keeps the tests of MariaDB's own behaviour (docs/getting-started.md, "While working").
SLOW_FILES = {"test_demo.py", "test_bench_load.py", "test_crawl_process.py", "test_process_types.py",
              "test_bench_process_result.py", "test_bench_soak.py", "test_bench_replicate.py",
              "test_relists_truth.py", "test_openapi_fuzz.py", "test_unreachable.py", "test_relevance_process.py"}


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """Workers for ``-n auto`` (setup.cfg): four for the fast tier, three for the whole suite. Both keep two cores
    busy (docs/getting-started.md, "While working"); on the whole suite a fourth worker did not shorten the run, and
    the fast tier's four were not measured against three on a machine where it is bound by the processor."""
    return 4 if config.getoption("markexpr") == "not slow" else 3


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        path = Path(str(item.fspath))
        if path.parent.name == "chaos":
            item.add_marker(pytest.mark.chaos)
            item.add_marker(pytest.mark.slow)
        elif path.name in SLOW_FILES:
            item.add_marker(pytest.mark.slow)
        if "chromium" in getattr(item, "fixturenames", ()) or item.get_closest_marker("mysql"):
            item.add_marker(pytest.mark.slow)
        if item.get_closest_marker("slow_on_cluster") and path.parent.name == "cluster":
            item.add_marker(pytest.mark.slow)


class ProcessedCounter(dramatiq.Middleware):
    """Counts, per actor, the messages a worker ran to the end (``processed``), that raised (``failed``: a
    retry, a held lock, a failure) and that it skipped (``skipped``): what a test observes of real actors
    instead of counting inside copies of them."""

    def __init__(self) -> None:
        import collections
        import threading

        self.processed: collections.Counter[str] = collections.Counter()
        self.failed: collections.Counter[str] = collections.Counter()
        self.skipped: collections.Counter[str] = collections.Counter()
        self._lock = threading.Lock()

    def after_process_message(self, broker, message, *, result=None, exception=None):
        with self._lock:
            (self.processed if exception is None else self.failed)[message.actor_name] += 1

    def after_skip_message(self, broker, message):
        with self._lock:
            self.skipped[message.actor_name] += 1


@pytest.fixture
def processed(broker) -> ProcessedCounter:
    """Installs a ``ProcessedCounter`` on the test's broker (before any worker starts)."""
    counter = ProcessedCounter()
    broker.add_middleware(counter)
    return counter


@pytest.fixture
def start_worker():
    """Start real in-process Dramatiq workers; they are stopped at the end of the test."""
    workers = []
    booted = set()

    def start(broker, *, threads: int = 2, queues=None, boot: bool = True) -> dramatiq.Worker:
        if boot and id(broker) not in booted:  # what the dramatiq CLI does in each worker process (starts TimeLimit)
            broker.emit_after("process_boot")
            booted.add(id(broker))
        worker = dramatiq.Worker(broker, worker_threads=threads, worker_timeout=100, queues=queues)
        worker.start()
        workers.append(worker)
        return worker

    yield start
    for worker in workers:
        worker.stop(timeout=10_000)


@pytest.fixture
def sim():
    """The market simulator, frozen (``speed=0``): its ground truth does not move during a crawl."""
    from lib.standins.simulator import MarketSimulator

    server = MarketSimulator(speed=0).start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def chromium() -> str:
    """Chromium for the crawler tests, installed from Debian's packages where missing (as root)."""
    from lib.crawling.driver import DriverError
    from lib.crawling.install import ensure_chromium

    try:
        return ensure_chromium()
    except DriverError as e:
        if IN_CI:
            pytest.fail(f"{e} (CI=true: the crawler tests must run)")
        pytest.skip(str(e))


@dataclass(frozen=True)
class DemoRun:
    """What one run of the README's demo left: its working directory, what it printed, and the simulator's
    record of every search page it served."""

    directory: Path
    stdout: str

    @property
    def data_dir(self) -> Path:
        return self.directory / "var" / "demo"

    @property
    def database(self) -> Path:
        return self.data_dir / "animetop.sqlite3"

    @property
    def served(self) -> Path:
        return self.directory / "served.jsonl"


#: Five IPs at 240x for 75 s: about five simulated hours after two days of history, so each IP is crawled several
#: times by the process types too; the dashboard on a free port.
DEMO_ARGS = ("--minutes", "1.25", "--ips", "5", "--speed", "240", "--port", "0")


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory, chromium) -> DemoRun:
    """One demo run (the real process types against the simulator) for the whole test run: ``test_demo`` checks
    its statistics against the simulator's truth, ``tests/web`` reads its database. It is shared by the xdist
    workers (the first to ask runs it under a file lock, the others wait for it and read its result), so users
    of it must not change it: copy what they change."""
    from .helpers import run_demo

    # the workers' base temporary directories share a parent that is this run's own (without xdist, the parent
    # is shared by every pytest run, so the run's own base directory is used)
    root = (tmp_path_factory.getbasetemp().parent if XDIST_WORKER else tmp_path_factory.getbasetemp()) / "demo-run"
    root.mkdir(exist_ok=True)
    done, failed = root / "stdout.txt", root / "failed.txt"
    with open(root / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also if this worker dies
        if failed.exists():  # not run a second time: the waiter would run out of its test's time
            pytest.fail(f"the shared demo run failed in another worker:\n{failed.read_text()}")
        if not done.exists():
            try:
                # its closing board is held to the counted definitions (tests/market/scripted.py): the flows,
                # prices and times to sell its pages could not see are estimated only at read time here (the
                # dashboard tests over its database read them; tests/market/test_estimates.py holds them)
                stdout = run_demo(root, *DEMO_ARGS, "--record", str(root / "served.jsonl"),
                                  env={"FLOW_ESTIMATES": "false"})
            except BaseException as e:
                failed.write_text(str(e) or type(e).__name__)
                raise
            done.write_text(stdout)
    return DemoRun(root, done.read_text())
