"""The README's main-job command, end to end: the real process types against the simulator.

The shared demo run (``demo_run`` in tests/conftest.py) records every search page the simulator served, its history's
included. From that record and the simulator's own truth (each listing's creation and update times) the test
works out what the hourly statistics and the closing leaderboard's measures must be by the definitions of
docs/concepts/measures.md (tests/market/scripted.py), independently of the crawler's messages and the pipeline's
state, and compares them with the database and with what the demo printed. A second run keeps serving its
dashboard (``--dashboard``), read in Chromium, until Ctrl-C.
"""

import asyncio
import json
import os
import re
import shutil
import signal
import sqlite3
import stat
import subprocess
import sys
import threading
import urllib.request
from collections import defaultdict
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from lib.core.embedded_redis import EmbeddedRedis

from .conftest import DEMO_ARGS
from .helpers import assert_demo_ended_cleanly, cmdline, processes_matching, stored_id, wait_for
from .market import scripted
from .market.test_windows import MINIMUMS


def crawl_sessions(requests: list[dict]) -> list[list[dict]]:
    """One keyword's served pages split into crawls: every crawl starts with on-sale page 1."""
    sessions: list[list[dict]] = []
    for req in sorted(requests, key=lambda r: r["t"]):
        if req["statuses"] == ["on_sale"] and req["page"] == 1:
            sessions.append([])
        assert sessions, f"a page served before any crawl started: {req}"
        sessions[-1].append(req)
    return sessions


def script_of(crawls: list[float], sessions: list[list[dict]]) -> scripted.Script:
    """One IP's applied crawls as tests/market/scripted.py's script: what each saw, from the pages it was served
    (the simulator's record: each listing's id, status, price, true creation time and last update)."""
    starts = [s[0]["t"] for s in sessions]
    script_crawls = []
    for n, crawled_at in enumerate(crawls):
        # the crawl's pages: the first session that started after it did (the same clock serves both)
        index = next(i for i, t in enumerate(starts) if t >= crawled_at)
        assert n + 1 == len(crawls) or starts[index] < crawls[n + 1], "two crawls of one IP overlapped"
        seen: dict[str, dict] = {}
        for req in sessions[index]:
            for source_id, status, price, created, updated in req["items"]:
                status = "on_sale" if status == "on_sale" else "sold"
                if source_id not in seen or status == "sold":  # sold while we paged: the sale wins
                    seen[source_id] = {"source_id": source_id, "status": status, "price": price,
                                       "created": int(created), "updated": int(updated)}
        script_crawls.append((crawled_at, list(seen.values())))
    return scripted.Script(script_crawls)


def expected_hours(crawls: list[float], sessions: list[list[dict]]) -> tuple[dict, set]:
    """Ground truth of one IP's hourly rows from the pages its applied crawls were served, by the definitions of
    docs/concepts/measures.md (tests/market/scripted.py computes them from what each crawl saw), and the listings
    they saw."""
    script = script_of(crawls, sessions)
    rows = scripted.expected_hours(script)
    return ({datetime.fromtimestamp(h, timezone.utc).replace(tzinfo=None):
             (r["inflow"], r["outflow"], r["samples"], r["min"], r["max"]) for h, r in rows.items()},
            {it["source_id"] for _, items in script.crawls for it in items})


def assert_logs_clean(logs: Path) -> None:
    """A normal run logs no ERROR (nor CRITICAL, nor a traceback): an ERROR line must mean a real error."""
    files = sorted(logs.glob("*.log"))
    assert {f.name for f in files} >= {"scheduler.log", "crawler.log", "worker.log"}, files
    for file in files:
        bad = [line for line in file.read_text(errors="replace").splitlines()
               if re.search(r"\bERROR\b|\bCRITICAL\b|Traceback", line)]
        assert bad == [], f"{file.name}:\n" + "\n".join(bad[:20])


def served(demo_run) -> dict[str, list[dict]]:
    """The search pages the simulator served in the shared run (its history's included), by keyword."""
    requests = defaultdict(list)
    for line in demo_run.served.read_text().splitlines():
        req = json.loads(line)
        requests[req["keyword"]].append(req)
    return requests


def applied_crawls(db, ip_id: int) -> list[float]:
    return [t for (t,) in db.execute("SELECT crawled_at FROM applied_results WHERE ip_id = ? ORDER BY crawled_at",
                                     (ip_id,))]


