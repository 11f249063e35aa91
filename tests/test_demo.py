"""The README's main-job command, shortened: the real process types against the simulator, twice in a row."""

import os
import re
import subprocess
import sys


def _running(pattern: bytes) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    if pattern in f.read():
                        found.append(int(entry))
            except FileNotFoundError:
                continue
    return found


def test_demo_runs_twice_and_leaves_nothing_behind(tmp_path, chromium):
    for run in range(2):
        result = subprocess.run([sys.executable, "-m", "lib.cli", "demo", "--minutes", "0.5", "--ips", "3"],
                                cwd=tmp_path, capture_output=True, text=True, timeout=240,
                                env={**os.environ, "PYTHONPATH": os.getcwd()})
        assert result.returncode == 0, result.stdout + result.stderr
        crawls = [int(m) for m in re.findall(r"crawls applied\s+(\d+)", result.stdout)]
        assert crawls and crawls[-1] >= 3, result.stdout  # every IP crawled at least once
        board = result.stdout.split("Leaderboard by outflow")[1]
        ranked = re.findall(r"^\s+(\d+)\s+.+?\s+(\d+)\s+(\d+)\s+\S+$", board, re.M)
        assert [r[0] for r in ranked] == ["1", "2", "3"]  # the three IPs ranked
        outflows = [int(r[2]) for r in ranked]
        assert outflows == sorted(outflows, reverse=True)  # by outflow
        assert "dead letters: 0" in result.stdout
    data = str(tmp_path / "var" / "demo").encode()
    assert _running(data + b"/redis.sock") == []  # the demo's redis-server is stopped
    assert _running(b"animetop-chromium-") == []  # and no Chromium
