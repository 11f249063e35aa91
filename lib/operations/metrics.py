"""Prometheus metrics: Dramatiq's own message metrics plus our own (docs/operating/metrics.md).

Counters and histograms are recorded in each worker process (prometheus_client's multiprocess mode). Each
process type of a deployment has a directory of its own for those files, ``METRICS_DIR/{process type}``
(``DATA_DIR/metrics`` unless set), emptied when the process type starts: Dramatiq's default, one directory
in the system's temporary directory, is shared by every Dramatiq process on the host, and added up their
counts, their queues and their actors. The live gauges of a process that is gone (a SIGKILLed worker) are
dropped at the next scrape; its counts stay, they happened.

Gauges that describe shared state (queue depths, scheduled IPs, dead letters, crawls in flight) are read
from Redis when scraped, by the ``worker`` process type only (one series each). The ``worker`` serves
``/metrics`` on METRICS_PORT, the ``crawler`` on METRICS_PORT + 1, each its own process type's metrics.

Alert thresholds (docs/operating/metrics.md):
  animetop_scheduler_tasks_pending_in_queue > 100
  animetop_pipeline_processing_duration_seconds (p95) > 30
  animetop_crawler_request_duration_seconds (p95) > 60
  animetop_queue_deadletter_len > 0
  animetop_scheduler_scheduled_ips < the number of active IPs
  animetop_crawler_drift > 0 (crawler drift: lib/crawling/drift.py)
  increase(animetop_crawler_tab_recoveries_total{step="browser_restart"}[1h]) > 0 (tabs that stop rendering:
    lib/crawling/recovery.py)
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dramatiq import Broker

from lib.core.settings import Settings

if TYPE_CHECKING:
    from prometheus_client.metrics_core import Metric

logger = logging.getLogger(__name__)

#: Set by the process runner for the process types that serve /metrics.
PORT_ENV = "ANIMETOP_METRICS_PORT"
#: The process type a /metrics server serves (set by the process runner).
TYPE_ENV = "ANIMETOP_METRICS_PROCESS_TYPE"
#: Where Dramatiq's Prometheus middleware keeps its multiprocess files: read once, when it is imported, so the
#: process runner sets it before it starts the Dramatiq command.
DIR_ENV = "dramatiq_prom_db"


def metrics_dir(settings: Settings, process_type: str, port: int) -> Path:
    """The multiprocess directory of the runner of ``process_type`` that serves /metrics on ``port``: one per
    runner, so that two runners of a process type on one DATA_DIR (two crawler pools on a host, each with its
    METRICS_PORT) neither empty nor add up each other's files."""
    base = Path(settings.metrics_dir).resolve() if settings.metrics_dir else settings.data_path / "metrics"
    return base / f"{process_type}-{port}"


def use_metrics_dir(settings: Settings, process_type: str, port: int) -> Path:
    """Empty the runner's directory (its counts start with this run) and point this process and the Dramatiq
    command it starts at it."""
    path = metrics_dir(settings, process_type, port)
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True, exist_ok=True)
    os.environ[DIR_ENV] = os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(path)
    os.environ[TYPE_ENV] = process_type
    return path


def _in_this_group(pid: int) -> bool:
    """A process of this process group: a live worker of this Dramatiq command (a dead one's pid may have been
    reused by anything else)."""
    try:
        return os.getpgid(pid) == os.getpgrp()
    except ProcessLookupError:
        return False


def drop_dead_gauges(path: Path) -> list[Path]:
    """Remove the gauge files of processes that are gone, the way a worker's clean shutdown does
    (prometheus_client's ``mark_process_dead``): a SIGKILLed worker's messages in progress are not in progress.
    Every gauge mode, not only the "live" ones: a gauge is a present value."""
    dropped = []
    for file in path.glob("gauge_*.db"):
        pid = file.stem.rsplit("_", 1)[-1]
        if pid.isdigit() and not _in_this_group(int(pid)):
            file.unlink(missing_ok=True)
            dropped.append(file)
    return dropped


