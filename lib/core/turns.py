"""A re-entrant lock that gives itself to its waiters in the order they came.

``threading.RLock`` lets a thread that releases it take it straight back before a waiter wakes: a thread that
writes in a loop (the maintenance pass, chunk after chunk) can keep the others out for as long as it runs. Here a
release hands the lock to the longest waiting thread."""

from __future__ import annotations

import threading
from collections import deque


class TurnLock:
    """A re-entrant lock served first come, first served.

    ``acquire(timeout)`` waits at most ``timeout`` seconds and returns whether the lock was taken; ``release`` by
    the owner, once per ``acquire``, hands it to the next waiter when the last is undone."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._owner: int | None = None
        self._depth = 0
        self._waiting: deque[tuple[int, threading.Event]] = deque()

    def acquire(self, timeout: float) -> bool:
        me = threading.get_ident()
        with self._guard:
            if self._owner == me:
                self._depth += 1
                return True
            if self._owner is None and not self._waiting:
                self._owner, self._depth = me, 1
                return True
            turn = threading.Event()
            self._waiting.append((me, turn))
        try:
            granted = turn.wait(timeout)
        except BaseException:
            # an exception raised into the waiting thread (Dramatiq's time limit and shutdown raise them so): it
            # leaves the line, or passes the lock on if it was handed it meanwhile, so no one waits on a thread
            # that is gone
            with self._guard:
                if turn.is_set():
                    self._pass_on()
                else:
                    self._waiting.remove((me, turn))
            raise
        if granted:
            return True
        with self._guard:
            if turn.is_set():  # handed over between the timeout and this line
                return True
            self._waiting.remove((me, turn))
            return False

    def release(self) -> None:
        with self._guard:
            if self._owner != threading.get_ident():
                raise RuntimeError("release of a TurnLock not held by this thread")
            self._depth -= 1
            if not self._depth:
                self._pass_on()

    def _pass_on(self) -> None:
        """Hand the lock to the longest waiter, or free it (under the guard)."""
        if self._waiting:
            self._owner, turn = self._waiting.popleft()
            self._depth = 1
            turn.set()
        else:
            self._owner, self._depth = None, 0

    def waiting(self) -> int:
        """How many threads wait for it."""
        with self._guard:
            return len(self._waiting)
