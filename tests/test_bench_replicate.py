"""The read benchmarks' fast fill (``bench.replicate``): an IP copied from a template holds exactly the rows, and
reads exactly the measures, that processing the template's results under its own id gives (SQLite)."""

from typing import Any

import pytest

from bench import replicate, template_market
from lib.core.clock import naive_utc
from lib.core.redis_client import state_redis
from lib.market import window_rows
from lib.market.daily import day_of, day_series
from lib.market.retention import detail_horizon
from lib.market.windows import window_measures
from models import IpMetadata, IpWindowMeasures, JobExecutionState
from models.base import BaseModel

H = 3600.0
T_END = 1_800_000_000.0 - 1_800_000_000.0 % H
START = T_END - 4 * 24 * H
NOW = T_END - 1
TEMPLATES = 2
COPIES = 5  # IPs 3 and 5 copy template 1, IP 4 copies template 2
FRESH = COPIES + 1  # processed for real from template 2's results


@pytest.fixture
def database_url(tmp_path) -> str:
    return f"sqlite:///{tmp_path / 'db.sqlite3'}"


def rows_of(model: type[BaseModel], ip_id: int) -> list[tuple[Any, ...]]:
    """The IP's rows of the table, without the row ids and with the IP's id (and the task ids' IP part) blanked."""
    if model is JobExecutionState:
        query = model.select().where(model.param_key == str(ip_id))
    else:
        query = model.select().where(model.ip_id == ip_id)
    out = []
    for row in query.dicts():
        row.pop("id", None)
        for name in ("ip_id", "param_key"):
            if name in row:
                row[name] = None
        if "task_id" in row:
            head, _, ip = row["task_id"].rpartition("-")
            assert ip == str(ip_id), row["task_id"]
            row["task_id"] = head
        out.append(tuple(sorted(row.items(), key=lambda kv: kv[0])))
    return sorted(out, key=repr)


def test_a_copied_ip_holds_what_processing_its_template_s_results_writes(settings, db):
    client = state_redis(settings)
    replicate.fill(settings, client, COPIES, START, T_END, NOW, templates=TEMPLATES, progress=lambda _: None)
    assert IpMetadata.select().count() == COPIES
    # the same results, processed for real as a new IP, then the same maintenance passes at the same time
    replicate.add_ips(FRESH, FRESH, START)
    crawls = replicate.process(FRESH, 2, START, T_END, settings, client)
    assert crawls == len(template_market.crawls(2, START, T_END)) > 40
    replicate.settle(settings, NOW)

    copy = 4
    assert replicate.template_of(copy, TEMPLATES) == 2
    for model in replicate._copied_models():
        assert rows_of(model, copy) == rows_of(model, FRESH), model._meta.table_name
    for table in ("listing_events", "listing_sightings", "item_snapshots", "ip_stats_hourly", "ip_stats_daily",
                  "applied_results", "crawl_search_totals", "ip_window_measures"):
        model = next(m for m in replicate._copied_models() if m._meta.table_name == table)
        assert len(rows_of(model, copy)) > 0, table
    fresh, copied = IpMetadata.get_by_id(FRESH), IpMetadata.get_by_id(copy)
    assert (copied.weight, copied.last_crawled_at, copied.updated_at) == \
        (fresh.weight, fresh.last_crawled_at, fresh.updated_at)
    # a copy of the other template is not the same IP
    assert rows_of(IpWindowMeasures, 3) != rows_of(IpWindowMeasures, copy)

    # and it reads the same: every standard window's measures, from its row and computed, and its per-day series
    for hours in window_rows.STANDARD_WINDOWS:
        computed = window_measures([copy, FRESH], hours, NOW, detail_from=detail_horizon(settings, NOW))
        assert computed[copy] == computed[FRESH]
        assert window_rows.ip_measures(copy, hours, NOW) == window_rows.ip_measures(FRESH, hours, NOW) \
            == computed[copy]
    first, last = day_of(naive_utc(START)), day_of(naive_utc(NOW))
    assert day_series(copy, first, last) == day_series(FRESH, first, last) != []
