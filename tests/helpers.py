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
