"""Crawler drift: signs that jp.mercari.com changed under the crawler, from each crawl's per-page records.

Each crawl's drift record (``Crawler.crawl()['drift']``: per page, the source read — ``api`` or ``dom`` —, its
items, whether it had a next page, and its anomalies) is kept in a short Redis list. From the latest
``CRAWLS`` records the operator alert "crawler drift" is raised when, in every one of them:

- ``api_path_missing``: no page came from the API while pages rendered items (the API was renamed or
  reshaped: ``MERCARI_API_PATTERN`` no longer matches, the crawler reads the DOM);
- ``items_per_page_low``: pages that had a next page held on average less than ``MIN_FILL`` of ``PAGE_SIZE``
  (``FULL_PAGE_MIN``: what such a page holds once the site dropped the few listings it filters; pages that
  routinely stop at their first lazily loaded part, half a page, are well under it);
- ``cells_without_price``: more than ``MAX_PRICELESS`` of the cells read had no price element (the price
  markup changed; prices are then read off the image label, or missing);
- ``match_share_moved``: the share of the listings read whose titles are about the crawled IP (its keyword or an
  alias, ``lib.segments.relevance``) moved by ``SHARE_MOVE`` or more from that IP's usual share (an exponentially
  weighted mean over its earlier crawls, ``SHARE_WEIGHT`` to the newest, used once it has ``SHARE_MIN_CRAWLS``):
  the site pads its pages differently, its titles are read wrongly, or its search answers other listings.

The signals show as Prometheus gauges (``animetop_crawler_*``, read from Redis at scrape time), in
``animetop status``, and as an ERROR log line when the alert turns on.

A record the state cannot take (Redis restarting, a Redis Cluster failing over: a transient state error, see
``lib.core.state_errors``) is kept in the process and written with the next crawl's, oldest first, with one WARNING;
a crawl never waits on the state for longer than the client's own patience (its actor runs on the crawler's event
loop). State outages: ``docs/concepts/architecture.md`` (Messages and reliability).
"""

from __future__ import annotations

import json
import logging
import threading
import weakref
from collections import Counter, deque
from typing import TYPE_CHECKING, Any

import redis
from redis.cluster import RedisCluster

from lib.core import keys
from lib.core.state_errors import is_transient, ride_out
from lib.crawling.selectors import FULL_PAGE_MIN, PAGE_SIZE

if TYPE_CHECKING:
    from prometheus_client.metrics_core import Metric

logger = logging.getLogger(__name__)

#: Crawls kept in Redis, and the crawls in a row a signal must hold in to raise the alert.
KEEP, CRAWLS = 50, 3
MIN_FILL = FULL_PAGE_MIN / PAGE_SIZE
MAX_PRICELESS = 0.1
#: The match share's move that counts, the weight of the newest crawl in an IP's usual share, and the crawls an IP
#: needs before its usual share is compared with.
SHARE_MOVE, SHARE_WEIGHT, SHARE_MIN_CRAWLS = 0.3, 0.2, 5


#: Records a state outage kept from Redis, oldest first, per state client (so per state database): at most KEEP.
#: A crawl's drift record as the crawler builds it and as it is stored in Redis (JSON): data at the edge, read
#: by key in ``crawl_summary`` only.
DriftRecord = dict[str, Any]

_unwritten: weakref.WeakKeyDictionary[Any, deque[str]] = weakref.WeakKeyDictionary()
_unwritten_lock = threading.Lock()


