"""Waiting on the crawler's child tasks without ever losing the caller's own cancellation.

Awaiting a child that was just cancelled raises the child's ``CancelledError``, which looks exactly like the
caller's own: code that swallows the one swallows the other, and a cancelled crawl goes on as if nothing
happened. And ``asyncio.wait_for`` before Python 3.12 returns the inner result, dropping the caller's
cancellation, when both come in the same turn of the loop. So the waits here go through ``asyncio.wait``, which
never raises a child's outcome and always raises the caller's cancellation (docs/concepts/crawling.md,
"Cancellation").
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from typing import Any, TypeVar

T = TypeVar("T")
logger = logging.getLogger(__name__)
#: How long a cancelled child is waited for: a child that honours its cancellation ends within a turn or two.
CANCEL_BOUND = 5.0


def retrieve(future: asyncio.Future[Any]) -> None:
    """Mark a finished future's exception as seen (its outcome no longer matters)."""
    if not future.cancelled():
        future.exception()


async def result_within(future: asyncio.Future[T], seconds: float) -> T:
    """``future``'s result once it is done, or ``asyncio.TimeoutError`` after ``seconds``. The future is left to
    end on its own when the wait times out or the caller is cancelled (what ``wait_for`` of a ``shield`` did)."""
    done, _ = await asyncio.wait({future}, timeout=max(seconds, 0.0))
    if not done:
        raise asyncio.TimeoutError
    return future.result()


async def within(awaitable: Awaitable[T], seconds: float) -> T:
    """``awaitable``'s result, or ``asyncio.TimeoutError`` after ``seconds``; it is cancelled (and waited for)
    when the wait times out or the caller is cancelled: ``asyncio.wait_for``, whose caller's cancellation always
    propagates."""
    task = asyncio.ensure_future(awaitable)
    try:
        return await result_within(task, seconds)
    finally:
        await cancel_and_wait(task)


async def cancel_and_wait(*tasks: asyncio.Future[Any] | None) -> None:
    """Cancel the unfinished ``tasks`` (None: no task) and wait until every one has ended, at most
    ``CANCEL_BOUND``; their outcomes are dropped. The caller's own cancellation during the wait propagates; a
    child's ``CancelledError`` is only that child's outcome."""
    children = {task for task in tasks if task is not None}
    for task in children:
        task.add_done_callback(retrieve)
        task.cancel()
    running = {task for task in children if not task.done()}
    if running:
        _, stuck = await asyncio.wait(running, timeout=CANCEL_BOUND)
        if stuck:  # a child that ignores its cancellation is left to end on its own, not waited for forever
            logger.warning("%d cancelled crawler task(s) still running after %.0f s; left to end on their own",
                           len(stuck), CANCEL_BOUND)
