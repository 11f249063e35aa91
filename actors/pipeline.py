"""process_result: applies one crawl result (logic in ``lib.market.processing``)."""

import time
from typing import Any

from lib.alerts.notify import pending_alerts
from lib.core.clock import get_clock, naive_utc
from lib.core.recorders import observe_result
from lib.core.redis_client import state_redis
from lib.core.settings import get_settings
from lib.market.processing import CrawlResult, ResultProcessor
from lib.messaging.routes import PROCESS_RESULT

from .notify import notify_alert


# Idempotent by task id, one result of an IP at a time, and enough retries with backoff to ride out a
# database outage of minutes.
@PROCESS_RESULT.declare(idempotency_key=lambda ip_id, task_id, *_, **__: f"task:{task_id}",
                        lock_key=lambda ip_id, *_, **__: f"ip:{ip_id}", max_retries=8, time_limit=300_000)
def process_result(ip_id: int, task_id: str, crawled_at: float, items: list[Any], pages_crawled: int = 0,
                   errors: dict[str, str] | None = None, duration: float = 0.0,
                   search: dict[str, Any] | None = None, relevance: dict[str, Any] | None = None,
                   checks: dict[str, str] | None = None) -> None:
    result = CrawlResult.parse(ip_id, task_id, crawled_at, items, pages_crawled, errors, search, relevance, checks)
    settings = get_settings()
    started = time.perf_counter()
    ResultProcessor(settings, state_redis()).apply(result)
    observe_result(time.perf_counter() - started, len(result.items))
    if settings.notify_webhook_urls:
        since = naive_utc(get_clock().now() - 3600)
        for alert_id in pending_alerts(ip_id, since):
            notify_alert.send(alert_id)
