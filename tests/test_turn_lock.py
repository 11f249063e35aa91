"""lib.core.turns.TurnLock: first come, first served, re-entrant, bounded waits."""

import ctypes
import threading

import pytest

from lib.core.turns import TurnLock

from .helpers import wait_for


def _queue(lock: TurnLock, name: str, order: list[str]) -> threading.Thread:
    """A thread that waits for the lock, notes its turn and releases; started once the ones before it wait."""

    def take() -> None:
        assert lock.acquire(timeout=30)
        order.append(name)
        lock.release()

    before = lock.waiting()
    thread = threading.Thread(target=take)
    thread.start()
    wait_for(lambda: lock.waiting() == before + 1, what=f"{name} waiting")
    return thread


def test_waiters_take_the_lock_in_the_order_they_came():
    lock, order = TurnLock(), []
    assert lock.acquire(timeout=1)
    threads = [_queue(lock, name, order) for name in ("a", "b", "c", "d")]
    lock.release()
    for t in threads:
        t.join(timeout=30)
    assert order == ["a", "b", "c", "d"]


def test_a_release_hands_the_lock_to_the_waiter_before_the_releaser_can_take_it_back():
    lock, order = TurnLock(), []
    assert lock.acquire(timeout=1)
    waiter = _queue(lock, "waiter", order)
    lock.release()
    assert lock.acquire(timeout=30)  # queued behind the waiter: served after it
    assert order == ["waiter"]
    lock.release()
    waiter.join(timeout=30)


def test_it_is_re_entrant_and_released_by_as_many_releases():
    lock, order = TurnLock(), []
    assert lock.acquire(timeout=1) and lock.acquire(timeout=1)
    waiter = _queue(lock, "waiter", order)
    lock.release()
    assert order == [] and lock.waiting() == 1  # still held once
    lock.release()
    waiter.join(timeout=30)
    assert order == ["waiter"]


def test_a_wait_that_times_out_leaves_the_line():
    lock = TurnLock()
    assert lock.acquire(timeout=1)
    outcome = []
    late = threading.Thread(target=lambda: outcome.append(lock.acquire(timeout=0.05)))
    late.start()
    late.join(timeout=30)
    assert outcome == [False] and lock.waiting() == 0
    lock.release()
    assert lock.acquire(timeout=0)  # free: nobody was handed it
    lock.release()


def test_only_its_holder_releases_it():
    lock = TurnLock()
    with pytest.raises(RuntimeError):
        lock.release()
    assert lock.acquire(timeout=1)
    errors = []

    def release() -> None:
        try:
            lock.release()
        except RuntimeError as e:
            errors.append(e)

    other = threading.Thread(target=release)
    other.start()
    other.join(timeout=30)
    assert len(errors) == 1
    lock.release()


class Stopped(Exception):
    """What Dramatiq's time limit raises into a worker thread (``PyThreadState_SetAsyncExc``)."""


def test_a_waiter_stopped_by_an_exception_raised_into_its_thread_does_not_keep_the_lock():
    """Dramatiq stops a message past its time limit by raising an exception into its thread: one raised while
    the thread waits its turn comes when the turn does, and the lock goes on to the next instead of staying with
    a thread that left."""
    lock, outcome = TurnLock(), []
    assert lock.acquire(timeout=1)

    def wait() -> None:
        try:
            lock.acquire(timeout=30)
            outcome.append("acquired")
        except Stopped:
            outcome.append("stopped")

    waiter = threading.Thread(target=wait)
    waiter.start()
    wait_for(lambda: lock.waiting() == 1, what="the waiter in line")
    assert ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(waiter.ident), ctypes.py_object(Stopped)) == 1
    lock.release()  # hands the lock to the waiter, whose exception comes as it wakes
    waiter.join(timeout=30)
    assert outcome == ["stopped"]
    assert lock.acquire(timeout=5)  # free again, not held by the stopped thread
    lock.release()