class DriftLog:
    """The latest crawls' drift records in Redis.

    Parameters:
      client: the application-state Redis client.
    """

    def __init__(self, client: redis.Redis) -> None:
        self.client = client

    def record(self, drift: DriftRecord) -> list[str]:
        """Keep one crawl's record, with any that a state outage kept back before; returns the alert's reasons
        now (logged when they newly appear). While the state is unavailable the record is kept for the next crawl
        (see the module's docstring) and the answer is []."""
        with _unwritten_lock:
            unwritten = _unwritten.setdefault(self.client, deque(maxlen=KEEP))
            drift = self._with_usual_share(drift)
            unwritten.append(json.dumps(drift, ensure_ascii=False))
            try:
                return self._write(unwritten)
            except Exception as e:
                if not is_transient(e):
                    if unwritten:
                        unwritten.pop()  # as before: the caller says it could not record it
                    raise
                if unwritten:
                    logger.warning("the state is unavailable, %d crawl drift record(s) kept for the next crawl "
                                   "(%s: %s)", len(unwritten), type(e).__name__, str(e)[:200])
                else:  # written: only the alert's assessment after it met the outage
                    logger.warning("the state became unavailable once the crawl's drift record was written; the "
                                   "drift alert is assessed with the next crawl (%s: %s)", type(e).__name__,
                                   str(e)[:200])
                return []

    def _with_usual_share(self, drift: DriftRecord) -> DriftRecord:
        """The record with its crawl's match share and its IP's usual share before it (``relevance``), the IP's
        usual share brought up to date. A state the share cannot be read from or written to leaves the record
        without the usual share (the signal skips it), never without the record."""
        matched, missed = _matched_missed(drift.get("pages") or [])
        if matched + missed == 0 or drift.get("ip_id") is None:
            return drift
        share = matched / (matched + missed)
        field = str(drift["ip_id"])
        usual: float | None = None
        try:
            raw = self.client.hget(keys.CRAWLER_MATCH_SHARE, field)
            before = json.loads(raw) if raw else None
            if before and before.get("crawls", 0) >= SHARE_MIN_CRAWLS:
                usual = float(before["share"])
            after = ({"share": share, "crawls": 1} if not before else
                     {"share": (1 - SHARE_WEIGHT) * float(before["share"]) + SHARE_WEIGHT * share,
                      "crawls": int(before.get("crawls", 0)) + 1})
            self.client.hset(keys.CRAWLER_MATCH_SHARE, field, json.dumps(after))
        except Exception as e:
            if not is_transient(e):
                raise
            logger.warning("the state is unavailable: the crawl's match share is not compared (%s: %s)",
                           type(e).__name__, str(e)[:200])
        return {**drift, "relevance": {"share": share, "usual": usual}}

    def _write(self, unwritten: deque[str]) -> list[str]:
        before = assess(self.recent(CRAWLS))

        def push() -> None:
            pipe = self.client.pipeline()  # built anew on each attempt: a failed execute empties a pipeline
            pipe.lpush(keys.CRAWLER_DRIFT, *unwritten)  # the oldest first: the newest ends at the head
            pipe.ltrim(keys.CRAWLER_DRIFT, 0, KEEP - 1)
            pipe.execute()

        if isinstance(self.client, RedisCluster):
            # a cluster's pipeline has only redis-py's immediate retries (lib.core.redis_client): it waits here as
            # the cluster client's commands do; a single server's client already waits in its own retries
            ride_out(push)
        else:
            push()
        unwritten.clear()
        now = assess(self.recent(CRAWLS))
        for reason in now:
            if reason not in before:
                logger.error("crawler drift: %s over the last %d crawls (see animetop status)", reason, CRAWLS)
        return now

    def recent(self, count: int = KEEP) -> list[DriftRecord]:
        return [json.loads(raw) for raw in self.client.lrange(keys.CRAWLER_DRIFT, 0, count - 1)]


def _matched_missed(pages: list[dict[str, Any]]) -> tuple[int, int]:
    """Listings of the pages about the IP and not (pages recorded before these were counted count as neither)."""
    return sum(p.get("matched", 0) for p in pages), sum(p.get("missed", 0) for p in pages)


def crawl_summary(drift: DriftRecord) -> dict[str, Any]:
    """One crawl's signals: pages by source, anomalies by kind, items on full pages, cells without a price, listings
    about the IP and not, and how far the share of those about it moved from the IP's usual share."""
    pages = drift.get("pages") or []
    matched, missed = _matched_missed(pages)
    relevance = drift.get("relevance") or {}
    usual = relevance.get("usual")
    by_source = Counter(p["source"] for p in pages)
    anomalies: Counter[str] = Counter()
    for page in pages:
        anomalies.update(page.get("anomalies") or {})
    full = [p["items"] for p in pages if p.get("has_next")]
    # cells read: every item of a DOM page, and the cells cross-checked on an API page
    cells = sum(p["items"] for p in pages if p["source"] == "dom") + anomalies.get("cross_checked", 0)
    return {
        "pages": len(pages), "by_source": dict(by_source), "anomalies": dict(anomalies),
        "fill": (sum(full) / len(full) / PAGE_SIZE) if full else None,
        "api_missing": bool(pages) and not by_source.get("api") and any(p["items"] for p in pages),
        "priceless": (anomalies.get("cell_without_price", 0) / cells) if cells else 0.0,
        "matched": matched, "missed": missed,
        "share_move": None if usual is None or relevance.get("share") is None
        else float(relevance["share"]) - float(usual),
    }


