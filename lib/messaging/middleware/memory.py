"""Gives the pages a message's work freed back to the system, so a worker's memory follows what it holds, not the
largest work it has done (docs/benchmarks.md, "Memory")."""

from __future__ import annotations

import ctypes
import ctypes.util
import threading
import time
from collections.abc import Callable
from typing import Any

from dramatiq import Broker, MessageProxy, Middleware


def malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``; None under another C library (nothing to give back that way)."""
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        trim = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return trim


class ReleaseMemory(Middleware):
    """After a message, ``malloc_trim(0)``: glibc keeps the pages a message's work freed (a crawl result's
    listings, a window's facts) in the arena of the thread that ran it, one arena a thread, and hands them to the
    system only from the top of each. Whatever a later message keeps alive above them pins them, and the worker's
    resident memory climbs with the largest work each thread has ever done. Trimming gives every wholly free page
    back.

    Parameters:
        interval: seconds between two trims at least (a trim walks every arena; a burst of short messages needs
            only one).
        trim: the function called (glibc's ``malloc_trim`` by default; without it the middleware does nothing).
    """

    def __init__(self, interval: float = 1.0, trim: Callable[[int], int] | None = None) -> None:
        self.interval = interval
        self.trim = trim if trim is not None else malloc_trim()
        self._last = float("-inf")
        self._mutex = threading.Lock()

    def _release(self) -> None:
        if self.trim is None:
            return
        with self._mutex:
            now = time.monotonic()
            if now - self._last < self.interval:
                return
            self._last = now
        self.trim(0)

    def after_process_message(self, broker: Broker, message: MessageProxy, *, result: Any = None,
                              exception: BaseException | None = None) -> None:
        self._release()

    def after_skip_message(self, broker: Broker, message: MessageProxy) -> None:
        self._release()
