"""The crawler's event loop drops one known, harmless pyppeteer error instead of logging it as an ERROR.

pyppeteer's ``CDPSession.send`` forwards a tab's command through ``Target.sendMessageToTarget`` and never
awaits the future of that outer call. When the tab's session is already gone (a tab closed while a request
of it was being answered or blocked, which the resource blocking makes common), Chromium answers that call
with "No session with given id"; nobody retrieves the future, and asyncio logs "Future exception was never
retrieved" with a traceback at ERROR on most crawls. The command it carried concerned a closed tab, so
nothing is lost. Every other unhandled error still reaches the previous handler.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from lib.crawling import driver_compat

logger = logging.getLogger(__name__)

_INSTALLED = "_animetop_loop_errors"


def is_orphaned_session_reply(context: dict[str, Any]) -> bool:
    """An unretrieved future failed with pyppeteer's "No session with given id" reply
    (``driver_compat.is_orphaned_session_reply``)."""
    exception = context.get("exception")
    return (context.get("future") is not None and exception is not None
            and driver_compat.is_orphaned_session_reply(exception))


def install(loop: asyncio.AbstractEventLoop) -> None:
    """Put the filter in front of ``loop``'s exception handler (once per loop)."""
    if getattr(loop, _INSTALLED, False):
        return
    previous = loop.get_exception_handler()

    def handle(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        if is_orphaned_session_reply(context):
            logger.debug("dropped a reply for a closed tab: %s", context.get("exception"))
        elif previous is not None:
            previous(loop, context)
        else:
            loop.default_exception_handler(context)

    loop.set_exception_handler(handle)
    setattr(loop, _INSTALLED, True)
