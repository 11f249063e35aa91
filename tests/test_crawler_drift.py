"""Crawler drift: per-page records from real crawls in Chromium, kept in Redis, shown in status and metrics,
and the "crawler drift" alert when the API path disappears, pages fall short or cells lose their price."""

import asyncio
import logging

import pytest
import redis

from lib.core import keys
from lib.core.redis_client import connect, state_redis
from lib.core.settings import load_settings
from lib.crawling import drift
from lib.crawling.crawl import Crawler
from lib.crawling.drift import DriftLog, assess, metric_families, render_status, status_section
from lib.crawling.listings import api_anomalies

from .conftest import STATE_DB
from .helpers import RedisServer, simulator_crawl_env

KEYWORD = "呪術廻戦"


@pytest.fixture
def crawl_env(env, sim, chromium):
    return simulator_crawl_env(env, sim, chromium, SCHEDULER_PAGES_ON_SALE="1", SCHEDULER_PAGES_SOLD="1")


def crawls(settings, count: int) -> list[dict]:
    async def go():
        crawler = Crawler.from_settings(settings)
        try:
            return [await crawler.crawl(1, KEYWORD, f"t-{n}") for n in range(count)]
        finally:
            await crawler.close()

    return asyncio.run(go())


def page(source="api", items=120, has_next=True, **anomalies):
    return {"status": "on_sale", "page": 1, "source": source, "items": items, "has_next": has_next,
            "anomalies": anomalies}


def test_the_alert_needs_the_signal_in_every_one_of_the_latest_crawls():
    dom = {"pages": [page("dom", api_missing=1), page("dom", api_missing=1)]}
    healthy = {"pages": [page(), page()]}
    assert assess([dom] * drift.CRAWLS) == ["api_path_missing"]
    assert assess([dom] * (drift.CRAWLS - 1)) == []
    assert assess([dom] * (drift.CRAWLS - 1) + [healthy]) == []
    assert assess([{"pages": [page("dom", api_missing=1, items=0, has_next=False)]}] * drift.CRAWLS) == []
    short = {"pages": [page(items=59), page(items=20, has_next=False)]}  # a last page may be short
    assert assess([short] * drift.CRAWLS) == ["items_per_page_low"]
    # pages that stop at their first lazily loaded part (half a page) are short too
    assert assess([{"pages": [page(items=60), page(items=60)]}] * drift.CRAWLS) == ["items_per_page_low"]
    # a page with a next page holds a few short of 120 (the site drops the listings it filters): not short
    assert assess([{"pages": [page(items=116), page(items=108), page(items=3, has_next=False)]}] * drift.CRAWLS) == []
    assert assess([{"pages": [page(items=107), page(items=107)]}] * drift.CRAWLS) == ["items_per_page_low"]
    priceless = {"pages": [page(cross_checked=20, cell_without_price=3)]}  # 15% of the cells read
    assert assess([priceless] * drift.CRAWLS) == ["cells_without_price"]
    assert assess([{"pages": [page(cross_checked=20, cell_without_price=2)]}] * drift.CRAWLS) == []


def test_api_anomalies_name_fields_missing_of_a_new_type_and_unknown_statuses():
    good = {"id": "m1", "name": "x", "price": "300", "status": "ITEM_STATUS_ON_SALE", "created": "1",
            "updated": "1", "thumbnails": [], "itemType": "ITEM_TYPE_MERCARI"}
    payload = {"meta": {"numFound": 3, "nextPageToken": ""},
               "items": [good, {**good, "price": 300}, {**good, "status": "ITEM_STATUS_STOP"},
                         {k: v for k, v in good.items() if k != "name"}]}
    assert dict(api_anomalies(payload)) == {"api_field_type:meta.numFound": 1, "api_field_type:price": 1,
                                            "api_status_unknown:ITEM_STATUS_STOP": 1, "api_field_missing:name": 1}
    assert not api_anomalies({"meta": {"numFound": "1", "nextPageToken": ""}, "items": [good]})


def test_taking_the_api_path_away_raises_the_drift_alert(crawl_env, sim, settings):
    dom_only = load_settings({**crawl_env, "MERCARI_API_PATTERN": r"/v9/renamed:search"})
    log = DriftLog(state_redis(settings))
    for result in crawls(dom_only, drift.CRAWLS):
        assert [p["source"] for p in result["drift"]["pages"]] == ["dom", "dom"]
        # still read in full, from the DOM
        assert len(result["items"]) == sum(len(sim.truth(KEYWORD, statuses, 1))
                                           for statuses in ({"on_sale"}, {"sold_out", "trading"}))
        reasons = log.record(result["drift"])
    assert reasons == ["api_path_missing"]
    section = status_section(state_redis(settings))
    assert section["pages_by_source"] == {"dom": 2 * drift.CRAWLS} and section["anomalies"]["api_missing"] == 6
    assert "ALERT crawler drift: api_path_missing" in "\n".join(render_status(section))
    gauges = {(m.name, tuple(s.labels.values())): s.value for m in metric_families(state_redis(settings))
              for s in m.samples}
    assert gauges[("animetop_crawler_drift", ("api_path_missing",))] == 1
    assert gauges[("animetop_crawler_drift", ("cells_without_price",))] == 0
    assert gauges[("animetop_crawler_recent_pages", ("dom",))] == 6
    # the API path back: the alert clears with the next crawl
    [healthy] = crawls(load_settings(crawl_env), 1)
    assert [p["source"] for p in healthy["drift"]["pages"]] == ["api", "api"]
    assert log.record(healthy["drift"]) == []