class StateCollector:
    """Gauges read from Redis at scrape time."""

    def collect(self) -> Iterator[Metric]:
        from prometheus_client.core import GaugeMetricFamily

        from lib.core.redis_client import state_redis
        from lib.core.settings import get_settings
        from lib.messaging.queue_stats import counting_broker
        from lib.messaging.queues import CRAWL
        from lib.operations.status import budgets, planned
        from lib.operations.status import counts as current_counts

        settings = get_settings()
        now = current_counts(_scrape_broker(settings, counting_broker), state_redis(settings))
        counts = now["queues"]
        pending = GaugeMetricFamily("animetop_scheduler_tasks_pending_in_queue", "Crawl tasks waiting in the queue.")
        pending.add_metric([], counts[CRAWL]["ready"])
        depth = GaugeMetricFamily("animetop_queue_depth", "Messages per queue and state.", labels=["queue", "state"])
        dead = GaugeMetricFamily("animetop_queue_deadletter_len", "Dead-lettered messages, all queues.")
        dead.add_metric([], sum(c["dead"] for c in counts.values()))
        for queue, c in counts.items():
            for state, value in c.items():
                depth.add_metric([queue, state], value)
        scheduled = GaugeMetricFamily("animetop_scheduler_scheduled_ips", "IPs in the schedule.")
        scheduled.add_metric([], now["scheduled_ips"])
        in_flight = GaugeMetricFamily("animetop_crawls_in_flight", "IPs with a crawl enqueued or running.")
        in_flight.add_metric([], len(now["in_flight_crawls"]))
        waiting = GaugeMetricFamily("animetop_crawl_rate_limit_waiting",
                                    "Page loads waiting for the fleet-wide CRAWL_RATE_LIMIT, all crawlers.")
        waiting.add_metric([], len(now["crawl_rate_waiting"]))
        budget = GaugeMetricFamily("animetop_crawl_budget_pages_per_minute",
                                   "Each address's request budget now (CRAWL_RATE_LIMIT, less after a 429).",
                                   labels=["address"])
        loads = GaugeMetricFamily("animetop_crawl_page_loads_last_minute",
                                  "Page loads each address began in the last whole minute, all crawlers.",
                                  labels=["address"])
        for b in budgets(settings, state_redis(settings)):
            budget.add_metric([b["address"]], b["limit"])
            loads.add_metric([b["address"]], b["loads_last_minute"])
        yield from (pending, depth, dead, scheduled, in_flight, waiting, budget, loads)
        plan = planned(state_redis(settings))
        if plan is not None:
            spent = GaugeMetricFamily("animetop_crawl_planned_requests_per_hour",
                                      "Requests an hour the IPs' planned intervals spend.")
            spent.add_metric([], plan["planned"])
            allowed = GaugeMetricFamily("animetop_crawl_plan_budget_requests_per_hour",
                                        "Requests an hour the schedule may plan: SCHEDULER_BUDGET_SHARE of the "
                                        "addresses' budgets.")
            allowed.add_metric([], plan["budget"])
            lengthened = GaugeMetricFamily("animetop_crawl_plan_lengthened_ips",
                                           "IPs crawled less often than their own interval to stay within the "
                                           "request budget.")
            lengthened.add_metric([], plan["lengthened"])
            sold_pages = GaugeMetricFamily("animetop_crawl_plan_sold_pages",
                                           "Sold pages the crawls of the IPs whose sales outrun SCHEDULER_PAGES_SOLD "
                                           "read with the request budget's spare requests (0: the cap).")
            sold_pages.add_metric([], plan["sold_pages"])
            yield from (spent, allowed, lengthened, sold_pages)
            if plan["reached"] is not None:
                reached = GaugeMetricFamily("animetop_crawl_new_listings_reached_share",
                                            "Of the IPs' new listings (weighted by flow), the share their last "
                                            "crawls' on-sale pages reached back to the crawl before.")
                reached.add_metric([], plan["reached"])
                yield reached
        from lib.crawling.drift import metric_families

        yield from metric_families(state_redis(settings))


_broker_cache: dict[str, Broker] = {}


def _scrape_broker(settings: Settings, build: Callable[[Settings], Broker]) -> Broker:
    if "broker" not in _broker_cache:
        _broker_cache["broker"] = build(settings)
    return _broker_cache["broker"]


def exposition() -> bytes:
    from dramatiq.middleware import prometheus
    from prometheus_client import CollectorRegistry, generate_latest, multiprocess

    path = Path(prometheus.DB_PATH)
    os.environ.setdefault("PROMETHEUS_MULTIPROC_DIR", str(path))
    drop_dead_gauges(path)
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry, path=str(path))
    if os.environ.get(TYPE_ENV, "worker") == "worker":
        registry.register(StateCollector())
    return generate_latest(registry)


def serve_metrics() -> int:
    """A fork of the Dramatiq main process: serves /metrics on 127.0.0.1:$ANIMETOP_METRICS_PORT."""
    from lib.core.settings import settings_or_exit

    settings_or_exit()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            try:
                body, status = exposition(), 200
            except Exception as e:  # a scrape must say what is wrong, not hang
                body, status = f"# metrics unavailable: {e}\n".encode(), 500
            self.send_response(status)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    port = int(os.environ[PORT_ENV])
    try:
        server = HTTPServer(("127.0.0.1", port), Handler)
    except OSError as e:
        logger.error("cannot serve /metrics on 127.0.0.1:%d: %s (METRICS_PORT moves it)", port, e.strerror or e)
        return 1
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        server.shutdown()
    return 0
