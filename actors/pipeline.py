"""process_result: applies one crawl result (logic in ``lib.market.processing``)."""

import time

import dramatiq

from lib.core.clock import get_clock, naive_utc
from lib.operations.metrics import observe_result
from lib.alerts.notify import NOTIFY_ACTOR_OPTIONS, pending_alerts

from lib.core.redis_client import state_redis
from lib.market.processing import PROCESS_RESULT_OPTIONS, CrawlResult, ResultProcessor
from lib.core.settings import get_settings


@dramatiq.actor(**PROCESS_RESULT_OPTIONS)
def process_result(ip_id: int, task_id: str, crawled_at: float, items: list, pages_crawled: int = 0,
                   errors: dict | None = None, duration: float = 0.0) -> None:
    result = CrawlResult.parse(ip_id, task_id, crawled_at, items, pages_crawled, errors)
    settings = get_settings()
    started = time.perf_counter()
    ResultProcessor(settings, state_redis()).apply(result)
    observe_result(time.perf_counter() - started, len(result.items))
    if settings.notify_webhook_urls:
        since = naive_utc(get_clock().now() - 3600)
        for alert_id in pending_alerts(ip_id, since):
            dramatiq.get_broker().get_actor(NOTIFY_ACTOR_OPTIONS["actor_name"]).send(alert_id)
