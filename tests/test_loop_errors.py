"""The crawler's event loop drops pyppeteer's unretrieved "No session with given id" replies, nothing else."""

from __future__ import annotations

import asyncio
import gc
import logging

from pyppeteer.errors import NetworkError

from lib.crawling import loop_errors


def _abandon_future_with(exception: BaseException) -> None:
    """What pyppeteer's CDPSession.send does: a future that fails and that nobody ever awaits."""

    async def main() -> None:
        loop_errors.install(asyncio.get_running_loop())
        future = asyncio.get_running_loop().create_future()
        future.set_exception(exception)
        del future
        gc.collect()  # the "never retrieved" report is made when the future is collected

    asyncio.run(main())


def test_an_unretrieved_no_session_reply_is_not_logged(caplog):
    caplog.set_level(logging.INFO)
    _abandon_future_with(NetworkError("Protocol error (Target.sendMessageToTarget): No session with given id"))
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []


def test_other_unretrieved_errors_are_still_logged(caplog):
    caplog.set_level(logging.INFO)
    _abandon_future_with(NetworkError("Protocol error (Page.navigate): Target closed."))
    _abandon_future_with(ValueError("No session with given id"))  # not pyppeteer's
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 2 and all("never retrieved" in r.getMessage() for r in errors), errors
