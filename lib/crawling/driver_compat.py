"""What pyppeteer and Chromium tell the driver only in words, and pyppeteer's exception classes: one fenced module.

pyppeteer raises a few classes for everything (``NetworkError`` for any CDP error answer, ``ElementHandleError``
for a failed evaluation, ``PageError`` for a failed navigation); where the class alone does not tell the case,
the error's text is all there is. Every such text the crawler reads is here, checked against ``PYPPETEER_VERSION``
and the Chromium answers it forwards (``tests/crawling/test_driver_compat.py`` pins the version and provokes each
case in real Chromium). pyppeteer is imported only when an error is classified (its import costs half a second,
and an error of its classes can only exist once it was imported by the driver).
"""

from __future__ import annotations

import sys
import warnings
from typing import Any

#: The pyppeteer release the texts and classes below were checked against.
PYPPETEER_VERSION = "2.0.0"

#: An evaluation whose document went away (a navigation replaced it) or is not there yet:
#: - Chromium's answer to a call into a document already gone ("Cannot find context with specified id"), and
#:   pyppeteer's rewrite of it ("Execution context was destroyed, most likely because of a navigation");
#: - Chromium's answer to a call running when its page navigated ("Inspected target navigated or closed"; a
#:   closed tab's next call fails as a closed tab's);
#: - pyppeteer's ``Frame.evaluate`` on a frame between two documents.
CONTEXT_LOST_TEXTS = ("Execution context was destroyed", "Cannot find context with specified id",
                      "Inspected target navigated or closed", "ExecutionContext is None")
#: Chromium's answer to ``Target.sendMessageToTarget`` for a tab whose session is already closed.
NO_SESSION_TEXT = "No session with given id"


def _errors() -> Any:
    """``pyppeteer.errors`` (a module without type hints)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # websockets 10, pinned by pyppeteer
        import pyppeteer.errors
    return pyppeteer.errors


def _loaded() -> bool:
    """Whether pyppeteer was imported (no error of its classes can exist before)."""
    return "pyppeteer.errors" in sys.modules


def is_navigation_failure(error: BaseException) -> bool:
    """``Page.goto``'s error for a navigation Chromium could not make (its ``errorText``, a ``net::ERR_...``:
    no name resolution, refused, reset, the proxy): ``pyppeteer.errors.PageError``. Only a navigation's error
    means that: the driver asks this of ``goto``'s errors alone."""
    return _loaded() and isinstance(error, _errors().PageError)


def is_connection_lost(error: BaseException) -> bool:
    """The connection to Chromium, or a socket under it, failed: websockets' ``ConnectionClosed`` (the CDP
    WebSocket closed), ``ConnectionError`` (pyppeteer's ``send`` on a closed connection) and other ``OSError``
    (a time limit's ``TimeoutError`` excepted: that is a timeout)."""
    if isinstance(error, OSError) and not isinstance(error, TimeoutError):
        return True
    if "websockets" not in sys.modules:
        return False
    from websockets.exceptions import ConnectionClosed

    return isinstance(error, ConnectionClosed)


def is_context_lost(error: BaseException) -> bool:
    """An evaluation failed because the page's document went away or is not there yet (a navigation): wait on in
    the new document. pyppeteer gives this only as text (``CONTEXT_LOST_TEXTS``)."""
    return (_loaded() and isinstance(error, _errors().PyppeteerError)
            and any(text in str(error) for text in CONTEXT_LOST_TEXTS))


def is_orphaned_session_reply(error: BaseException) -> bool:
    """Chromium's "No session with given id" for a command pyppeteer forwarded to a closed tab (a
    ``pyppeteer.errors.NetworkError``; the text is all that tells it)."""
    return _loaded() and isinstance(error, _errors().NetworkError) and NO_SESSION_TEXT in str(error)


def installed_version() -> str:
    """The installed pyppeteer's version."""
    from importlib.metadata import version

    return version("pyppeteer")
