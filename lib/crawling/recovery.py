"""Recovering a tab that stopped rendering (its page frozen, hidden or starved of frames), and the tally of it.

A page whose tab produces no animation frame is told within seconds (``TabStalled``, see ``Tab.check_rendering``)
and read again after the first of these steps that applies, in this order (each step is tried once per page):

- ``bring_to_front``: the tab is made the browser's active one (``Page.bringToFront``), if it then renders;
- ``new_tab``: the page is read in a new tab of the same browser;
- ``browser_restart``: the browser is restarted (draining, as on a proxy switch) and the page read there.

A page still stalled after the last step fails as a page timeout; the crawl goes on with its next page. Each
step taken is counted: in the crawler's ``animetop_crawler_tab_recoveries_total{step}`` counter, and in a Redis
hash (``keys.CRAWLER_TAB_RECOVERIES``, with the last step and when) that ``animetop status`` shows.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import redis

from lib.core import keys

logger = logging.getLogger(__name__)

BRING_TO_FRONT, NEW_TAB, BROWSER_RESTART = "bring_to_front", "new_tab", "browser_restart"
#: The steps, in the order they are tried.
STEPS = (BRING_TO_FRONT, NEW_TAB, BROWSER_RESTART)


class RecoveryLog:
    """How many times each step was taken, fleet-wide, and the last one.

    Parameters:
      client: the application-state Redis client.
    """

    def __init__(self, client: redis.Redis) -> None:
        self.client = client

    def record(self, step: str, at: float | None = None) -> None:
        if step not in STEPS:
            raise ValueError(f"unknown recovery step {step!r}; expected one of {STEPS}")
        pipe = self.client.pipeline(transaction=False)
        pipe.hincrby(keys.CRAWLER_TAB_RECOVERIES, step, 1)
        pipe.hset(keys.CRAWLER_TAB_RECOVERIES, mapping={"last_step": step,
                                                       "last_at": f"{time.time() if at is None else at:.3f}"})
        pipe.execute()

    def section(self) -> dict[str, Any]:
        """What ``animetop status`` shows: the count of each step, the last step and when (None: never)."""
        raw = {k.decode() if isinstance(k, bytes) else k: v.decode() if isinstance(v, bytes) else v
               for k, v in self.client.hgetall(keys.CRAWLER_TAB_RECOVERIES).items()}
        return {"counts": {step: int(raw.get(step, 0)) for step in STEPS},
                "last_step": raw.get("last_step"),
                "last_at": float(raw["last_at"]) if raw.get("last_at") else None}


def render_status(section: dict[str, Any], when: Callable[[float], str]) -> list[str]:
    """Lines for ``animetop status`` (``when``: how the screen writes a time)."""
    counts = section["counts"]
    line = ("tab recoveries (a tab that stopped rendering): "
            + ", ".join(f"{step.replace('_', ' ')} {counts[step]}" for step in STEPS))
    if section["last_step"]:
        line += f"; last: {section['last_step'].replace('_', ' ')} at {when(section['last_at'])}"
    return [line]
