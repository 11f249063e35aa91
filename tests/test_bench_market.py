"""The read benchmarks on the benchmark market (``bench.replicate``) at a tiny ``--ips`` and ``--days``: each fills
or reuses the market of that size, runs to its end and prints its table, every line a time against its floor.
Speeds are printed, never asserted."""

import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import BROKER_DB, STATE_DB
from .helpers import empty_redis_databases

pytestmark = pytest.mark.slow  # each fills a market: its template IPs' results processed for real

ROOT = Path(__file__).resolve().parent.parent
IPS = 10  # two more than the templates (bench.replicate.TEMPLATES): two IPs are copies
DAYS = 1
RATIO = r"\s+[\d.]+ (?:s|ms)\s+floor\s+[\d.]+\s+ratio\s+[\d.]+x$"


def bench(name: str, database: Path, redis_server: str, *extra: str, days: bool = True) -> str:
    """``python -m bench NAME --ips IPS --days DAYS --db database``'s output (without ``--days`` for a bench whose
    market's days are its own); its Redis: this test worker's databases (flushed by the bench)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "BENCH_REDIS_URL": redis_server,
           "BENCH_REDIS_DBS": f"{STATE_DB},{BROKER_DB}"}
    for variable in ("BROKER_URL", "REDIS_URL", "DATABASE_URL"):
        env.pop(variable, None)
    empty_redis_databases(redis_server)  # the worker's own: a bench refuses databases holding others' keys
    done = subprocess.run([sys.executable, "-m", "bench", name, "--ips", str(IPS),
                           *(["--days", str(DAYS)] if days else []), "--db", str(database), *extra],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def market(tmp_path_factory, redis_server) -> tuple[Path, str]:
    """The market filled by ``bench leaderboard`` (kept with ``--db``), and that run's output."""
    database = tmp_path_factory.mktemp("market") / "market.sqlite3"
    return database, bench("leaderboard", database, redis_server)


def test_leaderboard_fills_ips_and_times_every_window_against_its_floor(market):
    database, out = market
    assert f"filled {IPS} IPs × {DAYS + 7} days" in out, out
    for hours in (24, 168, 720):
        assert re.search(rf"^  leaderboard --by heat --hours {hours}, cold \(s\){RATIO}", out, re.M), out
    hours = DAYS * 24  # the bench's window
    assert re.search(rf"^  the {hours} h one from the cache \(s\){RATIO}", out, re.M), out
    assert re.search(rf"^  the {hours} h board computed from the events \(s\){RATIO}", out, re.M), out
    assert re.search(rf"^  refresh after results for 1 IPs \(1 %\); floor: all{RATIO}", out, re.M), out  # ids[::100]
    with sqlite3.connect(database) as conn:
        assert [i for (i,) in conn.execute("SELECT id FROM ip_metadata ORDER BY id")] == list(range(1, IPS + 1))
        # every IP's rows of every standard window, rebuilt by the bench: copies included
        rows = dict(conn.execute("SELECT hours, COUNT(DISTINCT ip_id) FROM ip_window_measures GROUP BY hours"))
    assert rows == {24: IPS, 168: IPS, 720: IPS}, rows


def test_days_reuses_the_market_and_times_the_series_against_its_floor(market, redis_server):
    database, _ = market
    out = bench("days", database, redis_server)
    assert f"reusing {database}: {IPS} IPs x {DAYS + 7} days" in out, out
    assert re.search(rf"rollup pass after every day of {IPS} IPs changed: \d+ days rolled up", out), out
    for source in ("daily", "hourly"):
        assert re.search(rf"^  {DAYS}-day series of {IPS} IPs, from {source} rows{RATIO}", out, re.M), out


def test_dashboard_reuses_the_market_and_times_the_api_and_the_page(market, redis_server, chromium):
    database, _ = market
    out = bench("dashboard", database, redis_server)
    assert f"reusing {database}" in out, out
    for hours in sorted({24, 720, DAYS * 24}):
        for what in ("cold cache", "warm cache", "another ranking after it"):
            assert re.search(rf"^  leaderboard {hours} h, {what}{RATIO}", out, re.M), (hours, what, out)
    for what in ("cold cache", "warm cache"):
        assert re.search(rf"^  IP detail {DAYS} days, {what}{RATIO}", out, re.M), out
    assert re.search(rf"^  leaderboard page: first useful paint \(200 rows\){RATIO}", out, re.M), out


def test_segments_board_times_the_board_and_ips_own_types_against_what_they_read(tmp_path, redis_server):
    """``bench segments_board`` on its own market (RETENTION_DETAIL and the week before it): every window's board
    cold and cached, and the sample's own goods types, each against the rows it reads, which are not none; and the
    memory of one more cold board of each window."""
    out = bench("segments_board", tmp_path / "segments.sqlite3", redis_server, days=False)
    for hours in (24, 168, 240):
        for what in ("cold", "cached"):
            assert re.search(rf"^  board --hours {hours}, {what}{RATIO}", out, re.M), (hours, what, out)
        assert re.search(rf"^  \d+ IPs' own goods types --hours {hours}, cold{RATIO}", out, re.M), out
        for line in (rf"^  {hours} h: (\d[\d,]*) sales and (\d[\d,]*) listings created",
                     rf"^  {hours} h, \d+ IPs' own: (\d[\d,]*) sales and (\d[\d,]*) listings created"):
            found = re.search(line, out, re.M)
            assert found and all(int(n.replace(",", "")) > 0 for n in found.groups()), (line, out)
        # its memory: Python's peak, and SQLite's above what it held ("?" where the machine's SQLite does not tell)
        peak = re.search(rf"^  board --hours {hours}, cold: peak (\d+\.\d) MB of Python allocations \(tracemalloc\), "
                         rf"SQLite's own (\d+\.\d|\?) MB", out, re.M)
        assert peak and float(peak.group(1)) > 0, out
