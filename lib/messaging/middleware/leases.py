"""Keeps Redis locks alive while their holders still run.

A fixed TTL (say 30 s) lets a long task lose its lock to a second
worker mid-run. Instead every held lock is registered here and one daemon
thread per process re-arms it to its full timeout every third of it; a
worker that dies stops extending, so its locks lapse within one TTL.

A lock this very process took and could not release (the state was unavailable at that moment) is not left to
lapse by its TTL either: the process knows the tokens of the locks it holds, and a lock carrying its holder name
with a token it no longer holds is taken over at once; otherwise the message that runs again after the outage
would wait the whole lease for a lock nobody holds.

A lock can also be taken over at once from a holder that is gone. Each lock's token names its holder (host,
pid and a random part), and the holder keeps a short-lived key of its own alive (``HOLDER_TTL``) while it
holds leases. A message redelivered after its worker was SIGKILLed finds the lock held by a holder whose key
has lapsed, deletes the dead holder's lock (compare-and-delete on its token) and takes it, instead of
waiting out the whole lease (30 s by default).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable

import redis
from redis.exceptions import LockError, LockNotOwnedError, RedisError
from redis.lock import Lock

from lib.core import keys

logger = logging.getLogger(__name__)

#: Lifetime of a holder's liveness key, renewed every ``HOLDER_RENEW`` seconds while it holds leases: a holder
#: killed outright counts as gone this long after its last renewal.
HOLDER_TTL = 5.0
HOLDER_RENEW = 1.0

#: Deletes a lock only if it still carries the dead holder's token (a live holder may have taken it since).
_DELETE_IF_TOKEN = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"


class LeaseKeeper:
    """Re-arms every held lock at a third of its timeout until it is released."""

    def __init__(self, redis_client: Callable[[], redis.Redis] | None = None, tick: float = 0.2) -> None:
        self.redis_client = redis_client
        self.tick = tick
        self._held: dict[int, tuple[Lock, float]] = {}
        #: The token of every lock this process acquired and has not released (by the lock object's id).
        self._tokens: dict[int, str] = {}
        self._mutex = threading.Lock()
        self._thread: threading.Thread | None = None
        self._holder: tuple[int, str] | None = None
        self._announced = 0.0

    @property
    def holder(self) -> str:
        """This process's holder name (a forked child gets its own)."""
        if self._holder is None or self._holder[0] != os.getpid():
            self._holder = (os.getpid(), f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}")
            self._announced = 0.0
        return self._holder[1]

    def _announce(self, client: redis.Redis, force: bool = False) -> None:
        """Renew this holder's liveness key (at most once per HOLDER_RENEW unless forced)."""
        now = time.monotonic()
        if force or now - self._announced >= HOLDER_RENEW:
            client.set(keys.lease_holder(self.holder), b"1", px=int(HOLDER_TTL * 1000))
            self._announced = now

    def acquire(self, client: redis.Redis, lock: Lock) -> bool:
        """Take ``lock`` (not blocking) with a token naming this holder; if a holder that is gone has it, free it
        and take it. False when a live holder has it."""
        self._announce(client)
        if self._acquire(lock):
            return True
        current = client.get(lock.name)
        token = current.decode(errors="replace") if isinstance(current, bytes) else (current or "")
        holder, named, _ = token.partition("/")
        # a token that names no holder (taken by something else than a LeaseKeeper) is never presumed dead
        if not named:
            return False
        if holder == self.holder:
            with self._mutex:
                if token in self._tokens.values():  # held by a run of this process
                    return False
            why = "a release that failed here left it"
        elif client.exists(keys.lease_holder(holder)):
            return False
        else:
            why = f"its holder {holder} is gone"
        if client.eval(_DELETE_IF_TOKEN, 1, lock.name, current):
            logger.info("lock %s: %s; taking it over", lock.name, why)
        return self._acquire(lock)

    def _acquire(self, lock: Lock) -> bool:
        token = f"{self.holder}/{uuid.uuid4().hex}"
        with self._mutex:  # recorded first, so no other thread of this process takes it for an orphan
            self._tokens[id(lock)] = token
        try:
            if lock.acquire(token=token):
                return True
        except BaseException:
            self._forget(lock)
            raise
        self._forget(lock)
        return False

    def _take_back(self, lock: Lock) -> bool:
        """Set a held lock that has vanished from Redis again, with its token; False if another holder has it."""
        with self._mutex:
            token = self._tokens.get(id(lock))
        try:
            return token is not None and bool(lock.acquire(token=token))
        except RedisError:
            return False

    def _forget(self, lock: Lock) -> None:
        with self._mutex:
            self._tokens.pop(id(lock), None)

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
            # forgotten even if the release fails: the lock left in Redis is then taken over by the next run
            self._tokens.pop(id(lock), None)
        try:
            lock.release()
            return True
        except LockNotOwnedError:
            logger.warning("lock %s had expired or was taken before release", lock.name)
            return False
        except (LockError, RedisError) as e:
            logger.warning("could not release lock %s: %s (taken over by the next run here, else it lapses by its TTL)",
                           lock.name, e)
            return False

    def _run(self) -> None:
        while True:
            time.sleep(self.tick)
            with self._mutex:
                holding = bool(self._held)
                due = [(key, lock) for key, (lock, at) in self._held.items()
                       if time.monotonic() - at >= lock.timeout / 3]
            if holding and self.redis_client is not None:
                try:
                    self._announce(self.redis_client())
                except RedisError as e:
                    logger.warning("could not renew holder %s: %s; will try again", self.holder, e)
            for key, lock in due:
                try:
                    lock.reacquire()
                except LockNotOwnedError:
                    if self._take_back(lock):
                        # a Redis Cluster failover loses what was not yet replicated, a wipe loses everything
                        logger.warning("lock %s had vanished from the state while its holder still runs (a failover "
                                       "or a wipe): taken back", lock.name)
                    else:
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