def assess(records: list[DriftRecord]) -> list[str]:
    """The reasons for the "crawler drift" alert given the latest records (newest first), or []."""
    if len(records) < CRAWLS:
        return []
    summaries = [crawl_summary(r) for r in records[:CRAWLS]]
    reasons = []
    if all(s["api_missing"] for s in summaries):
        reasons.append("api_path_missing")
    if all(s["fill"] is not None and s["fill"] < MIN_FILL for s in summaries):
        reasons.append("items_per_page_low")
    if all(s["priceless"] > MAX_PRICELESS for s in summaries):
        reasons.append("cells_without_price")
    if all(s["share_move"] is not None and abs(s["share_move"]) >= SHARE_MOVE for s in summaries):
        reasons.append("match_share_moved")
    return reasons


def status_section(client: redis.Redis) -> dict[str, Any]:
    """What ``animetop status`` and the metrics show: the latest crawls' signals and the alert."""
    records = DriftLog(client).recent(CRAWLS * 3)
    by_source: Counter[str] = Counter()
    anomalies: Counter[str] = Counter()
    for record in records:
        summary = crawl_summary(record)
        by_source.update(summary["by_source"])
        anomalies.update(summary["anomalies"])
    anomalies.pop("cross_checked", None)
    summaries = [crawl_summary(r) for r in records]
    fills = [s["fill"] for s in summaries if s["fill"] is not None]
    matched, missed = sum(s["matched"] for s in summaries), sum(s["missed"] for s in summaries)
    moves = [s["share_move"] for s in summaries if s["share_move"] is not None]
    return {"crawls": len(records), "pages_by_source": dict(by_source), "anomalies": dict(anomalies),
            "mean_fill": sum(fills) / len(fills) if fills else None, "matched": matched, "missed": missed,
            "match_share": matched / (matched + missed) if matched + missed else None,
            "largest_share_move": max(moves, key=abs) if moves else None, "alert": assess(records)}


def render_status(section: dict[str, Any]) -> list[str]:
    """Lines for ``animetop status``."""
    if not section["crawls"]:
        return ["crawler drift: no crawl recorded yet"]
    fill = "-" if section["mean_fill"] is None else f"{section['mean_fill']:.0%}"
    lines = [f"crawler drift (last {section['crawls']} crawls): pages by source {section['pages_by_source']}, "
             f"full pages filled {fill}",
             f"  anomalies: {section['anomalies'] or 'none'}"]
    if section.get("match_share") is not None:
        move = section.get("largest_share_move")
        lines.append(f"  listings about the crawled IP: {section['matched']:,} matched, {section['missed']:,} not "
                     f"(the site's padding, not counted): {section['match_share']:.0%}"
                     + ("" if move is None else f"; largest move from an IP's usual share {move:+.0%}"))
    lines.append(f"  ALERT crawler drift: {', '.join(section['alert'])}" if section["alert"] else "  alert: none")
    return lines


def metric_families(client: redis.Redis) -> list[Metric]:
    """Prometheus gauges of the drift signals (read from Redis at scrape time)."""
    from prometheus_client.core import GaugeMetricFamily

    section = status_section(client)
    pages = GaugeMetricFamily("animetop_crawler_recent_pages", "Pages read in the latest crawls, by source.",
                              labels=["source"])
    for source in ("api", "dom"):
        pages.add_metric([source], section["pages_by_source"].get(source, 0))
    anomalies = GaugeMetricFamily("animetop_crawler_recent_anomalies", "Anomalies in the latest crawls, by kind.",
                                  labels=["kind"])
    for kind, count in sorted(section["anomalies"].items()):
        anomalies.add_metric([kind], count)
    fill = GaugeMetricFamily("animetop_crawler_page_fill_ratio",
                             "Items per page that had a next page, over the page size (latest crawls).")
    fill.add_metric([], section["mean_fill"] if section["mean_fill"] is not None else float("nan"))
    listings = GaugeMetricFamily("animetop_crawler_recent_listings",
                                 "Listings read in the latest crawls: about the crawled IP (matched) or not (missed: "
                                 "the site's padding, not counted).", labels=["relevance"])
    listings.add_metric(["matched"], section["matched"])
    listings.add_metric(["missed"], section["missed"])
    alert = GaugeMetricFamily("animetop_crawler_drift", "1 while the crawler drift alert holds, by reason.",
                              labels=["reason"])
    for reason in ("api_path_missing", "items_per_page_low", "cells_without_price", "match_share_moved"):
        alert.add_metric([reason], 1 if reason in section["alert"] else 0)
    return [pages, anomalies, fill, listings, alert]
