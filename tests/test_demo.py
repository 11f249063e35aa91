"""The README's main-job command, end to end: the real process types against the simulator.

The shared demo run (``demo_run`` in tests/conftest.py) records every search page the simulator served. From that
record and the simulator's own truth (each listing's creation and update times) the test
works out what the hourly statistics must be by the definitions of docs/concepts/measures.md, independently of the
crawler's messages and the pipeline's state, and compares them with the database.
"""

import json
import os
import re
import shutil
import signal
import sqlite3
import stat
import subprocess
import sys
from collections import defaultdict
from datetime import datetime, timezone
from pathlib import Path

from lib.core.embedded_redis import EmbeddedRedis
from lib.standins.simulator import market

from .conftest import DEMO_ARGS
from .helpers import assert_demo_ended_cleanly, cmdline, processes_matching, run_demo, wait_for
from .market import scripted


def crawl_sessions(requests: list[dict]) -> list[list[dict]]:
    """One keyword's served pages split into crawls: every crawl starts with on-sale page 1."""
    sessions: list[list[dict]] = []
    for req in sorted(requests, key=lambda r: r["t"]):
        if req["statuses"] == ["on_sale"] and req["page"] == 1:
            sessions.append([])
        assert sessions, f"a page served before any crawl started: {req}"
        sessions[-1].append(req)
    return sessions


def expected_hours(keyword: str, crawls: list[float], sessions: list[list[dict]]) -> tuple[dict, set]:
    """Ground truth of one IP's hourly rows from the pages its applied crawls were served, by the definitions of
    docs/concepts/measures.md (tests/market/scripted.py computes them from what each crawl saw). The API's ``updated``
    of a served listing is the simulator's own (the record holds id, status, price and created)."""
    starts = [s[0]["t"] for s in sessions]
    script_crawls = []
    for n, crawled_at in enumerate(crawls):
        # the crawl's pages: the first session that started after it did (the same clock serves both)
        index = next(i for i, t in enumerate(starts) if t >= crawled_at)
        assert n + 1 == len(crawls) or starts[index] < crawls[n + 1], "two crawls of one IP overlapped"
        seen: dict[str, dict] = {}
        for req in sessions[index]:
            listings = {x.id: x for x, _ in market.search(keyword, {market.ON_SALE, market.TRADING,
                                                                     market.SOLD_OUT}, req["t"])}
            for source_id, status, price, created in req["items"]:
                status = "on_sale" if status == "on_sale" else "sold"
                if source_id not in seen or status == "sold":  # sold while we paged: the sale wins
                    updated = int(listings[source_id].updated_at(req["t"]))
                    seen[source_id] = {"source_id": source_id, "status": status, "price": price,
                                       "created": int(created), "updated": updated}
        script_crawls.append((crawled_at, list(seen.values())))
    rows = scripted.expected_hours(scripted.Script(script_crawls))
    return ({datetime.fromtimestamp(h, timezone.utc).replace(tzinfo=None):
             (r["inflow"], r["outflow"], r["samples"], r["min"], r["max"]) for h, r in rows.items()},
            {it["source_id"] for _, items in script_crawls for it in items})


def assert_logs_clean(logs: Path) -> None:
    """A normal run logs no ERROR (nor CRITICAL, nor a traceback): an ERROR line must mean a real error."""
    files = sorted(logs.glob("*.log"))
    assert {f.name for f in files} >= {"scheduler.log", "crawler.log", "worker.log"}, files
    for file in files:
        bad = [line for line in file.read_text(errors="replace").splitlines()
               if re.search(r"\bERROR\b|\bCRITICAL\b|Traceback", line)]
        assert bad == [], f"{file.name}:\n" + "\n".join(bad[:20])


