"""crawl_ip: one IP's on-sale and sold search pages, as deep as its page plan says, in headless Chromium (logic in
``lib.crawling``)."""

import asyncio
import logging

from lib.core.recorders import observe_crawl
from lib.core.redis_client import state_redis
from lib.core.settings import get_settings
from lib.crawling.crawl import process_crawler
from lib.crawling.drift import DriftLog
from lib.crawling.page_plan import plan_for
from lib.messaging.routes import CRAWL_IP

from .pipeline import process_result

logger = logging.getLogger(__name__)


@CRAWL_IP.declare(max_retries=3, min_backoff=30_000, time_limit=600_000,
                  idempotency_key=lambda ip_id, keyword, task_id, *_, **__: task_id,
                  releases_in_flight=lambda ip_id, *_, **__: ip_id)
async def crawl_ip(ip_id: int, keyword: str, task_id: str, aliases: list[str] | None = None) -> None:
    settings = get_settings()
    plan = await asyncio.to_thread(plan_for, state_redis(settings), ip_id, settings)
    # aliases: the IP's other names, as the scheduler read them (lib.segments.relevance)
    result = await process_crawler(settings).crawl(ip_id, keyword, task_id, tuple(aliases or ()), plan)
    drift = result.pop("drift")  # the crawler's own record, not part of the result message
    observe_crawl(result["duration"], result["pages_crawled"], result["errors"])
    try:
        DriftLog(state_redis(settings)).record(drift)
    except Exception as e:  # drift signals must never cost a crawl its result
        logger.warning("could not record the crawl's drift signals: %s", e)
    process_result.send(**result)
