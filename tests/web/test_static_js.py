"""The dashboard's scripts parse: a syntax error in one (a missing parenthesis in ip.js once) showed only as a
browser test's timeout, a minute later and far from the cause. ``node --check`` parses without running."""

import shutil
import subprocess
from pathlib import Path

import pytest

STATIC = Path(__file__).parent.parent.parent / "lib" / "web" / "static"
SCRIPTS = sorted(p for p in STATIC.glob("*.js"))


@pytest.mark.skipif(shutil.which("node") is None, reason="no node on this machine to parse the scripts with")
@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_each_dashboard_script_parses(script):
    checked = subprocess.run(["node", "--check", str(script)], capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0, checked.stderr


def test_there_are_scripts_to_check():
    assert {p.name for p in SCRIPTS} >= {"common.js", "charts.js", "ip.js", "leaderboard.js", "operations.js",
                                           "segments.js"}
