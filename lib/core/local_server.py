"""A threaded HTTP server on loopback, started in the background: the simulator, the fake export API and
the dashboard all run on it."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Self


class LocalHttpServer:
    name = "local-http"

    def __init__(self, handler: type[BaseHTTPRequestHandler], port: int = 0, host: str = "127.0.0.1") -> None:
        self.server = ThreadingHTTPServer((host, port), handler)
        self.server.daemon_threads = True

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> Self:
        threading.Thread(target=self.server.serve_forever, name=self.name, daemon=True).start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
