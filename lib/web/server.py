"""Serving the dashboard with uvicorn: in the foreground (``animetop dashboard``) or on a background thread.

No WebSocket support (``ws="none"``): the dashboard has no WebSocket, and pyppeteer pins an old ``websockets``
that uvicorn's WebSocket protocols cannot import."""

from __future__ import annotations

import threading
import time

import uvicorn
from fastapi import FastAPI


class BackgroundServer:
    """uvicorn on a thread, for the demo, tests and benchmarks.

    Parameters:
      app: the ASGI application.
      host, port: where to listen (port 0: a free one).
    """

    def __init__(self, app: FastAPI, host: str = "127.0.0.1", port: int = 0) -> None:
        # a stop waits at most 5 s for the requests in flight: uvicorn's default waits for them without end, and
        # the interpreter's exit then waits on the (non-daemon) threads running them
        self.server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning",
                                                    lifespan="off", access_log=False, ws="none",
                                                    timeout_graceful_shutdown=5))
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
