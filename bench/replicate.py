"""The read benchmarks' market, filled in minutes at any number of IPs: a few *template* IPs' crawl results
(``bench.template_market``) processed for real (``ResultProcessor``), the maintenance passes run on them (the
daily rollup, the precomputed window rows), then every table's rows of the templates copied in bulk to the other
IPs, ``INSERT … SELECT`` a thousand IPs at a time, IP ``i`` a copy of template ``(i − 1) mod K + 1``.

A copy is exactly what processing the template's results under the copy's IP id would have written (same listings,
times, clock; only the IP id and the task ids' IP part differ: ``tests/test_bench_replicate.py`` checks it), so
the read paths meet the rows the real pipeline leaves, at 10,000 IPs for the processing cost of K. Not copied:
the templates' Redis item states (the read side does not read them; a later result of a copy falls back to its
snapshots, as after a Redis loss) and the alert deliveries (none: no alert channel is configured).

The secondary indexes of the copied tables are dropped for the copy and built again after it (``db init``'s
``create_tables``): building an index from sorted rows costs a fraction of keeping it through millions of
inserts in no useful order."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import peewee
import redis

from lib.core.clock import FrozenClock, naive_utc
from lib.core.db import database, is_mysql
from lib.core.settings import Settings
from lib.market import window_rows
from lib.market.daily import roll_up_pending
from lib.market.processing import CrawlResult, ResultProcessor
from lib.market.schema import create_tables
from models import ALL_MODELS, IpMetadata, JobExecutionState
from models.base import BaseModel

from . import template_market

H = 3600.0
#: Template IPs processed for real (their rates spread over the template market's range).
TEMPLATES = 8
#: IPs copied per statement and transaction.
BATCH = 1000
#: Seconds after a crawl its result is processed (the processing clock).
DELAY = 30.0
MAP = "bench_ip_map"


def process(ip_id: int, template: int, start: float, end: float, settings: Settings, client: redis.Redis) -> int:
    """Process the template's crawls from ``start`` to ``end`` as IP ``ip_id``'s results, each ``DELAY`` after its
    crawl by the processing clock; returns the number of crawls."""
    clock = FrozenClock(start)
    processor = ResultProcessor(settings, client, clock)
    crawls = template_market.crawls(template, start, end)
    for k, crawl in enumerate(crawls):
        clock.set(crawl.crawled_at + DELAY)
        processor.apply(CrawlResult.parse(ip_id, crawl.task_id(ip_id, k), crawl.crawled_at, crawl.items, 2, None,
                                          crawl.search))
    return len(crawls)


def settle(settings: Settings, now: float) -> None:
    """The maintenance passes a deployment runs, at ``now``: the daily rollup and the precomputed window rows."""
    roll_up_pending(now)
    window_rows.update(window_rows.precomputed_windows(settings.leaderboard_precompute), now)


def add_ips(first: int, last: int, at: float) -> None:
    """IPs ``first`` to ``last`` (ids), named ``IP <id>``."""
    now = naive_utc(at)
    for lo in range(first, last + 1, BATCH):
        IpMetadata.insert_many([{"id": i, "keyword": f"IP {i}", "display_name": f"IP {i}", "weight": 1.0,
                                 "active": True, "created_at": now, "updated_at": now}
                                for i in range(lo, min(last, lo + BATCH - 1) + 1)]).execute()


def template_of(ip_id: int, templates: int) -> int:
    return (ip_id - 1) % templates + 1


def _q(name: str) -> str:
    quote = database.obj.quote
    return f"{quote[0]}{name}{quote[1]}"


def _copied_models() -> list[type[BaseModel]]:
    """Every table holding rows of an IP (an ``ip_id`` column), and the IPs' crawl execution state."""
    return [m for m in ALL_MODELS if "ip_id" in m._meta.fields] + [JobExecutionState]


def _expression(field: peewee.Field) -> str:
    """What a copy's column holds, from the template's row ``s`` and the map's row ``m``."""
    if field.name == "ip_id":
        return "m.ip_id"
    as_text = "CAST(m.ip_id AS CHAR)" if is_mysql() else "CAST(m.ip_id AS TEXT)"
    if field.name == "task_id":  # bench-<crawl>-<ip id>
        head = f"SUBSTR(s.{_q('task_id')}, 1, {template_market.TASK_HEAD})"
        return f"CONCAT({head}, {as_text})" if is_mysql() else f"{head} || {as_text}"
    if field.model is JobExecutionState and field.name == "param_key":
        return as_text
    return f"s.{_q(field.column_name)}"


