"""``animetop status``: what the system is doing right now, in one screen."""

from __future__ import annotations

import dataclasses
from datetime import datetime, timezone
from typing import Any

import redis
from dramatiq import Broker

from lib.core import keys
from lib.core.clock import get_clock
from lib.core.redaction import redact_url
from lib.core.settings import Settings
from lib.crawling import rate_limit, recovery
from lib.crawling.budget import RequestBudget
from lib.crawling.drift import render_status, status_section
from lib.messaging.dead_letters import DeadLetters
from lib.messaging.in_flight import InFlight
from lib.messaging.queue_stats import queue_counts
from lib.messaging.queues import ALL_QUEUES
from lib.scheduling.budget_plan import CostStore
from lib.scheduling.schedule import ScheduleStore
from models import IpMetadata


def counts(broker: Broker, client: redis.Redis) -> dict[str, Any]:
    """The numbers the status screen, the dashboard and the metrics all show: per-queue counts, scheduled
    IPs and crawls in flight."""
    return {"queues": {q: queue_counts(broker, q) for q in ALL_QUEUES},
            "scheduled_ips": ScheduleStore(client).count(),
            "in_flight_crawls": sorted(InFlight(client).members()),
            "crawl_rate_waiting": rate_limit.waiting(client)}


def gather(settings: Settings, broker: Broker, client: redis.Redis) -> dict[str, Any]:
    now = get_clock().now()
    schedule = ScheduleStore(client)
    next_time = schedule.next_time()
    locks = []
    for key in client.scan_iter(match=keys.LOCK_PATTERN, count=500):
        locks.append({"lock": key.decode()[len(keys.lock("")):], "expires_in_ms": client.pttl(key)})
    recent = (IpMetadata.select().where(IpMetadata.last_crawled_at.is_null(False))
              .order_by(IpMetadata.last_crawled_at.desc()).limit(10))
    letters = DeadLetters.for_broker(broker, broker.reasons).list()  # type: ignore[attr-defined]  # set by build_broker
    letters.sort(key=lambda d: d.dead_at or 0, reverse=True)
    return {
        "at": now,
        "broker": redact_url(settings.broker_url_resolved),
        "crawl_rate_limit": settings.crawl_rate_limit,
        "crawl_budgets": budgets(settings, client),
        "crawl_plan": planned(client),
        **counts(broker, client),
        "schedule_paused": schedule.paused(),
        "due_now": len(schedule.due(now, limit=10_000)),
        "next_due_at": next_time,
        "locks": sorted(locks, key=lambda x: x["lock"]),
        "last_crawls": [{"ip_id": ip.id, "keyword": ip.keyword, "at": ip.last_crawled_at.isoformat() + "Z"}
                        for ip in recent if ip.last_crawled_at is not None],
        "recent_errors": [{"queue": d.queue, "actor": d.actor, "reason": (d.reason or "?").splitlines()[0][:120],
                           "at": d.dead_at} for d in letters[:5]],
        "crawler_drift": status_section(client),
        "tab_recoveries": recovery.RecoveryLog(client).section(),
    }


def budgets(settings: Settings, client: redis.Redis) -> list[dict[str, Any]]:
    """Each address's request budget now (the configured ones, and any a 429 cut), with the page loads it began
    in the last whole minute, fleet-wide. Empty without a limit."""
    if not settings.crawl_rate_limit:
        return []
    return [{**dataclasses.asdict(b), "loads_last_minute": rate_limit.loads_last_minute(client, b.address)}
            for b in RequestBudget(settings.crawl_rate_limit, lambda: client).all(rate_limit.addresses(settings))]


def planned(client: redis.Redis) -> dict[str, Any] | None:
    """The request budget's plan as the scheduler's tick last set it (``lib.scheduling.budget_plan``): the
    requests an hour the IPs' intervals spend against the budget, and how many the budget lengthened; None
    without a budget (CRAWL_RATE_LIMIT=0) or before the first tick."""
    price = CostStore(client).price()
    return None if price is None else {**dataclasses.asdict(price), "over": price.over}


