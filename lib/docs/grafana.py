"""``docs/operating/grafana-dashboard.json``: a Grafana dashboard over the metrics the process types export
(``lib.core.recorders``, ``lib.operations.metrics``, ``lib.crawling.drift``, and Dramatiq's own), with the alert
thresholds of docs/operating/metrics.md drawn on the panels they concern. Import it in Grafana (Dashboards → New
→ Import) and pick the Prometheus data source that scrapes the ``worker`` (``METRICS_PORT``) and the ``crawler``
(``METRICS_PORT`` + 1).

``tests/test_docs.py`` checks that every metric the code exports is queried by some panel."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

#: Grafana's dashboard JSON model version this file is written in (Grafana 10.4 and later read it).
SCHEMA_VERSION = 39
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
WIDTH = 24  # Grafana's grid


@dataclass(frozen=True)
class Query:
    expr: str
    legend: str = ""


@dataclass(frozen=True)
class Panel:
    """One panel. Parameters:
      title, description: shown on the panel.
      queries: PromQL, each with its legend.
      unit: Grafana's unit id (``s``, ``ms``, ``short``, ``percentunit``, …).
      alert_above: red from this value on (the alert of docs/operating/metrics.md; "> 0" is 1 for a count),
        drawn as a line on time series.
      alert_below: the same for a measure that alarms when low.
      kind: ``timeseries`` or ``stat``.
    """

    title: str
    description: str
    queries: tuple[Query, ...]
    unit: str = "short"
    alert_above: float | None = None
    alert_below: float | None = None
    kind: str = "timeseries"


@dataclass(frozen=True)
class Row:
    title: str
    panels: tuple[Panel, ...] = field(default_factory=tuple)


def q(expr: str, legend: str = "") -> tuple[Query, ...]:
    return (Query(expr, legend),)


def quantiles(metric: str, by: str = "") -> tuple[Query, ...]:
    """p50 and p95 of a histogram over 5 minutes (per ``by`` label when given)."""
    group = f"le, {by}" if by else "le"
    suffix = f" {{{{{by}}}}}" if by else ""
    return tuple(Query(f"histogram_quantile({p}, sum by ({group}) (rate({metric}_bucket[5m])))", f"p{int(p * 100)}"
                       + suffix) for p in (0.5, 0.95))


ROWS = (
    Row("At a glance (the alerts of docs/operating/metrics.md)", (
        Panel("Crawl tasks waiting", "animetop_scheduler_tasks_pending_in_queue: crawl tasks ready in the crawl "
              "queue. Alert above 100: the crawlers do not keep up.",
              q("max(animetop_scheduler_tasks_pending_in_queue)"), alert_above=100, kind="stat"),
        Panel("Dead letters", "animetop_queue_deadletter_len: dead-lettered messages, all queues. Alert above 0: "
              "`animetop deadletters list` says why.", q("max(animetop_queue_deadletter_len)"), alert_above=1,
              kind="stat"),
        Panel("Scheduled IPs", "animetop_scheduler_scheduled_ips: IPs in the schedule. Alert when below the "
              "number of active IPs (`animetop ip list`).", q("max(animetop_scheduler_scheduled_ips)"),
              kind="stat"),
        Panel("Crawls in flight", "animetop_crawls_in_flight: IPs with a crawl enqueued or running.",
              q("max(animetop_crawls_in_flight)"), kind="stat"),
        Panel("Crawler drift", "animetop_crawler_drift: 1 while the crawler drift alert holds (any reason). "
              "Alert above 0: the site changed under the crawler (docs/concepts/crawling.md).",
              q("max(animetop_crawler_drift)"), alert_above=1, kind="stat"),
        Panel("Page loads waiting for the rate limit", "animetop_crawl_rate_limit_waiting: page loads waiting for "
              "CRAWL_RATE_LIMIT, all crawlers. Always above 0: raise the limit or add proxies.",
              q("max(animetop_crawl_rate_limit_waiting)"), kind="stat"),
        Panel("Request budget per address", "animetop_crawl_page_loads_last_minute against "
              "animetop_crawl_budget_pages_per_minute, per address (a proxy, or direct): the budget drops by half "
              "when the site answers 429 and climbs back by one a minute. Loads at the budget all the time: add "
              "proxies.",
              q("max by (address) (animetop_crawl_page_loads_last_minute)", "{{address}} loads") +
              q("max by (address) (animetop_crawl_budget_pages_per_minute)", "{{address}} budget")),
        Panel("Requests an hour planned against the budget", "animetop_crawl_planned_requests_per_hour against "
              "animetop_crawl_plan_budget_requests_per_hour (SCHEDULER_BUDGET_SHARE of the addresses' budgets). "
              "Planned above the budget: even the longest intervals spend more (add proxies, or a longer "
              "SCHEDULER_MAX_INTERVAL).",
              q("max(animetop_crawl_planned_requests_per_hour)", "planned") +
              q("max(animetop_crawl_plan_budget_requests_per_hour)", "budget")),
        Panel("IPs the budget crawls less often", "animetop_crawl_plan_lengthened_ips: the IPs crawled less often "
              "than their own interval (heat and flow) to stay within the request budget.",
              q("max(animetop_crawl_plan_lengthened_ips)"), kind="stat"),
        Panel("Sold pages read with spare requests", "animetop_crawl_plan_sold_pages: the sold pages the crawls of "
              "the IPs whose sales outrun SCHEDULER_PAGES_SOLD read with the budget's spare requests, at most "
              "SCHEDULER_PAGES_SOLD_MAX; 0: none to spare, the cap.",
              q("max(animetop_crawl_plan_sold_pages)"), kind="stat"),
        Panel("New listings the pages reach", "animetop_crawl_new_listings_reached_share: of the IPs' new listings "
              "(weighted by their flows), the share their last crawls' on-sale pages reached back to the crawl "
              "before; the rest is estimated (docs/concepts/measures.md). Falling: the busiest IPs outrun their "
              "page cap.", q("max(animetop_crawl_new_listings_reached_share)"), unit="percentunit", kind="stat"),
    )),
    Row("Crawls and results", (
        Panel("Time to apply one crawl result", "animetop_pipeline_processing_duration_seconds (worker). Alert: "
              "p95 above 30 s.", quantiles("animetop_pipeline_processing_duration_seconds"), unit="s",
              alert_above=30),
        Panel("Time of one crawl (all pages)", "animetop_crawler_request_duration_seconds (crawler). Alert: p95 "
              "above 60 s.", quantiles("animetop_crawler_request_duration_seconds"), unit="s", alert_above=60),
        Panel("Search pages read per minute, by outcome", "animetop_crawl_pages_total: ok, timeout, blocked, "
              "throttled (429), network, parse, unknown, rate_limited (no turn under CRAWL_RATE_LIMIT). Watch "
              "`blocked` and `throttled` rising.",
              q("sum by (outcome) (rate(animetop_crawl_pages_total[5m])) * 60", "{{outcome}}")),
        Panel("Items applied per second", "animetop_items_processed_total: items applied to the state machine. "
              "Flat while crawling: results are not being applied.",
              q("sum(rate(animetop_items_processed_total[5m]))", "items/s")),
        Panel("Queue depth", "animetop_queue_depth: ready, delayed and dead messages per queue.",
              q("sum by (queue, state) (animetop_queue_depth)", "{{queue}} {{state}}")),
        Panel("Rate-limit waiting time per second", "animetop_crawl_rate_limit_wait_seconds_total: time this "
              "crawler's page loads waited for CRAWL_RATE_LIMIT (seconds waited per second).",
              q("sum by (instance) (rate(animetop_crawl_rate_limit_wait_seconds_total[5m]))", "{{instance}}"),
              unit="s"),
        Panel("Tab recoveries per hour, by step", "animetop_crawler_tab_recoveries_total: steps taken to recover a "
              "tab that stopped rendering. Watch `browser_restart` rising.",
              q("sum by (step) (increase(animetop_crawler_tab_recoveries_total[1h]))", "{{step}}")),
    )),
    Row("Crawler drift signals (the latest crawls)", (
        Panel("Pages by source", "animetop_crawler_recent_pages: pages of the latest crawls read from the API or "
              "from the DOM. Watch `dom` rising.", q("max by (source) (animetop_crawler_recent_pages)", "{{source}}")),
        Panel("Anomalies by kind", "animetop_crawler_recent_anomalies: anomalies in the latest crawls.",
              q("max by (kind) (animetop_crawler_recent_anomalies)", "{{kind}}")),
        Panel("Page fill", "animetop_crawler_page_fill_ratio: items per page that had a next page, over 120. The "
              "drift alert starts under 108 of 120 (0.9).", q("max(animetop_crawler_page_fill_ratio)", "fill"),
              unit="percentunit", alert_below=0.9),
        Panel("Listings about the crawled IP", "animetop_crawler_recent_listings: listings of the latest crawls "
              "whose titles name the crawled IP's keyword or an alias (matched), and the others (missed: the "
              "site's padding, not counted). Watch the share moving.",
              q("max by (relevance) (animetop_crawler_recent_listings)", "{{relevance}}")),
        Panel("Drift alert, by reason", "animetop_crawler_drift: 1 while the alert holds for that reason.",
              q("max by (reason) (animetop_crawler_drift)", "{{reason}}"), alert_above=1),
    )),
    Row("Dramatiq messages", (
        Panel("Messages processed per second, by actor", "dramatiq_messages_total.",
              q("sum by (actor_name) (rate(dramatiq_messages_total[5m]))", "{{actor_name}}")),
        Panel("Errors, retries and dead letters per minute", "dramatiq_message_errors_total, "
              "dramatiq_message_retries_total, dramatiq_message_rejects_total (dead-lettered).",
              (Query("sum by (actor_name) (rate(dramatiq_message_errors_total[5m])) * 60", "errors {{actor_name}}"),
               Query("sum by (actor_name) (rate(dramatiq_message_retries_total[5m])) * 60",
                     "retries {{actor_name}}"),
               Query("sum by (actor_name) (rate(dramatiq_message_rejects_total[5m])) * 60",
                     "dead-lettered {{actor_name}}"))),
        Panel("Messages in progress", "dramatiq_messages_inprogress (being processed) and "
              "dramatiq_delayed_messages_inprogress (delayed, held in memory), by actor.",
              (Query("sum by (actor_name) (dramatiq_messages_inprogress)", "running {{actor_name}}"),
               Query("sum by (actor_name) (dramatiq_delayed_messages_inprogress)", "delayed {{actor_name}}"))),
        Panel("Message duration, by actor", "dramatiq_message_duration_milliseconds.",
              quantiles("dramatiq_message_duration_milliseconds", "actor_name"), unit="ms"),
    )),
)


def thresholds(panel: Panel) -> dict[str, Any]:
    if panel.alert_below is not None:
        steps = [{"color": "red", "value": None}, {"color": "green", "value": panel.alert_below}]
    elif panel.alert_above is not None:
        steps = [{"color": "green", "value": None}, {"color": "red", "value": panel.alert_above}]
    else:
        steps = [{"color": "green", "value": None}]
    return {"mode": "absolute", "steps": steps}


def panel_json(panel: Panel, panel_id: int, x: int, y: int, w: int, h: int) -> dict[str, Any]:
    defaults: dict[str, Any] = {"unit": panel.unit, "thresholds": thresholds(panel)}
    if panel.kind == "timeseries":
        alerting = panel.alert_above is not None or panel.alert_below is not None
        defaults["custom"] = {"thresholdsStyle": {"mode": "line" if alerting else "off"}}
        options: dict[str, Any] = {"legend": {"displayMode": "list", "placement": "bottom"},
                                   "tooltip": {"mode": "multi"}}
    else:
        defaults["color"] = {"mode": "thresholds"}
        options = {"colorMode": "background", "graphMode": "area", "reduceOptions": {"calcs": ["lastNotNull"]}}
    return {
        "id": panel_id, "type": panel.kind, "title": panel.title, "description": panel.description,
        "datasource": DATASOURCE, "gridPos": {"x": x, "y": y, "w": w, "h": h},
        "fieldConfig": {"defaults": defaults, "overrides": []}, "options": options,
        "targets": [{"refId": chr(ord("A") + i), "datasource": DATASOURCE, "expr": query.expr,
                     "legendFormat": query.legend} for i, query in enumerate(panel.queries)],
    }


def dashboard() -> dict[str, Any]:
    panels: list[dict[str, Any]] = []
    y = 0
    for row in ROWS:
        panels.append({"id": len(panels) + 1, "type": "row", "title": row.title, "collapsed": False,
                       "gridPos": {"x": 0, "y": y, "w": WIDTH, "h": 1}, "panels": []})
        y += 1
        stats = all(p.kind == "stat" for p in row.panels)
        w, h = (WIDTH // len(row.panels), 5) if stats else (WIDTH // 2, 8)
        for i, panel in enumerate(row.panels):
            x = (i * w) % WIDTH
            if i and x == 0:
                y += h
            panels.append(panel_json(panel, len(panels) + 1, x, y, w, h))
        y += h
    return {
        "title": "animetop", "uid": "animetop", "description": "The animetop process types' metrics "
        "(docs/operating/metrics.md). Generated by python -m lib.docs.generate.",
        "tags": ["animetop", "dramatiq"], "timezone": "browser", "editable": True, "graphTooltip": 1,
        "schemaVersion": SCHEMA_VERSION, "version": 1, "refresh": "1m",
        "time": {"from": "now-6h", "to": "now"},
        "templating": {"list": [{"name": "datasource", "label": "Prometheus", "type": "datasource",
                                 "query": "prometheus", "current": {}, "hide": 0, "refresh": 1}]},
        "annotations": {"list": []},
        "panels": panels,
    }


def dashboard_json() -> str:
    return json.dumps(dashboard(), indent=2, ensure_ascii=False) + "\n"
