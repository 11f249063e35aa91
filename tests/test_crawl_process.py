"""crawl_ip in the real process types: a crawler stopped mid-crawl finishes it first (kills: tests/chaos)."""

import os
import signal
import subprocess
import sys
from pathlib import Path

from lib.core.db import bind_database, database
from lib.core.redis_client import state_redis
from lib.crawling.drift import DriftLog
from lib.market.schema import create_tables
from lib.messaging.in_flight import InFlight
from lib.scheduling.catalogue import Catalogue
from lib.scheduling.schedule import ScheduleStore
from lib.scheduling.tick import Scheduler
from lib.standins.simulator import market
from models import AppliedResult, CrawlSearchTotal

from .chaos.crawl_results import crawl_items
from .helpers import wait_for

ROOT = Path(__file__).parent.parent


def _applied() -> int:
    try:
        return AppliedResult.select().count()
    finally:
        database.close()


def test_crawler_stopped_mid_crawl_finishes_it_first(env, settings, broker, sim, chromium):
    """SIGTERM (a deploy, Ctrl-C) lets the crawl in flight finish with every page before the browser closes."""
    full_env = {**os.environ, **env, "MERCARI_BASE_URL": sim.url, "CHROMIUM_PATH": chromium,
                "CHROMIUM_NO_SANDBOX": "true", "CRAWLER_THREADS": "1", "WORKER_PROCESSES": "1",
                "WORKER_THREADS": "2", "WORKER_SHUTDOWN_TIMEOUT": "60s"}
    bind_database(settings.database_url_resolved)
    create_tables()
    r = state_redis(settings)
    ip = Catalogue(ScheduleStore(r), settings).add("鬼滅の刃")
    procs = [subprocess.Popen([sys.executable, "-m", "lib.cli", "run", kind], env=full_env, cwd=ROOT,
                              start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
             for kind in ("crawler", "worker")]
    try:
        sim.set_mode("slow", delay_ms=500)
        assert Scheduler(settings, r, broker).tick().enqueued == [ip.id]
        wait_for(lambda: sim.counters["pages"] >= 2, timeout=90, what="the crawl to get going")
        os.killpg(procs[0].pid, signal.SIGTERM)
        assert procs[0].wait(timeout=90) == 0
        assert sim.counters["pages"] == 10  # every page of the crawl, once: nothing was redone
        wait_for(lambda: _applied() == 1, timeout=60, what="the finished crawl's result to be applied")
        truth = {item["source_id"] for item in crawl_items("鬼滅の刃", sim.clock.now())}
        assert AppliedResult.get().items == len(truth)  # and no page went missing
        # the market's size, stored with the crawl: the site's count per search and what the pages covered
        totals = {row.status: (row.num_found, row.pages_read, row.items_read) for row in CrawlSearchTotal.select()}
        found = {label: market.total("鬼滅の刃", statuses, sim.clock.now()) for label, statuses in
                 (("on_sale", {market.ON_SALE}), ("sold", {market.SOLD_OUT, market.TRADING}))}
        pages = {label: [len(sim.truth("鬼滅の刃", statuses, n)) for n in range(1, 6)] for label, statuses in
                 (("on_sale", {market.ON_SALE}), ("sold", {market.SOLD_OUT, market.TRADING}))}
        assert totals == {label: (found[label], 5, sum(pages[label])) for label in found}
        # the crawler kept the crawl's drift record: every page from the API, with the items it holds
        [record] = DriftLog(r).recent()
        assert [(p["source"], p["items"]) for p in record["pages"]] == [("api", n) for n in
                                                                        pages["on_sale"] + pages["sold"]]
        assert InFlight(r).members() == set()
    finally:
        for proc in procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in procs:
            proc.wait(timeout=60)
        database.close()
