"""``python -m bench plan``: its options, its table against a computation written here (requests a day, the median
relative error, the share of true sales seen), and a tiny run end to end in which the page plans cost fewer requests
than reading every search to its end or its cap."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.plan import IpDay, Options, options, table

from .conftest import BROKER_DB, STATE_DB
from .helpers import empty_redis_databases

ROOT = Path(__file__).resolve().parent.parent


def cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip("|").split("|")]


def test_options():
    assert options([]) == Options(1000, 1, 1, 1)
    assert options(["--ips", "30", "--days", "2", "--warmup", "0", "--seed", "4"]) == Options(30, 2, 0, 4)
    assert options(["--max-interval", "12h"]).max_interval == 12 * 3600
    assert options(["--budget", "120"]).budget == 120
    assert options(["--budget", "120", "--budget", "fixed"]) == Options(same_budget=True)
    assert options(["--jobs", "2"]).jobs == 2
    for bad in (["--ips"], ["--ips", "x"], ["--days", "0"], ["--fast", "1"], ["--max-interval", "soon"],
                ["--budget", "0"], ["--budget", "-5"], ["--jobs", "3"], ["--jobs", "0"],
                ["--jobs", "2", "--budget", "fixed"]):  # the fixed budget needs the fixed run first
        with pytest.raises(SystemExit):
            options(bad)


def test_the_table_against_its_definitions():
    runs = {"fixed": [IpDay(0.5, 40, 10, 10, 4, 4, 4, 10, 4), IpDay(50.0, 240, 1100, 1000, 450, 500, 250, 800, 400)],
            "plans": [IpDay(0.5, 20, 10, 10, 4, 4, 4, 8, 2), IpDay(50.0, 200, 900, 1000, 500, 500, 300, 900, 500)]}
    lines = table(runs, days=1)
    niche, middling, everything = (cells(line) for line in lines[2:])
    # read at the day's end: niche plans 8 of 10 (20 %) and 2 of 4 (50 %)
    assert niche == ["niche (<1/h)", "1", "40", "0.0 %", "0.0 %", "0.0 % / 0.0 %", "100%",
                     "20", "0.0 %", "0.0 %", "20.0 % / 50.0 %", "100%"]
    assert middling == ["middling (10-100/h)", "1", "240", "10.0 %", "10.0 %", "20.0 % / 20.0 %", "50%",
                        "200", "10.0 %", "0.0 %", "10.0 % / 0.0 %", "60%"]
    # all: requests summed; errors the median over IP-days ((0 + 10) / 2); sales seen over all true sales
    assert everything == ["all", "2", "280", "5.0 %", "5.0 %", "10.0 % / 10.0 %", f"{254 / 504:.0%}",
                          "220", "5.0 %", "0.0 %", "15.0 % / 25.0 %", f"{304 / 504:.0%}"]


def tiny_run(redis_server, *extra: str) -> tuple[int, int, str]:  # the "all" row's requests a day of each run
    """The requests a day of the fixed and the planned crawls of a tiny run, and its output."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "BENCH_REDIS_URL": redis_server,
           "BENCH_REDIS_DBS": f"{STATE_DB},{BROKER_DB}"}
    for variable in ("BROKER_URL", "REDIS_URL", "DATABASE_URL"):
        env.pop(variable, None)
    empty_redis_databases(redis_server)
    done = subprocess.run([sys.executable, "-m", "bench", "plan", "--ips", "4", "--warmup", "0", *extra],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = [cells(line) for line in done.stdout.splitlines() if line.startswith("|")]
    total = rows[-1]
    assert total[0] == "all" and total[1] == "4", done.stdout
    return int(total[2].replace(",", "")), int(total[7].replace(",", "")), done.stdout


@pytest.mark.slow
def test_a_tiny_run_costs_fewer_requests_with_the_page_plans(redis_server):
    fixed, plans, out = tiny_run(redis_server)
    assert 0 < plans < fixed, out


@pytest.mark.slow
def test_the_runs_side_by_side_print_the_same_table(redis_server):
    """``--jobs 2``: the two runs in two processes, each on its own embedded Redis, read the same numbers as one
    after the other (and leave no redis-server behind: the children stop theirs)."""
    *_, one_by_one = tiny_run(redis_server)
    *_, side_by_side = tiny_run(redis_server, "--jobs", "2")
    assert "the two runs side by side" in side_by_side
    assert [line for line in one_by_one.splitlines() if line.startswith("|")] == [
        line for line in side_by_side.splitlines() if line.startswith("|")]
    assert not bench_redis_servers()


def bench_redis_servers() -> list[str]:
    """The command lines of the redis-servers running under a ``bench plan`` run's temporary directory (only a
    ``--jobs 2`` run starts them: the other tests' runs use the test Redis)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:  # gone meanwhile
            continue
        line = " ".join(command).strip()  # redis-server rewrites its title to one argument: "path address"
        if line.split(" ", 1)[0].rsplit("/", 1)[-1] == "redis-server" and "bench-plan-" in line:
            found.append(line)
    return found


@pytest.mark.slow
def test_a_tiny_run_at_the_fixed_run_s_requests(redis_server):
    """``--budget fixed``: the plans' budget is the fixed run's requests an hour (rounded down), said, and spent
    within a tenth."""
    fixed, plans, out = tiny_run(redis_server, "--budget", "fixed")
    assert f"the plans' budget: {fixed // 24:,} requests an hour, the fixed run's" in out
    assert 0 < plans <= fixed * 1.1, out


@pytest.mark.slow
def test_a_tiny_run_under_a_budget_spends_about_it(redis_server):
    """4 requests an hour for four quiet IPs whose own intervals spend about twice that: the schedule lengthens
    their intervals (up to 12 hours) to about the budget (the plan is made on each IP's reckoning, not on the
    requests themselves: within a tenth of it)."""
    fixed, plans, out = tiny_run(redis_server, "--max-interval", "12h", "--budget", "4")
    assert "the plans' budget 4 requests an hour" in out
    assert fixed > 24 * 4 * 1.5 and 0 < plans <= 24 * 4 * 1.1, out
    # four niche IPs, each search read to its end: once each is crawled after the day, the day reads its truth
    # exactly, however seldom it was crawled (read at the day's end, the hours since each last crawl are missing)
    total = next(cells(line) for line in out.splitlines() if line.startswith("| all |"))
    assert (total[3], total[4], total[8], total[9]) == ("0.0 %",) * 4, out
