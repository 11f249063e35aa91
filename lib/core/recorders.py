"""The counters and histograms the application records where the work happens: the crawler (pages, rate-limit
waits, tab recoveries), the crawl actor and the result path.

Recording is off until ``start_recording``, which the metrics middleware (``lib.messaging.middleware.metrics``)
calls when a worker process boots: a script, a benchmark or a command that never boots the broker records
nothing. ``lib.operations.metrics`` serves what was recorded, with the gauges read at scrape time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from prometheus_client import Counter, Histogram


@dataclass(frozen=True)
class Recorders:
    """The recorders of one worker process.

    Parameters:
      pipeline: time to apply one crawl result.
      crawl: time of one crawl (all its pages).
      pages: search pages read, by outcome.
      items: crawled items applied to the state machine.
      rate_wait: time page loads waited for the fleet-wide CRAWL_RATE_LIMIT.
      recoveries: steps taken to recover a tab that stopped rendering.
    """

    pipeline: Histogram
    crawl: Histogram
    pages: Counter
    items: Counter
    rate_wait: Counter
    recoveries: Counter


_recorders: Recorders | None = None


def start_recording() -> None:
    """Create this process's recorders. prometheus_client is imported here, not before: it chooses its
    multiprocess mode when imported, from the directory Dramatiq's middleware has set by then."""
    global _recorders
    import prometheus_client as prom

    registry = prom.CollectorRegistry()
    _recorders = Recorders(
        pipeline=prom.Histogram("animetop_pipeline_processing_duration_seconds",
                                "Time to apply one crawl result.", registry=registry,
                                buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)),
        crawl=prom.Histogram("animetop_crawler_request_duration_seconds", "Time of one crawl (all its pages).",
                             registry=registry, buckets=(1, 2.5, 5, 10, 20, 30, 60, 120, 300)),
        pages=prom.Counter("animetop_crawl_pages_total", "Search pages read, by outcome.", ["outcome"],
                           registry=registry),
        items=prom.Counter("animetop_items_processed_total", "Crawled items applied to the state machine.",
                           registry=registry),
        rate_wait=prom.Counter("animetop_crawl_rate_limit_wait_seconds_total",
                               "Time page loads waited for the fleet-wide CRAWL_RATE_LIMIT.", registry=registry),
        recoveries=prom.Counter("animetop_crawler_tab_recoveries_total",
                                "Steps taken to recover a tab that stopped rendering (lib/crawling/recovery.py).",
                                ["step"], registry=registry),
    )


def observe_crawl(seconds: float, pages_ok: int, errors: dict[str, str]) -> None:
    if _recorders is None:
        return
    _recorders.crawl.observe(seconds)
    if pages_ok:
        _recorders.pages.labels("ok").inc(pages_ok)
    for kind in errors.values():
        _recorders.pages.labels(kind).inc()


def observe_rate_wait(seconds: float) -> None:
    if _recorders is None:
        return
    _recorders.rate_wait.inc(seconds)


def observe_tab_recovery(step: str) -> None:
    if _recorders is None:
        return
    _recorders.recoveries.labels(step).inc()


def observe_result(seconds: float, items: int) -> None:
    if _recorders is None:
        return
    _recorders.pipeline.observe(seconds)
    _recorders.items.inc(items)