def test_demo_statistics_match_the_simulators_ground_truth_and_it_runs_twice(demo_run, tmp_path):
    out = demo_run.stdout
    assert_demo_ended_cleanly(out)
    requests = defaultdict(list)
    for line in demo_run.served.read_text().splitlines():
        req = json.loads(line)
        requests[req["keyword"]].append(req)

    assert_logs_clean(demo_run.data_dir / "logs")
    db = sqlite3.connect(f"file:{demo_run.database}?mode=ro", uri=True)  # shared with tests/web: read only
    ips = dict(db.execute("SELECT id, keyword FROM ip_metadata"))
    assert len(ips) == int(DEMO_ARGS[DEMO_ARGS.index("--ips") + 1])
    totals = [0, 0]
    for ip_id, keyword in ips.items():
        crawls = [t for (t,) in db.execute("SELECT crawled_at FROM applied_results WHERE ip_id = ? "
                                           "ORDER BY crawled_at", (ip_id,))]
        assert len(crawls) >= 2, f"{keyword}: {len(crawls)} crawls applied; a baseline and one more are needed"
        expected, seen_ids = expected_hours(keyword, crawls, crawl_sessions(requests[keyword]))
        actual = {datetime.fromisoformat(bucket): (inflow, outflow, samples, None if low is None else round(low),
                                                   None if high is None else round(high))
                  for bucket, inflow, outflow, samples, low, high in db.execute(
                      "SELECT hour_bucket, inflow, outflow, sample_count, min_price, max_price FROM ip_stats_hourly "
                      "WHERE ip_id = ?", (ip_id,))}
        assert actual == expected, keyword
        snapshots = {sid for (sid,) in db.execute("SELECT source_id FROM item_snapshots WHERE ip_id = ?", (ip_id,))}
        assert snapshots == seen_ids, keyword  # every listing served reached the database, and nothing else
        totals[0] += sum(v[0] for v in expected.values())
        totals[1] += sum(v[1] for v in expected.values())
    assert totals[0] > 0 and totals[1] > 0, totals  # the comparison covered real inflow and outflow

    board = out.split("Leaderboard by outflow")[1]
    ranked = re.findall(r"^\s+(\d+)\s+.+?\s+(\d+)\s+(\d+)\s+\S+$", board, re.M)
    assert [int(r[0]) for r in ranked] == list(range(1, len(ips) + 1))  # every IP ranked
    outflows = [int(r[2]) for r in ranked]
    assert outflows == sorted(outflows, reverse=True)  # by outflow
    # the sales of the window it names (event time: a crawl may see sales from before the run began)
    since = datetime.fromisoformat(re.search(r"\(since (\S+ \d\d:00) UTC\)", board)[1])
    assert sorted(outflows) == sorted(
        sum(o for bucket, o in db.execute("SELECT hour_bucket, outflow FROM ip_stats_hourly WHERE ip_id = ?", (i,))
            if datetime.fromisoformat(bucket) >= since) for i in ips)
    db.close()

    # a second run right after the first works too (a fresh market), and nothing is left running after either:
    # it runs over a copy of the first run's data directory (the shared run must stay as it is)
    shutil.copytree(demo_run.data_dir, tmp_path / "var" / "demo",
                    ignore=lambda folder, names: [n for n in names
                                                  if stat.S_ISSOCK((Path(folder) / n).lstat().st_mode)])
    out = run_demo(tmp_path, "--minutes", "0.5", "--ips", "2")
    assert_demo_ended_cleanly(out)
    # both IPs crawled: counted in the database, with the crawls the stop let finish (the progress lines are
    # printed while they run, and on a busy machine the first crawls end after the last of them)
    db = sqlite3.connect(tmp_path / "var" / "demo" / "animetop.sqlite3")
    crawled = db.execute("SELECT COUNT(DISTINCT ip_id) FROM applied_results").fetchone()[0]
    db.close()
    assert crawled == 2, out
    for data in (str(demo_run.data_dir).encode(), str(tmp_path / "var" / "demo").encode()):
        assert processes_matching(data + b"/redis.sock") == []  # the demo's redis-server is stopped
        # nor anything else the demo started (Chromium included): they all inherit its DATA_DIR
        assert processes_matching(b"DATA_DIR=" + data + b"\0", "environ") == []


def test_a_demo_killed_outright_leaves_no_process_type_running(tmp_path, chromium):
    """SIGKILL (a test's timeout, the OOM killer) gives the demo no chance to stop what it started: the kernel
    tells its process types' runners, which stop as on a normal SIGTERM."""
    data = tmp_path / "var" / "demo"
    demo = subprocess.Popen([sys.executable, "-m", "lib.cli", "demo", "--minutes", "3", "--ips", "1"], cwd=tmp_path,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
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
