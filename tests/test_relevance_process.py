"""Aliases from the operator to the counts, in the real process types: an IP's alias stored in the database reaches
the crawler process through the scheduler's crawl message, the crawler (Chromium) keeps the listings whose titles
name the keyword or the alias and stops each search at its first page with neither, and the worker stores what
was kept and what was left out (docs/concepts/crawling.md, "What is counted")."""

import os
import signal
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from lib.core.db import bind_database, database
from lib.core.redis_client import state_redis
from lib.crawling.drift import DriftLog
from lib.market.schema import create_tables
from lib.scheduling.catalogue import Catalogue
from lib.scheduling.schedule import ScheduleStore
from lib.scheduling.tick import Scheduler
from lib.standins.simulator import MarketSimulator
from lib.standins.simulator.model import DAY, MarketModel
from lib.standins.simulator.traits import load_traits
from models import AppliedResult, CrawlSearchTotal, ItemSnapshot

from .helpers import wait_for

ROOT = Path(__file__).parent.parent
T = 1_780_239_600.0 + 10 * DAY
NICHE, ALIAS = "ハイキュー!!", "ポケモン"  # the alias names a franchise the site pads the niche IP's pages with
PAGES = 4
SEARCHES = {"on_sale": {"on_sale"}, "sold": {"sold_out", "trading"}}


@pytest.fixture
def niche_market():
    traits = load_traits()
    traits = replace(traits, search=replace(traits.search, empty_answer_share=0.0))
    server = MarketSimulator(at=T, speed=0, market="realistic", model=MarketModel(5, traits, sizes={NICHE: 0.3}),
                             rate_limit=False).start()
    yield server
    server.stop()


def _applied() -> int:
    try:
        return AppliedResult.select().count()
    finally:
        database.close()


def test_an_alias_reaches_the_crawler_process_and_decides_what_is_counted(env, settings, broker, niche_market,
                                                                          chromium):
    sim = niche_market
    # what each search's pages hold, and which listings name the keyword or the alias (the simulator's titles
    # spell both as the catalogue does)
    pages = {label: [sim.truth(NICHE, statuses, n) for n in range(1, PAGES + 1)] for label, statuses in
             SEARCHES.items()}

    def named(item: dict) -> bool:
        return NICHE in item["name"] or ALIAS in item["name"]

    read: dict[str, list[dict]] = {}
    last: dict[str, int] = {}  # pages read: up to the first that names neither
    for label, search in pages.items():
        last[label] = next((n for n, page in enumerate(search, 1) if page and not any(named(i) for i in page)),
                           PAGES)
        read[label] = [item for page in search[:last[label]] for item in page]
    kept = {label: {i["id"] for i in items if named(i)} for label, items in read.items()}
    by_alias = {i["id"] for items in read.values() for i in items if i["truth"]["padded"] and named(i)}
    assert by_alias  # the alias counts some of the padding: proof that it reached the crawler

    full_env = {**os.environ, **env, "MERCARI_BASE_URL": sim.url, "CHROMIUM_PATH": chromium,
                "CHROMIUM_NO_SANDBOX": "true", "CRAWLER_THREADS": "1", "WORKER_PROCESSES": "1",
                "WORKER_THREADS": "2", "SCHEDULER_PAGES_ON_SALE": str(PAGES), "SCHEDULER_PAGES_SOLD": str(PAGES)}
    bind_database(settings.database_url_resolved)
    create_tables()
    r = state_redis(settings)
    ip = Catalogue(ScheduleStore(r), settings).add(NICHE, aliases=[ALIAS])
    procs = [subprocess.Popen([sys.executable, "-m", "lib.cli", "run", kind], env=full_env, cwd=ROOT,
                              start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
             for kind in ("crawler", "worker")]
    try:
        assert Scheduler(settings, r, broker).tick().enqueued == [ip.id]
        wait_for(lambda: _applied() == 1, timeout=180, what="the crawl's result to be applied")
        stored = {s.source_id for s in ItemSnapshot.select()}
        assert stored == kept["on_sale"] | kept["sold"]
        totals = {t.status: (t.pages_read, t.items_read, t.items_missed) for t in CrawlSearchTotal.select()}
        assert totals == {label: (last[label], len(kept[label]), len({i["id"] for i in read[label]} - kept[label]))
                          for label in SEARCHES}
        [record] = DriftLog(r).recent()
        assert [(p["matched"], p["missed"]) for p in record["pages"]] == [
            (sum(named(i) for i in page), sum(not named(i) for i in page))
            for label in SEARCHES for page in pages[label][:last[label]]]
    finally:
        for proc in procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in procs:
            proc.wait(timeout=60)
        database.close()
