"""Scenario 3: the database down while results are being processed.

Within the retry budget the results wait, retry and apply exactly once with
nothing dead-lettered; past it they are dead-lettered with the reason, and
``animetop deadletters requeue`` completes them. MariaDB goes down through a
loopback proxy we cut; SQLite "goes down" the way an embedded database does:
another process holds its write lock.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from urllib.parse import urlsplit, urlunsplit

import pytest

from lib.core.db import bind_database
from models import AppliedResult

from ..helpers import TcpProxy, run_cli, wait_for
from .crawl_results import (
    KEYWORDS,
    assert_same_end_state,
    busy,
    count,
    dead_letters,
    faulty_run_setup,
    reference_run,
    send_results,
)

#: How long the database is down: the issue's 30 s on MariaDB. SQLite's held lock takes the same path
#: (retries from "database is locked") once it outlasts the 15 s busy timeout, so 20 s keeps the suite quick.
OUTAGE = {"mysql": 30.0, "sqlite": 20.0}


class MysqlOutage:
    """MariaDB reached through a proxy: ``down()`` refuses connections and drops the open ones."""

    def __init__(self, database_url: str) -> None:
        parts = urlsplit(database_url)
        self.kind = "mysql"
        self.proxy = TcpProxy(parts.hostname, parts.port or 3306)
        self.direct_url = database_url
        self.app_url = urlunsplit(parts._replace(netloc=f"{parts.username or 'root'}@127.0.0.1:{self.proxy.port}"))

    def down(self) -> None:
        self.proxy.cut()

    def up(self) -> None:
        self.proxy.restore()

    def close(self) -> None:
        self.proxy.close()


class SqliteOutage:
    """SQLite's write lock held by another connection: every writer waits, then gets "database is locked"."""

    def __init__(self, database_url: str) -> None:
        self.kind = "sqlite"
        self.direct_url = self.app_url = database_url
        self.path = database_url.split("sqlite:///", 1)[1]
        self._release = threading.Event()
        self._held = threading.Event()
        self._thread: threading.Thread | None = None

    def _hold(self) -> None:
        conn = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        conn.execute("BEGIN EXCLUSIVE")
        self._held.set()
        self._release.wait()
        conn.execute("ROLLBACK")
        conn.close()

    def down(self) -> None:
        self._release.clear()
        self._held.clear()
        self._thread = threading.Thread(target=self._hold, daemon=True)
        self._thread.start()
        assert self._held.wait(30)

    def up(self) -> None:
        self._release.set()
        if self._thread:
            self._thread.join()

    def close(self) -> None:
        self.up()


@pytest.fixture
def outage(database_url):
    o = MysqlOutage(database_url) if database_url.startswith("mysql") else SqliteOutage(database_url)
    yield o
    o.close()


def start(env, outage, process_types, tmp_path, **settings):
    expected, ip_ids, first, second = reference_run(env, tmp_path)
    run_env = {**env, "DATABASE_URL": outage.app_url, "WORKER_PROCESSES": "1", "WORKER_THREADS": "2", **settings}
    app_settings, broker = faulty_run_setup(run_env, ip_ids, first)
    worker = process_types("worker", run_env)
    return expected, second, app_settings, broker, worker


def applied() -> int:
    return count(AppliedResult)


def test_database_down_within_the_retry_budget(env, outage, process_types, tmp_path):
    # retries 1, 2, 4, 8, 16, 16 … s (halved by jitter at worst): some 45 s or more, longer than the outage
    expected, second, settings, broker, worker = start(env, outage, process_types, tmp_path,
                                                       RETRY_MIN_BACKOFF="1s", RETRY_MAX_BACKOFF="16s")
    wait_for(lambda: worker.dramatiq_workers(), timeout=60, what="the worker to boot")
    outage.down()
    send_results(broker, second)
    bind_database(outage.direct_url)  # the test itself looks past the outage
    ends = time.monotonic() + OUTAGE[outage.kind]
    while time.monotonic() < ends:  # the outage lasts its length; sampled every second throughout
        assert applied() == len(KEYWORDS)  # only the baselines: the results wait
        time.sleep(1)
    retried = worker.log.read_text().count("outcome=retry")
    outage.up()
    wait_for(lambda: applied() == 2 * len(KEYWORDS) and not busy(broker), timeout=90, interval=0.5,
             what="the results applied once the database is back")
    assert retried > 0, "no message was retried during the outage"
    assert dead_letters(broker) == 0
    assert worker.proc.poll() is None
    assert_same_end_state(settings, expected)


@pytest.mark.mysql
@pytest.mark.parametrize("database_url", ["mysql"], indirect=True)  # one database is enough for this path
def test_database_down_past_the_retry_budget_then_requeued(env, database_url, process_types, tmp_path):
    outage = MysqlOutage(database_url)
    try:
        expected, second, settings, broker, worker = start(env, outage, process_types, tmp_path,
                                                           RETRY_MIN_BACKOFF="100ms", RETRY_MAX_BACKOFF="400ms")
        wait_for(lambda: worker.dramatiq_workers(), timeout=60, what="the worker to boot")
        outage.down()
        send_results(broker, second)
        wait_for(lambda: dead_letters(broker) == len(KEYWORDS), timeout=60, interval=0.5,
                 what="every result dead-lettered once its retries are spent")
        listing = run_cli({**env, "DATABASE_URL": outage.app_url}, "deadletters", "list", "--queue", "pipeline")
        assert listing.returncode == 0 and listing.stdout.count("process_result") == len(KEYWORDS)
        assert "Can't connect" in listing.stdout or "Lost connection" in listing.stdout or "2003" in listing.stdout, \
            listing.stdout  # the reason says what went wrong
        outage.up()
        requeued = run_cli({**env, "DATABASE_URL": outage.app_url}, "deadletters", "requeue", "--all",
                           "--queue", "pipeline")
        assert requeued.returncode == 0, requeued.stderr
        bind_database(database_url)
        wait_for(lambda: applied() == 2 * len(KEYWORDS) and not busy(broker) and dead_letters(broker) == 0,
                 timeout=60, interval=0.5, what="the requeued results applied")
        assert_same_end_state(settings, expected)
    finally:
        outage.close()
