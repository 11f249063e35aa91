"""Small helpers shared by the tests."""

import time


def wait_for(condition, timeout: float = 20.0, interval: float = 0.05, what: str = "condition"):
    """Poll until ``condition()`` is truthy; fail the test after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def mysql_admin(url: str):
    """A connection as the administrator of the MySQL/MariaDB server of ``url`` (autocommit), and its database name."""
    from urllib.parse import urlsplit

    import pymysql

    parts = urlsplit(url)
    conn = pymysql.connect(host=parts.hostname, port=parts.port or 3306, user=parts.username or "root",
                           password=parts.password or "", autocommit=True)
    return conn, parts.path.strip("/")


def run_cli(env: dict, *args: str, timeout: float = 60):
    """Run ``animetop ARGS`` as a user would, in a fresh process with ``env``."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    full_env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **env}
    return subprocess.run([sys.executable, "-m", "lib.cli", *args], env=full_env, capture_output=True, text=True,
                          timeout=timeout, cwd=Path(__file__).parent.parent)


class TcpProxy:
    """A loopback TCP forwarder the tests can cut and restore, to stand for a server going down."""

    def __init__(self, target_host: str, target_port: int) -> None:
        import socket
        import threading

        self.target = (target_host, target_port)
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        self.up = True
        self.connections: list = []
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        import socket
        import threading

        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if not self.up:
                client.close()
                continue
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            with self._lock:
                self.connections += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(src, dst) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.close()
                except OSError:
                    pass

    def cut(self) -> None:
        """Refuse new connections and drop the open ones: the server is 'down'."""
        import socket

        self.up = False
        with self._lock:
            for s in self.connections:
                try:
                    s.shutdown(socket.SHUT_RDWR)
                    s.close()
                except OSError:
                    pass
            self.connections.clear()

    def restore(self) -> None:
        self.up = True

    def close(self) -> None:
        self.cut()
        self.listener.close()


class ForwardProxy:
    """A minimal HTTP forward proxy on loopback, counting what passes through it (proxy-switch tests).

    With ``user`` and ``password`` it wants Basic proxy credentials and answers 407 without them
    (``challenged`` counts those answers, ``requests`` what it forwarded).
    """

    def __init__(self, user: str | None = None, password: str | None = None) -> None:
        import base64
        import threading
        import urllib.request
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        proxy = self
        self.requests = self.challenged = 0
        expected = ("Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()) if user else None
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _forward(self):
                if expected is not None and self.headers.get("Proxy-Authorization") != expected:
                    proxy.challenged += 1
                    self.send_response(407)
                    self.send_header("Proxy-Authenticate", 'Basic realm="test"')
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                proxy.requests += 1
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                headers = {k: v for k, v in self.headers.items()
                           if k.lower() not in ("proxy-connection", "proxy-authorization", "host", "connection")}
                request = urllib.request.Request(self.path, data=body, method=self.command, headers=headers)
                try:
                    response = opener.open(request, timeout=30)
                    status, raw, rheaders = response.status, response.read(), response.headers
                except urllib.error.HTTPError as e:
                    status, raw, rheaders = e.code, e.read(), e.headers
                self.send_response(status)
                for k, v in rheaders.items():
                    if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            do_GET = do_POST = _forward

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
