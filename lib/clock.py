"""The one source of time, so tests can move it instead of sleeping."""

from __future__ import annotations

import threading
import time
from datetime import datetime, timezone


class Clock:
    """Wall-clock time in Unix seconds."""

    def now(self) -> float:
        return time.time()

    def utcnow(self) -> datetime:
        """Naive UTC datetime, as stored in the database."""
        return naive_utc(self.now())


class FrozenClock(Clock):
    """A clock that only moves when told to (tests)."""

    def __init__(self, at: float) -> None:
        self._at = at
        self._lock = threading.Lock()

    def now(self) -> float:
        with self._lock:
            return self._at

    def set(self, at: float) -> None:
        with self._lock:
            self._at = at

    def advance(self, seconds: float) -> None:
        with self._lock:
            self._at += seconds


_clock: Clock = Clock()


def get_clock() -> Clock:
    return _clock


def set_clock(clock: Clock | None) -> None:
    """Install a clock for the process (None restores the system clock)."""
    global _clock
    _clock = clock or Clock()


def naive_utc(ts: float) -> datetime:
    """Unix seconds as the naive-UTC datetime the database stores."""
    return datetime.fromtimestamp(ts, timezone.utc).replace(tzinfo=None)


def to_timestamp(value: datetime | None) -> float | None:
    """A naive-UTC datetime from the database as Unix seconds."""
    if value is None:
        return None
    return value.replace(tzinfo=timezone.utc).timestamp()
