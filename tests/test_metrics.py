"""The worker process type's Prometheus endpoint."""

import os
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

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
