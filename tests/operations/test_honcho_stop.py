"""The shipped Procfile under honcho 2.0: Ctrl-C during a crawl longer than honcho's fixed 5 s kill timeout.

honcho SIGTERMs each entry's group, waits 5 s, then SIGKILLs the groups still there: the crawler's runner
(``animetop run crawler``) dies, and the Dramatiq process tree it started in a session of its own must die
with it (``lib.operations.leash``), its crawl message left unacknowledged and delivered again on the next
start, where it is applied once.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import dramatiq
import pika
import pytest

from lib.core.db import bind_database, database
from lib.core.redis_client import state_redis
from lib.market.schema import create_tables
from lib.messaging import compat
from lib.messaging.in_flight import InFlight
from lib.messaging.purge import purge_rabbitmq_queues
from lib.messaging.queues import CRAWL
from lib.scheduling.catalogue import Catalogue
from lib.scheduling.schedule import ScheduleStore
from models import AppliedResult

from ..conftest import RABBITMQ_URL, need_rabbitmq
from ..helpers import free_port, processes_matching, wait_for

pytestmark = pytest.mark.slow

ROOT = Path(__file__).parent.parent.parent
#: honcho 2.0's fixed wait between its SIGTERM and its SIGKILL (honcho.manager.KILL_WAIT).
HONCHO_KILL_WAIT = 5


def _applied() -> list[str]:
    try:
        return [row.task_id for row in AppliedResult.select()]
    finally:
        database.close()


def _crawl_task_ids(broker) -> set[str]:
    """task_id of every crawl message the Redis broker holds (ready, or unacknowledged by a consumer)."""
    payloads = broker.client.hvals(compat.payloads_key(broker, CRAWL))
    return {dramatiq.get_encoder().decode(p)["kwargs"]["task_id"] for p in payloads}


class Honcho:
    def __init__(self, env: dict[str, str], log: Path) -> None:
        bin_dir = str(Path(sys.executable).parent)
        full_env = {**os.environ, **env, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", "")}
        self.log = log
        # Its own session, as a terminal's foreground job: Ctrl-C is SIGINT to that whole group.
        self.proc = subprocess.Popen([shutil.which("honcho", path=bin_dir) or "honcho", "-f", str(ROOT / "Procfile"),
                                      "start"], env=full_env, cwd=ROOT, start_new_session=True,
                                     stdout=open(log, "ab"), stderr=subprocess.STDOUT)

    def ctrl_c(self) -> None:
        os.killpg(self.proc.pid, signal.SIGINT)

    def kill(self, data_dir: str) -> None:
        """After a failure: honcho SIGKILLed leaves its entries running (they are in sessions of their own), so
        everything of the run goes, found by its DATA_DIR."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        for pid in processes_matching(b"DATA_DIR=" + data_dir.encode() + b"\0", "environ"):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def _assert_no_error_lines(log: str) -> None:
    bad = [line for line in log.splitlines() if re.search(r"\bERROR\b|\bCRITICAL\b|Traceback", line)]
    assert bad == [], "\n".join(bad[:20])


@pytest.mark.parametrize("broker_kind", ["redis", pytest.param("rabbitmq", marks=pytest.mark.rabbitmq)])
def test_ctrl_c_under_honcho_mid_crawl_leaves_nothing_running_and_the_crawl_is_applied_once(
        env, settings, broker, sim, chromium, tmp_path, broker_kind):
    data = env["DATA_DIR"].encode()
    rabbit = broker_kind == "rabbitmq"
    if rabbit:
        need_rabbitmq()
        purge_rabbitmq_queues(pika.URLParameters(RABBITMQ_URL))
    run_env = {**env, **({"BROKER_URL": RABBITMQ_URL} if rabbit else {}),
               "MERCARI_BASE_URL": sim.url, "CHROMIUM_PATH": chromium, "CHROMIUM_NO_SANDBOX": "true",
               "CRAWLER_THREADS": "1", "WORKER_PROCESSES": "1", "WORKER_THREADS": "2",
               # longer than honcho waits: the crawl in flight cannot finish before the SIGKILL
               "WORKER_SHUTDOWN_TIMEOUT": "60s", "METRICS_PORT": str(free_port(2))}
    bind_database(settings.database_url_resolved)
    create_tables()
    r = state_redis(settings)
    Catalogue(ScheduleStore(r), settings).add("鬼滅の刃")
    database.close()
    sim.set_mode("slow", delay_ms=1500)  # ten pages: a crawl of 15 s or more

    first = Honcho(run_env, tmp_path / "honcho-1.log")
    try:
        wait_for(lambda: sim.counters["pages"] >= 2, timeout=120, what="the crawl to get going")
        task_ids = set() if rabbit else _crawl_task_ids(broker)
        assert rabbit or len(task_ids) == 1
        first.ctrl_c()
        stopped_at = time.monotonic()
        first.proc.wait(timeout=HONCHO_KILL_WAIT + 15)
        took = time.monotonic() - stopped_at
        # nothing of the run is left: not the runner, not Dramatiq's processes, not Chromium
        wait_for(lambda: processes_matching(b"DATA_DIR=" + data + b"\0", "environ") == [], timeout=5,
                 what="every process of the run to be gone")
    finally:
        first.kill(env["DATA_DIR"])
    log = (tmp_path / "honcho-1.log").read_text(errors="replace")
    assert "sending SIGKILL to crawler" in log, f"the crawl was not in flight at the SIGKILL ({took:.1f} s)\n{log}"
    # honcho repeats its SIGKILL every 0.1 s until the entry's output pipe closes: a few while the killed group
    # goes, not the endless loop of a survivor holding the pipe
    assert log.count("sending SIGKILL") <= 30, log
    assert _applied() == []  # the crawl was cut short, not finished behind honcho's back
    if not rabbit:
        assert _crawl_task_ids(broker) == task_ids  # its message was kept, unacknowledged
    _assert_no_error_lines(log)

    sim.set_mode("normal")
    second = Honcho(run_env, tmp_path / "honcho-2.log")
    try:
        # the scheduler never sends a second crawl of an IP in flight: what is applied is the interrupted one
        applied = wait_for(lambda: len(a := _applied()) == 1 and a, timeout=120, interval=0.5,
                           what="the interrupted crawl to be delivered again and applied")
        assert rabbit or applied == list(task_ids)
        wait_for(lambda: InFlight(r).members() == set(), timeout=30, what="the IP's in-flight marker released")
        second.ctrl_c()
        second.proc.wait(timeout=HONCHO_KILL_WAIT + 15)
    finally:
        second.kill(env["DATA_DIR"])
    assert _applied() == applied  # once
    assert processes_matching(b"DATA_DIR=" + data + b"\0", "environ") == []
    _assert_no_error_lines((tmp_path / "honcho-2.log").read_text(errors="replace"))
