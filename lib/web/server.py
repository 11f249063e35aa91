"""Serving the dashboard with uvicorn: in the foreground (``animetop dashboard``) or on a background thread.

No WebSocket support (``ws="none"``): the dashboard has no WebSocket, and pyppeteer pins an old ``websockets``
that uvicorn's WebSocket protocols cannot import."""

from __future__ import annotations

import threading
import time
from typing import Any

import uvicorn
from fastapi import FastAPI

from lib.core.redis_client import state_redis
from lib.core.settings import Settings
from lib.market.read_side import ReadSide
from lib.messaging.dead_letters import DeadLetters
from lib.web.api import WebContext
from lib.web.app import create_app
from lib.web.auth import OperatorAuth


def status(broker, client) -> dict[str, Any]:
    """What the operations page shows: queue counts, scheduled IPs, crawls in flight, crawler drift."""
    from lib.crawling.drift import status_section
    from lib.operations.status import counts

    return {**counts(broker, client), "crawler_drift": status_section(client)}


def app_for(settings: Settings, broker, read_side: ReadSide | None = None) -> FastAPI:
    """The dashboard of the application configured by ``settings`` on ``broker`` (the actors' broker)."""
    client = state_redis(settings)
    side = read_side or ReadSide(settings, client)
    try:
        letters: DeadLetters | None = DeadLetters.for_broker(broker, broker.reasons)
    except (TypeError, AttributeError):
        letters = None
    return create_app(WebContext(settings=settings, read_side=side, status=lambda: status(broker, client),
                                 dead_letters=letters, auth=OperatorAuth(settings.dashboard_token)))


class BackgroundServer:
    """uvicorn on a thread, for the demo, tests and benchmarks.

    Parameters:
      app: the ASGI application.
      host, port: where to listen (port 0: a free one).
    """

    def __init__(self, app: FastAPI, host: str = "127.0.0.1", port: int = 0) -> None:
        self.server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning",
                                                    lifespan="off", access_log=False, ws="none"))
        self.thread = threading.Thread(target=self.server.run, name="dashboard", daemon=True)

    @property
    def url(self) -> str:
        sockets = self.server.servers[0].sockets
        host, port = sockets[0].getsockname()[:2]
        return f"http://{host}:{port}"

    def start(self, timeout: float = 15.0) -> BackgroundServer:
        self.thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the dashboard did not start")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)


def serve(app: FastAPI, host: str, port: int) -> None:
    """Serve until Ctrl-C or SIGTERM (uvicorn stops cleanly on both)."""
    uvicorn.run(app, host=host, port=port, log_level="warning", access_log=False, ws="none")
