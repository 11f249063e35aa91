"""Keeps Redis locks alive while their holders still run.

A fixed TTL (seed 003's 30 s) lets a long task lose its lock to a second
worker mid-run. Instead every held lock is registered here and one daemon
thread per process re-arms it to its full timeout every third of it; a
worker that dies stops extending, so its locks lapse within one TTL.
"""

from __future__ import annotations

import logging
import threading
import time

from redis.exceptions import LockError, LockNotOwnedError, RedisError
from redis.lock import Lock

logger = logging.getLogger(__name__)


class LeaseKeeper:
    """Re-arms every held lock at a third of its timeout until it is released."""

    def __init__(self, tick: float = 0.2) -> None:
        self.tick = tick
        self._held: dict[int, tuple[Lock, float]] = {}
        self._mutex = threading.Lock()
        self._thread: threading.Thread | None = None

    def hold(self, lock: Lock) -> None:
        with self._mutex:
            self._held[id(lock)] = (lock, time.monotonic())
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="lease-keeper", daemon=True)
                self._thread.start()

    def release(self, lock: Lock) -> bool:
        """Stop extending and release; False if the lock had already been lost."""
        with self._mutex:
            self._held.pop(id(lock), None)
        try:
            lock.release()
            return True
        except LockNotOwnedError:
            logger.warning("lock %s had expired or was taken before release", lock.name)
            return False
        except (LockError, RedisError) as e:
            logger.warning("could not release lock %s: %s (it lapses by its TTL)", lock.name, e)
            return False

    def _run(self) -> None:
        while True:
            time.sleep(self.tick)
            with self._mutex:
                due = [(key, lock) for key, (lock, at) in self._held.items()
                       if time.monotonic() - at >= lock.timeout / 3]
            for key, lock in due:
                try:
                    lock.reacquire()
                except LockNotOwnedError:
                    logger.error("lock %s was lost while its holder still runs", lock.name)
                    with self._mutex:
                        self._held.pop(key, None)
                    continue
                except RedisError as e:
                    logger.warning("could not extend lock %s: %s; will try again", lock.name, e)
                    continue
                with self._mutex:
                    if key in self._held:
                        self._held[key] = (lock, time.monotonic())
