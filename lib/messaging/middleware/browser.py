"""Closes the crawler's browser when a worker stops, so no Chromium outlives its worker.

After the worker threads have finished their messages, not before: a browser closed at the start of the
shutdown would fail the crawls still in flight (retried, or sent on with pages missing)."""

from __future__ import annotations

import logging

from dramatiq import Broker, Middleware, Worker

logger = logging.getLogger(__name__)


class BrowserShutdown(Middleware):
    def after_worker_shutdown(self, broker: Broker, worker: Worker) -> None:
        from dramatiq.asyncio import get_event_loop_thread

        from lib.crawling import crawl

        if crawl._crawler is None:
            return
        loop = get_event_loop_thread()
        try:
            if loop is not None:
                loop.run_coroutine(crawl._crawler.close())
        except Exception as e:
            logger.warning("could not close the browser cleanly: %s", e)
        crawl._crawler = None
