"""The worker process type's Prometheus endpoint."""

import os
import re
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from .helpers import free_port, run_cli, wait_for

ROOT = Path(__file__).parent.parent


def scrape(port: int) -> str:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
            return r.read().decode()
    except OSError:
        return ""


def test_metrics_endpoint_has_dramatiq_and_animetop_metrics(env, settings):
    port = free_port()
    full_env = {**os.environ, **env, "METRICS_PORT": str(port), "WORKER_PROCESSES": "1", "WORKER_THREADS": "1"}
    assert run_cli(env, "db", "init").returncode == 0
    proc = subprocess.Popen([sys.executable, "-m", "lib.cli", "run", "worker"], env=full_env, cwd=ROOT,
                            start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: scrape(port), timeout=60, what="the metrics endpoint")
        assert run_cli(env, "enqueue", "ping", '{"note": "m"}').returncode == 0
        text = wait_for(lambda: (t := scrape(port)) and 'dramatiq_messages_total{actor_name="ping"' in t and t,
                        timeout=60, what="ping counted")
        for name in ("animetop_scheduler_tasks_pending_in_queue", "animetop_queue_deadletter_len",
                     "animetop_scheduler_scheduled_ips", "animetop_crawls_in_flight",
                     'animetop_queue_depth{queue="crawl"'):
            assert name in text, name
        assert f"127.0.0.1:{port}" not in text  # nothing about where it runs leaks into the exposition
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=60)


def test_a_worker_in_a_process_that_never_booted_the_broker_logs_no_error(broker, app_actors, processed, start_worker,
                                                                           caplog):
    """A script or benchmark running a Worker of its own never sends the process-boot signal: the metrics
    middleware must stay quiet there, not fail in every hook (it did, with AttributeError tracebacks)."""
    import logging

    caplog.set_level(logging.INFO)
    app_actors.ping.send(note="no boot")
    start_worker(broker, queues=["maintenance"], boot=False)
    wait_for(lambda: processed.processed["ping"] == 1, what="the ping to run")
    noisy = [r for r in caplog.records if r.levelno >= logging.WARNING or r.exc_info]
    assert noisy == [], [r.getMessage() for r in noisy]


def _write_metrics_and_exit(directory: Path, code: str) -> None:
    """A process of its own writes prometheus_client multiprocess files into ``directory`` and exits: files of
    a dead PID."""
    subprocess.run([sys.executable, "-c", "import prometheus_client as p\n" + code], check=True, timeout=60,
                   env={**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(directory)})


def _sample(text: str, name: str, labels: str = "") -> float:
    """The value of one sample of the exposition (0 when absent)."""
    for line in text.splitlines():
        if line.startswith(name + labels + " ") or (not labels and line.startswith(name + " ")):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


@pytest.mark.slow
def test_metrics_count_what_this_deployment_did(env, settings):
    """N results applied read N, with a previous run's files and a dead worker's gauge present; the metrics
    live under the deployment's DATA_DIR, per process type."""
    from lib.core.clock import Clock
    from lib.core.db import bind_database, database
    from lib.market.schema import create_tables
    from lib.messaging.broker import build_broker
    from lib.operations.metrics import metrics_dir

    from .chaos.crawl_results import baseline_and_second, send_results, setup_ips

    port = free_port()
    directory = metrics_dir(settings, "worker", port)
    assert directory == Path(env["DATA_DIR"]).resolve() / "metrics" / f"worker-{port}"
    directory.mkdir(parents=True)
    # what a previous run on this DATA_DIR left: 656 results, 369,251 items, 6 messages "in progress"
    _write_metrics_and_exit(directory, """
h = p.Histogram("animetop_pipeline_processing_duration_seconds", "x")
for _ in range(656): h.observe(0.1)
p.Counter("animetop_items_processed_total", "x").inc(369251)
p.Gauge("dramatiq_messages_inprogress", "x", ["queue_name", "actor_name"], multiprocess_mode="livesum").labels(
    "pipeline", "process_result").inc(6)
""")
    full_env = {**os.environ, **env, "METRICS_PORT": str(port), "WORKER_PROCESSES": "1", "WORKER_THREADS": "2"}
    bind_database(settings.database_url_resolved)
    create_tables()
    ip_ids = setup_ips(settings, Clock())
    database.close()
    first, _ = baseline_and_second(ip_ids, Clock().now())
    proc = subprocess.Popen([sys.executable, "-m", "lib.cli", "run", "worker"], env=full_env, cwd=ROOT,
                            start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    broker = build_broker(settings)
    try:
        wait_for(lambda: scrape(port), timeout=60, what="the metrics endpoint")
        # a worker of this run SIGKILLed while it held messages: its in-progress gauge outlives it
        _write_metrics_and_exit(directory, """
p.Gauge("dramatiq_messages_inprogress", "x", ["queue_name", "actor_name"], multiprocess_mode="livesum").labels(
    "pipeline", "process_result").inc(6)
""")
        send_results(broker, first)
        n, items = len(first), sum(len(m["items"]) for m in first)
        labels = '{actor_name="process_result",queue_name="pipeline"}'
        text = wait_for(lambda: (t := scrape(port)) and _sample(t, "dramatiq_messages_total", labels) == n and t,
                        timeout=90, what=f"{n} results counted")
        assert _sample(text, "animetop_pipeline_processing_duration_seconds_count") == n
        assert _sample(text, "animetop_items_processed_total") == items
        assert _sample(text, "dramatiq_messages_inprogress", labels) == 0
        actors = set(re.findall(r'actor_name="([^"]+)"', text))
        assert actors <= {"process_result", "schedule_tick", "fill_all_pools", "start_due_collections"}, actors
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=60)
        broker.close()


def test_two_runners_of_a_process_type_on_one_data_dir_keep_their_own_files(settings, monkeypatch):
    """Two crawler pools on a host share DATA_DIR, each with its METRICS_PORT: a runner starting empties its own
    directory only, and two starting at once do not trip over each other (the second one's start used to fail on
    the directory the first had just made)."""
    from lib.operations.metrics import DIR_ENV, TYPE_ENV, use_metrics_dir

    for name in (DIR_ENV, "PROMETHEUS_MULTIPROC_DIR", TYPE_ENV):  # restored after the test
        monkeypatch.setenv(name, "")
    first = use_metrics_dir(settings, "crawler", 9302)
    (first / "counter_1.db").write_bytes(b"counts of the first pool")
    second = use_metrics_dir(settings, "crawler", 9402)
    assert first != second and (first / "counter_1.db").exists()
    assert use_metrics_dir(settings, "crawler", 9402) == second  # made again where it exists: no error