def _copy_sql(model: type[BaseModel], source: str) -> str:
    fields = [f for f in model._meta.sorted_fields if not isinstance(f, peewee.AutoField)]
    columns = ", ".join(_q(f.column_name) for f in fields)
    values = ", ".join(_expression(f) for f in fields)
    if model is JobExecutionState:
        join = f"m.template = CAST(s.{_q('param_key')} AS {'SIGNED' if is_mysql() else 'INTEGER'})"
        where = f" WHERE s.{_q('collector_name')} = 'crawl_ip'"
    else:
        join, where = "m.template = s.ip_id", ""
    return (f"INSERT INTO {_q(model._meta.table_name)} ({columns}) SELECT {values} FROM {_q(source)} s "  # noqa: S608
            f"JOIN {MAP} m ON {join}{where}{' AND' if where else ' WHERE'} m.ip_id BETWEEN %s AND %s")


def _secondary_indexes(model: type[BaseModel]) -> list[str]:
    """The names of the table's indexes that ``create_tables`` builds (not the primary key)."""
    names = []
    for index in database.get_indexes(model._meta.table_name):
        if index.name.upper() != "PRIMARY" and not index.name.startswith("sqlite_autoindex"):
            names.append(index.name)
    return names


def _drop_index(table: str, name: str) -> None:
    database.execute_sql(f"DROP INDEX {_q(name)}" + (f" ON {_q(table)}" if is_mysql() else ""))


def replicate(n_ips: int, templates: int, at: float, progress: Callable[[str], Any] = print) -> None:
    """Copy the rows of IPs 1…``templates`` to IPs ``templates + 1``…``n_ips`` (created here, at ``at``)."""
    if n_ips <= templates:
        return
    models = _copied_models()
    add_ips(templates + 1, n_ips, at)
    for ip in IpMetadata.select().where(IpMetadata.id <= templates):  # weight and last crawl as processing left
        copies = list(range(ip.id + templates, n_ips + 1, templates))
        for lo in range(0, len(copies), 500):
            IpMetadata.update(weight=ip.weight, last_crawled_at=ip.last_crawled_at, updated_at=ip.updated_at) \
                .where(IpMetadata.id.in_(copies[lo:lo + 500])).execute()
    database.execute_sql(f"DROP TABLE IF EXISTS {MAP}")
    database.execute_sql(f"CREATE TABLE {MAP} (ip_id INTEGER PRIMARY KEY, template INTEGER NOT NULL)")
    for lo in range(templates + 1, n_ips + 1, 10_000):
        rows = [(i, template_of(i, templates)) for i in range(lo, min(n_ips, lo + 9_999) + 1)]
        database.cursor().executemany(f"INSERT INTO {MAP} VALUES ({database.param}, {database.param})",  # noqa: S608
                                      rows)
    database.execute_sql(f"CREATE INDEX {MAP}_template ON {MAP} (template)")
    sources = {}
    for model in models:  # the templates' rows, apart: the copies read them without scanning the growing table
        table = model._meta.table_name
        sources[model] = source = f"bench_src_{table}"
        database.execute_sql(f"DROP TABLE IF EXISTS {_q(source)}")
        database.execute_sql(f"CREATE TABLE {_q(source)} AS SELECT * FROM {_q(table)}")  # noqa: S608
        for name in _secondary_indexes(model):
            _drop_index(table, name)
    started = time.perf_counter()
    for lo in range(templates + 1, n_ips + 1, BATCH):
        hi = min(n_ips, lo + BATCH - 1)
        with database.atomic():
            for model in models:
                database.execute_sql(_copy_sql(model, sources[model]).replace("%s", database.param), (lo, hi))
        progress(f"  copied IPs {lo:,}–{hi:,} ({time.perf_counter() - started:.0f} s)")
    for source in (*sources.values(), MAP):
        database.execute_sql(f"DROP TABLE {_q(source)}")
    started = time.perf_counter()
    create_tables()  # the indexes back
    progress(f"  indexes built in {time.perf_counter() - started:.0f} s")


def fill(settings: Settings, client: redis.Redis, n_ips: int, start: float, end: float, now: float,
         templates: int = TEMPLATES, progress: Callable[[str], Any] = print) -> None:
    """The benchmark market of ``n_ips`` IPs from ``start`` to ``end``: min(``templates``, ``n_ips``) template IPs
    processed, settled at ``now`` and copied."""
    templates = min(templates, n_ips)
    add_ips(1, templates, start)
    started = time.perf_counter()
    crawls = sum(process(t, t, start, end, settings, client) for t in range(1, templates + 1))
    progress(f"  {templates} template IPs: {crawls:,} results processed in {time.perf_counter() - started:.0f} s")
    started = time.perf_counter()
    settle(settings, now)
    progress(f"  their days rolled up and window rows built in {time.perf_counter() - started:.0f} s")
    replicate(n_ips, templates, start, progress)