def test_demo_statistics_match_the_simulators_ground_truth(demo_run):
    out = demo_run.stdout
    assert_demo_ended_cleanly(out)
    requests = served(demo_run)
    assert_logs_clean(demo_run.data_dir / "logs")
    db = sqlite3.connect(f"file:{demo_run.database}?mode=ro", uri=True)  # shared with tests/web: read only
    ips = dict(db.execute("SELECT id, keyword FROM ip_metadata"))
    assert len(ips) == int(DEMO_ARGS[DEMO_ARGS.index("--ips") + 1])
    totals = [0, 0]
    for ip_id, keyword in ips.items():
        crawls = applied_crawls(db, ip_id)
        # the history's crawls and the live phase's (the process types')
        live = db.execute("SELECT COUNT(*) FROM applied_results WHERE ip_id = ? AND task_id NOT LIKE 'history-%'",
                          (ip_id,)).fetchone()[0]
        assert len(crawls) - live >= 20 and live >= 2, f"{keyword}: {len(crawls) - live} crawls of history, {live} live"
        expected, seen_ids = expected_hours(crawls, crawl_sessions(requests[keyword]))
        actual = {datetime.fromisoformat(bucket): (inflow, outflow, samples, None if low is None else round(low),
                                                   None if high is None else round(high))
                  for bucket, inflow, outflow, samples, low, high in db.execute(
                      "SELECT hour_bucket, inflow, outflow, sample_count, min_price, max_price FROM ip_stats_hourly "
                      "WHERE ip_id = ?", (ip_id,))}
        assert actual == expected, keyword
        snapshots = {stored_id(sid) for (sid,) in db.execute("SELECT source_id FROM item_snapshots WHERE ip_id = ?",
                                                             (ip_id,))}
        assert snapshots == seen_ids, keyword  # every listing served reached the database, and nothing else
        totals[0] += sum(v[0] for v in expected.values())
        totals[1] += sum(v[1] for v in expected.values())
    db.close()
    assert totals[0] > 0 and totals[1] > 0, totals  # the comparison covered real inflow and outflow


#: The closing leaderboard's columns (``animetop leaderboard``'s table): header, the definition's value
#: (tests/market/scripted.py), how a value is printed (a share as a percentage), its printed decimals and the
#: decimals it is stored to, on the printed scale (docs/reference/api.md: a share to 4, so a percentage to 2).
BOARD = [("HEAT", "heat", 1, 1, 1), ("MOM", "momentum", 1, 1, 1), ("OUT", "outflow", 1, 0, 4),
         ("IN", "inflow", 1, 0, 4), ("LIQ", "liquidity", 1, 2, 4), ("SELL%", "sell_through", 100, 0, 2),
         ("MEDIAN¥", "median_price", 1, 0, 2), ("TTS h", "time_to_sell_median", 1, 1, 2)]
#: The measures the demo's history is long enough for, for most IPs (heat: 24 tracked hours before its window).
RICH = ("heat", "sell_through", "median_price", "time_to_sell_median")


def closing_board(out: str) -> tuple[str, int, datetime, list[str], list[tuple[int, int, list[str], str]]]:
    """The demo's closing leaderboard: what it ranks by, its window, the window's first hour, the header, and each
    row's rank, IP id, cells and keyword."""
    board = out.split("\nLeaderboard at ")[1]
    by, hours, since = re.search(r"^top \d+ by (\w+), last (\d+) h, since (\S+ \d\d:00) UTC", board, re.M).groups()
    lines = board.splitlines()
    at = next(n for n, line in enumerate(lines) if line.lstrip().startswith("#  "))
    rows = []
    for line in lines[at + 1:]:
        parts = line.split()
        if len(parts) <= 2 + len(BOARD) or not (parts[0].isdigit() and parts[1].isdigit()):
            break  # the table's end (the count of IPs left out follows it, if any)
        rows.append((int(parts[0]), int(parts[1]), parts[2:2 + len(BOARD)], " ".join(parts[2 + len(BOARD):])))
    return by, int(hours), datetime.fromisoformat(since), lines[at].split(), rows