def test_pages_short_of_120_count_nothing_and_pages_cut_short_raise_the_drift_alert(crawl_env, sim, settings):
    """On the DOM path: pages a few listings short of 120 with a next page (the site drops the listings it
    filters) are whole, no signal; pages that stop rendering after 40 listings are each a ``short_page``, and
    crawls of them raise ``items_per_page_low``."""
    dom_only = load_settings({**crawl_env, "MERCARI_API_PATTERN": r"/v9/renamed:search"})
    log = DriftLog(state_redis(settings))
    [whole] = crawls(dom_only, 1)
    assert [p["items"] for p in whole["drift"]["pages"]] == [
        len(sim.truth(KEYWORD, statuses, 1)) for statuses in ({"on_sale"}, {"sold_out", "trading"})]
    assert all(set(p["anomalies"]) <= {"api_missing", "dom_gap"} for p in whole["drift"]["pages"])
    sim.set_mode("cut_short")
    [cut] = crawls(dom_only, 1)
    assert [(p["items"], p["has_next"], p["anomalies"].get("short_page")) for p in cut["drift"]["pages"]] == \
        [(40, True, 1)] * 2
    for record in (whole["drift"], cut["drift"], cut["drift"]):
        assert "items_per_page_low" not in log.record(record)
    assert "items_per_page_low" in log.record(cut["drift"])  # the last three crawls: pages cut short
    assert status_section(state_redis(settings))["anomalies"]["short_page"] == 2 * drift.CRAWLS


@pytest.mark.parametrize("path", ["api", "dom"])
def test_cells_losing_their_price_raise_the_drift_alert(crawl_env, sim, settings, path):
    """On the API path the cross-check's sample sees it; on the DOM path every cell does (prices are then
    read off the image label)."""
    settings_ = load_settings({**crawl_env, **({"MERCARI_API_PATTERN": r"/v9/renamed:search"}
                                                if path == "dom" else {})})
    sim.set_mode("priceless_cells")
    log = DriftLog(state_redis(settings))
    for result in crawls(settings_, drift.CRAWLS):
        anomalies = result["drift"]["pages"][0]["anomalies"]
        read = len(sim.truth(KEYWORD, {"on_sale"}, 1)) if path == "dom" else anomalies["cross_checked"]
        assert anomalies["cell_without_price"] == read
        assert all(item["price"] is not None or item["price_flag"] for item in result["items"])
        reasons = log.record(result["drift"])
    assert "cells_without_price" in reasons


def test_a_record_the_state_cannot_take_is_written_with_the_next_crawls(tmp_path, caplog):
    """Redis down during a crawl (a restart, a failover): the crawl's drift record is kept in the process with one
    WARNING, and written with the next crawl's once Redis is back, in crawl order; none lost."""
    server = RedisServer(tmp_path / "state").start()
    try:
        client = connect(server.url)
        log = DriftLog(client)
        first, during, after = ({"pages": [page(items=n)]} for n in (117, 118, 119))
        assert log.record(first) == []
        server.kill()
        caplog.set_level(logging.WARNING)
        assert log.record(during) == []  # no error: kept for the next crawl
        [warning] = [r for r in caplog.records if r.levelno >= logging.WARNING]
        assert warning.levelno == logging.WARNING and "1 crawl drift record(s) kept" in warning.getMessage()
        server.start()  # its append-only file brings the first record back
        assert log.record(after) == []
        assert log.recent() == [after, during, first]
        assert log.record(first) == [] and len(log.recent()) == 4  # and nothing is written twice
        assert [r for r in caplog.records if r.levelno >= logging.WARNING] == [warning]
    finally:
        server.stop()


def test_an_error_no_retry_cures_is_the_callers_and_keeps_nothing(redis_server, caplog):
    """A non-transient error (here the drift key holding another type) is raised as before, for crawl_ip's
    WARNING, and the record is not kept to be written again."""
    client = connect(f"{redis_server}/{STATE_DB}")
    client.delete(keys.CRAWLER_DRIFT)
    client.set(keys.CRAWLER_DRIFT, "not a list")
    try:
        with pytest.raises(redis.ResponseError):
            DriftLog(client).record({"pages": [page()]})
        client.delete(keys.CRAWLER_DRIFT)
        assert DriftLog(client).record({"pages": [page(items=119)]}) == []
        assert DriftLog(client).recent() == [{"pages": [page(items=119)]}]
    finally:
        client.delete(keys.CRAWLER_DRIFT)
