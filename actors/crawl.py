"""crawl_ip: one IP's 5 on-sale + 5 sold search pages in headless Chromium (logic in ``lib.crawling``)."""

from lib.core.settings import get_settings
from lib.crawling.crawl import process_crawler
from lib.messaging.routes import CRAWL_IP
from lib.operations.metrics import observe_crawl

from .pipeline import process_result


@CRAWL_IP.declare(max_retries=3, min_backoff=30_000, time_limit=600_000,
                  idempotency_key=lambda ip_id, keyword, task_id: task_id,
                  releases_in_flight=lambda ip_id, *_, **__: ip_id)
async def crawl_ip(ip_id: int, keyword: str, task_id: str) -> None:
    result = await process_crawler(get_settings()).crawl(ip_id, keyword, task_id)
    observe_crawl(result["duration"], result["pages_crawled"], result["errors"])
    process_result.send(**result)
