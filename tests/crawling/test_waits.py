"""The crawler's waits on its child tasks never swallow the caller's own cancellation (``lib.crawling.waits``)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

from lib.crawling import page_fetch
from lib.crawling.waits import cancel_and_wait, result_within, within

#: The bound on each wait of these tests (never reached when the code is right).
BOUND = 5.0


async def slow_to_stop(entered: asyncio.Event, release: asyncio.Event) -> None:
    """A child that, once cancelled, ends only when ``release`` is set (a page's evaluation being wound down)."""
    try:
        await asyncio.sleep(3600)
    except asyncio.CancelledError:
        entered.set()
        await release.wait()
        raise


def cancelled_while_stopping(stop: Callable[[asyncio.Task[None]], Awaitable[None]]) -> None:
    """The caller runs ``stop(child)`` and is itself cancelled while the child winds down: the caller must end
    cancelled, not go on as if the child's ``CancelledError`` had been its own."""

    async def go() -> None:
        entered, release = asyncio.Event(), asyncio.Event()
        child = asyncio.ensure_future(slow_to_stop(entered, release))
        await asyncio.sleep(0)  # the child is in its sleep
        went_on = []

        async def caller() -> None:
            await stop(child)
            went_on.append(True)

        task = asyncio.ensure_future(caller())
        await asyncio.wait_for(entered.wait(), BOUND)
        task.cancel()
        await asyncio.sleep(0)
        release.set()
        await asyncio.wait({task}, timeout=BOUND)
        assert task.done() and task.cancelled() and not went_on
        assert child.cancelled()

    asyncio.run(go())


def test_cancel_and_wait_re_raises_the_callers_cancellation():
    cancelled_while_stopping(cancel_and_wait)


def test_stopping_the_first_pages_scrolling_re_raises_the_callers_cancellation():
    cancelled_while_stopping(page_fetch._stop)


def test_cancel_and_wait_ends_the_children_and_drops_their_outcomes():
    async def go() -> tuple[bool, bool]:
        async def fails() -> None:
            raise ValueError("an outcome nobody needs")

        failed = asyncio.ensure_future(fails())
        sleeping = asyncio.ensure_future(asyncio.sleep(3600))
        await asyncio.sleep(0)
        await cancel_and_wait(failed, sleeping, None)
        return failed.done(), sleeping.cancelled()

    assert asyncio.run(go()) == (True, True)


def test_cancel_and_wait_gives_up_on_a_child_that_ignores_its_cancellation(monkeypatch, caplog):
    """Every wait has a bound: a child that swallows its cancellation is left running, with a WARNING."""
    monkeypatch.setattr("lib.crawling.waits.CANCEL_BOUND", 0.2)

    async def stubborn(go_on: asyncio.Event) -> None:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            await go_on.wait()  # ignores it

    async def go() -> bool:
        go_on = asyncio.Event()
        child = asyncio.ensure_future(stubborn(go_on))
        await asyncio.sleep(0)
        await asyncio.wait_for(cancel_and_wait(child), BOUND)
        still_running = not child.done()
        go_on.set()
        await asyncio.wait({child}, timeout=BOUND)
        return still_running

    assert asyncio.run(go())
    assert "still running after" in caplog.text


def test_a_cancellation_that_comes_with_the_result_is_not_lost():
    """``asyncio.wait_for`` before Python 3.12 returns the result and drops the cancellation when both come in the
    same turn of the loop; ``result_within`` and ``within`` raise the cancellation."""

    async def race(wait: Callable[[asyncio.Future[int]], Awaitable[int]]) -> bool:
        future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        task = asyncio.ensure_future(wait(future))
        await asyncio.sleep(0)  # the task waits on the future
        future.set_result(1)
        task.cancel()
        await asyncio.wait({task}, timeout=BOUND)
        return task.cancelled()

    async def go() -> tuple[bool, bool]:
        return (await race(lambda f: result_within(f, BOUND)),
                await race(lambda f: within(asyncio.shield(f), BOUND)))

    assert asyncio.run(go()) == (True, True)


def test_result_within_times_out_and_leaves_the_call_running():
    async def go() -> bool:
        call = asyncio.ensure_future(asyncio.sleep(3600))
        with pytest.raises(asyncio.TimeoutError):
            await result_within(call, 0.01)
        running = not call.done()
        call.cancel()
        return running

    assert asyncio.run(go())


def test_within_times_out_and_cancels_the_call():
    async def go() -> bool:
        call = asyncio.ensure_future(asyncio.sleep(3600))
        with pytest.raises(asyncio.TimeoutError):
            await within(call, 0.01)
        return call.cancelled()

    assert asyncio.run(go())
