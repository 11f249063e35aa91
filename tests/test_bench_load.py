"""The load benchmark at a tiny scale: it runs to the end, prints its tables with every IP crawled, and
leaves no process behind. Speeds are printed, never asserted."""

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from .helpers import processes_matching

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def short_tmp():
    """A temporary directory with a short path: the embedded Redis's unix socket goes under it, and a socket's path
    must stay under 108 bytes, which pytest's own temporary paths (popen-gwN/test_…/) can outgrow."""
    path = Path(tempfile.mkdtemp(prefix="atl-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_load_benchmark_tiny_scale(short_tmp, chromium):
    tmp_path = short_tmp
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp_path)}  # its DATA_DIRs go under tmp_path
    result = subprocess.run([sys.executable, "-m", "bench", "load", "--ips", "3,5", "--cycles", "1"],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=150)
    out = result.stdout
    assert result.returncode == 0, out + result.stderr
    rows = re.findall(r"^\s+(\d+)\s+(\d+)\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+.*\s(\d+)/(\d+)$", out, re.M)
    assert [(r[0], r[2], r[3]) for r in rows] == [("3", "3", "3"), ("5", "5", "5")], out  # every IP crawled
    assert all(int(r[1]) >= int(r[0]) for r in rows), out  # at least one crawl per IP in the window
    for section in ("queue depth", "peak memory per process type", "CPU seconds per crawl"):
        assert section in out, out
    assert re.search(r"seconds per crawl, 5 IPs \(floor: 3 IPs\).*ratio", out), out
    assert re.search(r"seconds per crawl, 3 IPs \(floor: bare fetch of its pages\).*ratio", out), out
    assert "!" not in out.split("CPU seconds per crawl")[1], out  # no incomplete scale, no dead letters
    assert processes_matching(str(tmp_path).encode()) == []  # its redis-servers and Chromiums are gone
    assert list(tmp_path.glob("animetop-load-*")) == []  # and its data