def test_the_closing_leaderboard_shows_the_richest_measures_by_their_definitions(demo_run):
    """The demo ends on ``animetop leaderboard --by heat --hours 24``'s table: every column's value equals the
    definitions of docs/concepts/measures.md computed from the pages served (history and live phase), and heat,
    sell-through, median sold price and time to sell are sufficient for most IPs."""
    by, hours, since, header, rows = closing_board(demo_run.stdout)
    assert (by, hours) == ("heat", 24)
    assert " ".join(header) == "# IP " + " ".join(h for h, *_ in BOARD) + " KEYWORD"
    # the demo's clock stood still after its last crawl, in the window's last hour: no event is later
    now = (since.replace(tzinfo=timezone.utc) + timedelta(hours=hours)).timestamp() - 1
    requests = served(demo_run)
    db = sqlite3.connect(f"file:{demo_run.database}?mode=ro", uri=True)
    ips = dict(db.execute("SELECT id, keyword FROM ip_metadata"))
    expected = {ip_id: scripted.expected_window(
        script_of(applied_crawls(db, ip_id), crawl_sessions(requests[keyword])), hours, now, MINIMUMS,
        intervals=False) for ip_id, keyword in ips.items()}
    db.close()

    for measure in RICH:  # sufficient for most IPs (four of five)
        assert sum(e[measure] is not None for e in expected.values()) >= 0.8 * len(ips), (measure, expected)
    ranked = sorted((ip for ip, e in expected.items() if e["heat"] is not None),
                    key=lambda ip: (-round(expected[ip]["heat"], 1), -expected[ip]["outflow"], ip))
    assert [(rank, ip_id) for rank, ip_id, _, _ in rows] == list(enumerate(ranked, start=1))
    for _, ip_id, cells, keyword in rows:
        assert keyword == ips[ip_id]
        for (column, key, scale, places, stored), cell in zip(BOARD, cells, strict=True):
            value = expected[ip_id][key]
            if value is None:  # insufficient: its count in parentheses
                assert re.fullmatch(r"\(\d+\)|-", cell), (keyword, column, cell)
            else:  # rounded twice, to the stored decimals then to the printed ones: each may move it half a unit
                # (11.7458 h is stored as 11.75 and printed as 11.8)
                printed = float(cell.rstrip("%").replace(",", ""))
                bound = (0.5 * 10 ** -stored if stored <= places else 0.5 * 10 ** -places + 0.5 * 10 ** -stored) + 1e-9
                assert abs(printed - value * scale) <= bound, (keyword, column, cell, value)
    left_out = len(ips) - len(ranked)
    assert (f"{left_out} IP(s) with data in the window left out" in demo_run.stdout) == bool(left_out)
    # the dashboard's address, live while the demo ran, and how to keep it
    assert re.search(r"^• dashboard on http://127\.0\.0\.1:\d+ while the demo runs", demo_run.stdout, re.M)
    assert re.search(r"The dashboard \(http://127\.0\.0\.1:\d+/\?by=heat&hours=24\) stops with the demo: "
                     r"`animetop demo --dashboard` keeps it", demo_run.stdout)


def served_dashboard(lines: list[str]) -> str | None:
    """The dashboard's address once the demo says it keeps serving it (``--dashboard``)."""
    found = re.search(r"^Dashboard over the demo's data: (\S+) \(Ctrl-C stops it\)$", "".join(lines), re.M)
    return found[1] if found else None