def _when(ts: float | None) -> str:
    if ts is None:
        return "-"
    return datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _crawl_rate_line(status: dict[str, Any]) -> str:
    limit, waiting = status["crawl_rate_limit"], status["crawl_rate_waiting"]
    if not limit:
        return "crawl rate limit: none (CRAWL_RATE_LIMIT=0)"
    line = f"crawl rate limit: {limit} pages/min per address; {len(waiting)} page load(s) waiting for a turn"
    if waiting:
        line += f" (longest {waiting[0]['waiting_s']:.0f}s, via {waiting[0]['proxy']}, {waiting[0]['waiter']})"
    for b in status.get("crawl_budgets", []):
        line += (f"\n  {b['address']}: {b['loads_last_minute']} page load(s) in the last minute, budget "
                 f"{b['limit']} of {b['budget']}/min")
        if b["cut_at"] is not None:
            line += f" (cut by a 429 at {_when(b['cut_at'])}, back to {b['budget']} by {_when(b['full_at'])})"
    plan = status.get("crawl_plan")
    if plan is not None:
        line += (f"\n  planned: {plan['planned']:.0f} of {plan['budget']:.0f} requests an hour "
                 f"(SCHEDULER_BUDGET_SHARE of the budgets) for {plan['ips']} IPs; "
                 + (f"{plan['lengthened']} of them crawled less often than their own interval to stay within it"
                    if plan["price"] > 0 else "every IP at its own interval")
                 + (" (OVER: even the longest intervals spend more; the rate limit holds the rest)"
                    if plan["over"] else "") + f", as of {_when(plan['at'])}")
        if plan.get("relist_reads"):
            line += (f"\n  reads back and item checks for undecided relists: {plan['relist_reads']:.1f} requests an "
                     f"hour over the last day, taken off the budget before the intervals")
        if plan["reached"] is not None:
            line += (f"\n  new listings the last crawls' on-sale pages reached back to the crawl before: "
                     f"{plan['reached']:.1%} (the rest is estimated)")
        if plan["deepened"]:
            line += (f"\n  IPs whose sales outrun their sold pages: {plan['deepened']}"
                     + (f", read {plan['sold_pages']} pages deep with the requests to spare" if plan["sold_pages"]
                        else " (no requests to spare: read to SCHEDULER_PAGES_SOLD)"))
    return line


def render(status: dict[str, Any]) -> str:
    lines = [f"animetop status at {_when(status['at'])} (broker {status['broker']})", "",
             f"{'QUEUE':12} {'READY':>7} {'RUNNING':>8} {'DELAYED':>8} {'DEAD':>6}"]
    for queue, c in status["queues"].items():
        lines.append(f"{queue:12} {c['ready']:>7} {c.get('running', '-'):>8} {c['delayed']:>8} {c['dead']:>6}")
    lines += ["", f"scheduled IPs: {status['scheduled_ips']}, due now: {status['due_now']}, "
                  f"next due: {_when(status['next_due_at'])}"
                  + (" (PAUSED: `animetop schedule resume`)" if status.get("schedule_paused") else ""),
              f"crawls in flight: {len(status['in_flight_crawls'])} {status['in_flight_crawls'][:20]}",
              _crawl_rate_line(status), f"locks held: {len(status['locks'])}"]
    lines += [f"  {lock['lock']} (expires in {lock['expires_in_ms'] / 1000:.1f}s)" for lock in status["locks"][:10]]
    lines.append("last crawls:")
    lines += [f"  IP {c['ip_id']} {c['keyword']} at {c['at']}" for c in status["last_crawls"]] or ["  none yet"]
    lines.append("recent errors (dead letters):")
    lines += [f"  {_when(e['at'])} {e['queue']}/{e['actor']}: {e['reason']}" for e in status["recent_errors"]] \
        or ["  none"]
    if "crawler_drift" in status:
        lines += render_status(status["crawler_drift"])
    if "tab_recoveries" in status:
        lines += recovery.render_status(status["tab_recoveries"], _when)
    return "\n".join(lines)
