"""The one source of time, so tests can move it instead of sleeping."""

from __future__ import annotations

import threading
import time
from datetime import datetime, timezone
from typing import overload


class Clock:
    """Wall-clock time in Unix seconds, optionally accelerated (the demo runs hours in minutes).

    With ``speed`` s, time runs s times faster than real time, pivoting on the real instant ``anchor``,
    so every process configured alike agrees on the time without talking to each other.
    """

    def __init__(self, speed: float = 1.0, anchor: float = 0.0) -> None:
        self.speed = speed
        self.anchor = anchor

    def now(self) -> float:
        return self.anchor + (time.time() - self.anchor) * self.speed

    def real_seconds(self, seconds: float) -> float:
        """How long ``seconds`` of this clock's time last in real time (timers, Redis expiries)."""
        return seconds / self.speed

    def utcnow(self) -> datetime:
        """Naive UTC datetime, as stored in the database."""
        return naive_utc(self.now())


class FrozenClock(Clock):
    """A clock that only moves when told to (tests)."""

    def __init__(self, at: float) -> None:
        super().__init__()
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


@overload
def to_timestamp(value: datetime) -> float: ...
@overload
def to_timestamp(value: None) -> None: ...
@overload
def to_timestamp(value: datetime | None) -> float | None: ...


def to_timestamp(value: datetime | None) -> float | None:
    """A naive-UTC datetime from the database as Unix seconds."""
    if value is None:
        return None
    return value.replace(tzinfo=timezone.utc).timestamp()