@pytest.mark.timeout(480)
def test_a_second_demo_keeps_serving_its_dashboard_until_ctrl_c(demo_run, tmp_path, chromium):
    """A second run right after the first works too (a fresh market, over a copy of the first run's data
    directory: the shared run must stay as it is). With ``--dashboard`` it keeps serving the dashboard over its
    data after the crawl phase: the page in Chromium ranks the IPs the closing leaderboard printed, as the API
    does, and draws its charts; Ctrl-C then stops it, leaving nothing running."""
    from .web.browser import launch, new_page, rows_of
    from .web.conftest import call

    data = tmp_path / "var" / "demo"
    shutil.copytree(demo_run.data_dir, data,
                    ignore=lambda folder, names: [n for n in names
                                                  if stat.S_ISSOCK((Path(folder) / n).lstat().st_mode)])
    # Ctrl-C at the default action, as in a user's terminal: a process started with SIGINT ignored keeps it
    # ignored (Python installs no KeyboardInterrupt then), and the test's worker may have inherited that
    demo = subprocess.Popen([sys.executable, "-m", "lib.cli", "demo", "--minutes", "0.5", "--ips", "2",
                             "--dashboard", "--port", "0"], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env={**os.environ, "PYTHONPATH": os.getcwd()},
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    lines: list[str] = []

    def read() -> None:
        for line in demo.stdout:
            lines.append(line)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        url = wait_for(lambda: served_dashboard(lines), timeout=280, what="the dashboard served after the crawl")
        out = "".join(lines)
        assert_demo_ended_cleanly(out)
        base = url.split("/?")[0]
        by, hours, _, _, printed = closing_board(out)
        api = call(f"{base}/api/v1/leaderboard?by={by}&hours={hours}&limit=200").json()["rows"]
        # the closing table and the API: the same IPs in the same order, each with its heat
        assert [(r["ip_id"], r["keyword"]) for r in api] == [(ip, keyword) for _, ip, _, keyword in printed]
        for (_, _, cells, _), row in zip(printed, api, strict=True):
            assert cells[0] == (f"{row['heat']:.1f}" if row["heat"] is not None else f"({row['heat_n']})"), row
        db = sqlite3.connect(f"file:{data / 'animetop.sqlite3'}?mode=ro", uri=True)
        ips = dict(db.execute("SELECT id, keyword FROM ip_metadata"))
        # both IPs crawled in the live phase too (the stop lets the crawls in flight finish)
        live = db.execute("SELECT COUNT(DISTINCT ip_id) FROM applied_results "
                          "WHERE task_id NOT LIKE 'history-%'").fetchone()[0]
        db.close()
        assert len(ips) == 2 and live == 2, out
        assert {r["ip_id"] for r in api} <= set(ips) and api, out

        async def look():
            browser = await launch(chromium)
            try:
                page = await new_page(browser)
                await page.open(url)
                shown = await rows_of(page)
                await page.wait("() => document.querySelectorAll('#board .spark canvas').length > 0")
                sparks = await page.drawn("#board .spark")
                await page.open(f"{base}/ip/{api[0]['ip_id']}?hours={hours}")
                drawn = {chart: await page.drawn(f"#{chart}") for chart in ("flow-hourly", "price", "tts")}
                return shown, sparks, drawn, page.errors
            finally:
                await browser.close()

        shown, sparks, drawn, errors = asyncio.run(look())
        assert errors == []
        assert [row[0] for row in shown] == [str(r["ip_id"]) for r in api]
        assert sparks > 0 and all(count > 500 for count in drawn.values()), (sparks, drawn)

        demo.send_signal(signal.SIGINT)
        try:
            demo.wait(timeout=60)
        except subprocess.TimeoutExpired:
            pytest.fail("the demo did not stop within 60 s of Ctrl-C; it printed:\n" + "".join(lines[-30:]))
    finally:
        if demo.poll() is None:
            demo.kill()
            demo.wait()
    reader.join(10)
    assert demo.returncode == 0, "".join(lines)
    assert "• dashboard stopped" in "".join(lines)
    with pytest.raises(OSError):  # no longer served
        urllib.request.urlopen(base, timeout=5)
    for folder in (str(demo_run.data_dir).encode(), str(data).encode()):
        assert processes_matching(folder + b"/redis.sock") == []  # the demo's redis-server is stopped
        # nor anything else the demo started (Chromium included): they all inherit its DATA_DIR
        assert processes_matching(b"DATA_DIR=" + folder + b"\0", "environ") == []


def test_a_demo_killed_outright_leaves_no_process_type_running(tmp_path, chromium):
    """SIGKILL (a test's timeout, the OOM killer) gives the demo no chance to stop what it started: the kernel
    tells its process types' runners, which stop as on a normal SIGTERM."""
    data = tmp_path / "var" / "demo"
    demo = subprocess.Popen([sys.executable, "-m", "lib.cli", "demo", "--minutes", "3", "--ips", "1", "--history", "0",
                             "--port", "0"], cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "PYTHONPATH": os.getcwd()})
    marker = b"DATA_DIR=" + str(data).encode() + b"\0"

    def process_types() -> list[int]:
        return [p for p in processes_matching(marker, "environ") if b"redis-server" not in cmdline(p)]

    try:
        wait_for(lambda: sum(b"lib.cli\0run\0" in cmdline(p) for p in process_types()) == 3, timeout=120,
                 what="the demo's three process types")
        demo.kill()
        demo.wait()
        wait_for(lambda: process_types() == [], timeout=60, what="the process types to stop")
    finally:
        if demo.poll() is None:
            demo.kill()
        for pid in process_types():
            os.kill(pid, signal.SIGKILL)
        EmbeddedRedis(data).stop()


def test_a_demo_stopped_by_sigterm_in_its_live_phase_stops_everything_it_started(tmp_path, chromium):
    """SIGTERM (a service manager's stop, ``timeout``) stops the demo as Ctrl-C does: its process types are
    stopped after the work in flight, the closing leaderboard is printed, and its embedded redis-server, its
    dashboard and its simulator are gone when it exits."""
    data = tmp_path / "var" / "demo"
    demo = subprocess.Popen([sys.executable, "-m", "lib.cli", "demo", "--minutes", "3", "--ips", "1", "--history", "0",
                             "--port", "0"], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "PYTHONPATH": os.getcwd()})
    marker = b"DATA_DIR=" + str(data).encode() + b"\0"
    try:
        wait_for(lambda: sum(b"lib.cli\0run\0" in cmdline(p) for p in processes_matching(marker, "environ")) == 3,
                 timeout=120, what="the demo's three process types")
        assert processes_matching(str(data).encode() + b"/redis.sock")  # its embedded Redis runs
        demo.send_signal(signal.SIGTERM)
        out, _ = demo.communicate(timeout=240)
    finally:
        if demo.poll() is None:
            demo.kill()
            demo.wait()
    assert demo.returncode == 0 and "• interrupted" in out and "Leaderboard at" in out, out
    assert processes_matching(str(data).encode() + b"/redis.sock") == []
    assert processes_matching(marker, "environ") == []
