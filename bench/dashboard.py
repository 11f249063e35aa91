"""The dashboard with ``--ips`` IPs (1,000 by default; ``--ips 10000``: docs/scaling.md) × 90 days (``--days``)
of market (the leaderboard benchmark's market, ``bench.replicate``): API response times from a cold and a warm
cache against the floor of the hourly rows read with raw SQL in the same run, and the leaderboard page's first
useful paint in headless Chromium against the floor of the page fetching the same JSON without drawing it.

What grows with what: the floor (every IP's hourly rows of the window, summed by IP) grows with the IPs × the
window's hours; a cold board of a precomputed window (1 and 30 days) with the IPs (one stored row each, and their
sparklines); the 90-day board, not precomputed by default (``LEADERBOARD_PRECOMPUTE``), with the IPs × the events
in the window (the kept detail; the days past ``RETENTION_DETAIL`` come from daily rows once pruned); a warm board
with the IPs (one cached board holds them all; the API cuts it to 200 rows). The IP detail and its floor grow with
that IP's events and hours in the window, not with the other IPs; the page's paint with the rows drawn (200)."""

from __future__ import annotations

import asyncio
import json
import time
import urllib.request
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path

from lib.core.clock import FrozenClock, naive_utc
from lib.core.db import database
from lib.core.redis_client import state_redis
from lib.market.read_side import ReadSide
from lib.web.api import WebContext
from lib.web.app import create_app
from lib.web.auth import OperatorAuth
from lib.web.server import BackgroundServer
from models import IpMetadata

from .common import best_of, load_average, market_options, report
from .leaderboard import T_END, benchmark_market

T0 = T_END


def get(url: str) -> bytes:
    # a cold board not precomputed grows with IPs × events in the window: at 10,000 IPs × 90 days, tens of minutes
    with urllib.request.urlopen(url, timeout=7200) as response:
        return response.read()


def raw_leaderboard(since: datetime) -> None:
    p = database.param
    columns = "h.ip_id, SUM(inflow), SUM(outflow), m.keyword, m.display_name"
    sql = f"SELECT {columns} FROM ip_stats_hourly h JOIN ip_metadata m ON m.id = h.ip_id WHERE hour_bucket >= {p}"  # noqa: S608
    database.execute_sql(sql + " GROUP BY h.ip_id", (since.isoformat(sep=" "),)).fetchall()


def raw_ip(ip_id: int, since: datetime) -> None:
    p = database.param
    database.execute_sql(f"SELECT * FROM ip_stats_hourly WHERE ip_id = {p} AND hour_bucket >= {p} "  # noqa: S608
                         "ORDER BY hour_bucket", (ip_id, since.isoformat(sep=" "))).fetchall()


async def paint(url: str, chromium: str, flush: Callable[[], object]) -> tuple[float, float, float]:
    """Milliseconds from navigation to the 30-day leaderboard's rows drawn, from a cold cache and a warm one, and
    to the same JSON merely fetched (warm)."""
    from lib.crawling.driver import Browser

    browser = await Browser.launch(chromium, no_sandbox=True)
    try:
        page = await browser.bare_page()

        async def drawn() -> float:
            await page.goto(f"{url}/?by=outflow&hours=720", waitUntil="domcontentloaded")
            await page.waitForFunction("() => document.body.dataset.ready === '1'", {"timeout": 900_000})
            return float(await page.evaluate("() => performance.now()"))

        await drawn()  # Chromium's own first-start costs are not the page's
        flush()
        cold = await drawn()
        best_paint = best_floor = float("inf")
        for _ in range(3):
            best_paint = min(best_paint, await drawn())
            await page.goto(f"{url}/static/favicon.svg", waitUntil="domcontentloaded")
            spent = await page.evaluate("""async (api) => { const t = performance.now();
                await (await fetch(api)).json(); return performance.now(); }""",
                                        f"{url}/api/v1/leaderboard?by=outflow&hours=720&limit=200")
            best_floor = min(best_floor, spent)
        return cold, best_paint, best_floor
    finally:
        await browser.close()


def leaderboard(base: str, client, hours: int) -> None:
    since = naive_utc(T0) - timedelta(hours=hours - 1)
    floor = best_of(lambda: raw_leaderboard(since), 3)
    url = f"{base}/api/v1/leaderboard?by=outflow&hours={hours}&limit=200"

    cpu: list[float] = []

    def cold() -> None:
        client.flushdb()
        started = time.process_time()  # the server runs in this process: its CPU time, whatever the machine's load
        get(url)
        cpu.append(time.process_time() - started)

    # a long window's cold computation takes long enough that one run is a measure (and three would take minutes)
    report(f"leaderboard {hours} h, cold cache", best_of(cold, 3 if hours < 720 else 1), floor)
    print(f"  {'  (its CPU time in this process)':52} {min(cpu):12.6f} s")
    report(f"leaderboard {hours} h, warm cache", best_of(lambda: get(url), 5), floor)
    other = url.replace("by=outflow", "by=heat")  # every ranking of the window comes from the same board
    report(f"leaderboard {hours} h, another ranking after it", best_of(lambda: get(other), 5), floor)


def run(ips: int = 1000, days: int = 90, keep: Path | str | None = None) -> None:
    print(f"dashboard: {ips:,} IPs × {days} days of market (floors: the hourly rows by raw SQL; the page fetching "
          f"its JSON without drawing it); load average {load_average()}")
    with benchmark_market(keep, ips, days) as (settings, _):
        client = state_redis(settings)
        clock = FrozenClock(T0 - 1)
        side = ReadSide(settings, client, clock)
        app = create_app(WebContext(settings=settings, read_side=side, status=lambda: {}, dead_letters=None,
                                    auth=OperatorAuth(None)))
        server = BackgroundServer(app).start()
        try:
            for hours in sorted({24, 720, days * 24}):
                leaderboard(server.url, client, hours)
            ip_id = IpMetadata.select().first().id
            since = naive_utc(T0) - timedelta(hours=days * 24 - 1)
            floor = best_of(lambda: raw_ip(ip_id, since), 3)
            url = f"{server.url}/api/v1/ips/{ip_id}?hours={days * 24}"
            report(f"IP detail {days} days, cold cache", best_of(lambda: (client.flushdb(), get(url)), 3), floor)
            report(f"IP detail {days} days, warm cache", best_of(lambda: get(url), 5), floor)
            body = json.loads(get(f"{server.url}/api/v1/leaderboard?by=outflow&hours=720&limit=200"))
            assert len(body["rows"]) == min(200, ips)
            from lib.crawling.install import ensure_chromium

            cold, painted, fetched = asyncio.run(paint(server.url, ensure_chromium(), client.flushdb))
            report("leaderboard page: first useful paint, cold cache", cold, fetched, "ms")
            report("leaderboard page: first useful paint (200 rows)", painted, fetched, "ms")
            print(f"  load average at the end: {load_average()}")
        finally:
            server.stop()


def main(argv: list[str] | None = None) -> int:
    keep, ips, days = market_options(argv or [], "python -m bench dashboard", 1000, 90)
    run(ips=ips, days=days, keep=keep)
    return 0
