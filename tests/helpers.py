"""Small helpers shared by the tests."""

import time


def wait_for(condition, timeout: float = 20.0, interval: float = 0.05, what: str = "condition"):
    """Poll until ``condition()`` is truthy; fail the test after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def run_cli(env: dict, *args: str, timeout: float = 60):
    """Run ``animetop ARGS`` as a user would, in a fresh process with ``env``."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    full_env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **env}
    return subprocess.run([sys.executable, "-m", "lib.cli", *args], env=full_env, capture_output=True, text=True,
                          timeout=timeout, cwd=Path(__file__).parent.parent)
