"""The demo's one clock, shared by its simulator, its result path and its dashboard."""

from __future__ import annotations

import time

from lib.core.clock import Clock


class DemoClock(Clock):
    """Stands at each crawl's time while the history is applied (``set``); then runs ``speed`` times faster than
    real time from the history's end (``run``), as the process types' clocks do (``CLOCK_SPEED``,
    ``CLOCK_ANCHOR``); and stands still once the crawl phase is over (``stop``), so the closing leaderboard and the
    dashboard served after it read the windows as they were at the end, instead of sliding on into hours nothing
    crawled. Its ``speed`` holds throughout: what derives real time from it (Redis expiries of item states) comes
    out alike in the history and the live phase."""

    def __init__(self, speed: float) -> None:
        super().__init__(speed, time.time())
        self.at: float | None = None

    def now(self) -> float:
        at = self.at
        return at if at is not None else super().now()

    def set(self, at: float) -> None:
        self.at = at

    def run(self) -> None:
        """Run on from here: the simulated time of now is the real time of now."""
        self.anchor = time.time()
        self.at = None

    def stop(self) -> None:
        self.at = self.now()
