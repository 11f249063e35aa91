"""A local stand-in for the export API (``animetop fake-export-api``), for tests and the demo.

Tasks hold deterministic rows, oldest first: row ``i`` has ``id``, ``title``
and ``date`` (one row every ``spacing`` minutes, the newest ending now).
It has token expiry, 429 throttling beyond a request rate, both answer
shapes, malformed rows (every ``bad_every``-th row has no date, or is not an
object), and control endpoints that grow or shrink a task between runs:

    POST /_control/tasks   {"task_id": "t1", "rows": 1000, "spacing_minutes": 10, "bad_every": 0}
    POST /_control/grow    {"task_id": "t1", "rows": 50}
    POST /_control/shrink  {"task_id": "t1", "rows": 50}   (deletes the oldest rows)
    GET  /_control/stats   requests, throttled, tokens issued
"""

from __future__ import annotations

import json
import secrets
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qs, urlsplit

from lib.core.local_server import LocalHttpServer


@dataclass
class FakeTask:
    rows: int
    spacing_minutes: float = 10.0
    bad_every: int = 0
    deleted: int = 0  # oldest rows removed at the source
    anchor: float = 0.0  # time of the newest row when created

    def row(self, index: int) -> object:
        """The row at position ``index`` of what the source holds now (0 = oldest remaining)."""
        number = index + self.deleted  # a stable identity across deletions
        if self.bad_every and number % self.bad_every == self.bad_every - 1:
            return "not an object" if number % 2 else {"id": number, "title": f"row {number}"}
        when = datetime.fromtimestamp(self.anchor, timezone.utc) - timedelta(
            minutes=self.spacing_minutes * (self.rows + self.deleted - 1 - number))
        return {"id": number, "title": f"出品 {number}", "date": when.strftime("%Y-%m-%d %H:%M:%S")}

    @property
    def total(self) -> int:
        return self.rows


class FakeExportApi(LocalHttpServer):
    """The server; ``start()`` runs it in a thread on 127.0.0.1 (port 0 picks a free one)."""
    name = "fake-export-api"

    def __init__(self, port: int = 0, *, token_ttl: float = 3600, rate_limit: float = 20.0,
                 username: str = "demo", password: str = "demo", latency: float = 0.0) -> None:
        self.tasks: dict[str, FakeTask] = {}
        self.latency = latency  # seconds each data request takes, as a remote API's would
        self.token_ttl = token_ttl
        self.rate_limit = rate_limit
        self.username, self.password = username, password
        self.tokens: dict[str, float] = {}
        self.refresh_tokens: set[str] = set()
        self.stats = {"requests": 0, "throttled": 0, "tokens": 0, "unauthorized": 0}
        self.down = False  # answer 503 to everything (an outage)
        self._recent: list[float] = []
        self._lock = threading.Lock()
        super().__init__(self._handler(), port)

    def add_task(self, task_id: str, rows: int, spacing_minutes: float = 10.0, bad_every: int = 0,
                 anchor: float | None = None) -> FakeTask:
        task = FakeTask(rows, spacing_minutes, bad_every, anchor=anchor or time.time())
        self.tasks[task_id] = task
        return task

    def grow(self, task_id: str, rows: int) -> None:
        task = self.tasks[task_id]
        task.rows += rows
        task.anchor += rows * task.spacing_minutes * 60

    def shrink(self, task_id: str, rows: int) -> None:
        task = self.tasks[task_id]
        rows = min(rows, task.rows)
        task.rows -= rows
        task.deleted += rows

    def expire_tokens(self) -> None:
        with self._lock:
            self.tokens.clear()

    def _throttled(self) -> bool:
        now = time.monotonic()
        with self._lock:
            self._recent = [t for t in self._recent if now - t < 1.0]
            if len(self._recent) >= self.rate_limit:
                self.stats["throttled"] += 1
                return True
            self._recent.append(now)
            return False

    def _handler(self):
        api = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def _send(self, status: int, body: object, headers: dict | None = None) -> None:
                raw = json.dumps(body, ensure_ascii=False).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(raw)

            def _body(self) -> dict:
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    return json.loads(self.rfile.read(length) or b"{}")
                except json.JSONDecodeError:
                    return {}

            def do_POST(self):
                path = urlsplit(self.path).path
                body = self._body()
                if path.startswith("/_control/"):
                    return self._control(path, body)
                api.stats["requests"] += 1
                if api.latency:
                    time.sleep(api.latency)
                if api.down:
                    return self._send(503, {"error": "down"})
                if path != "/token":
                    return self._send(404, {"error": "not found"})
                grant = body.get("grant_type")
                if grant == "password" and (body.get("username"), body.get("password")) == (api.username, api.password):
                    pass
                elif grant == "refresh_token" and body.get("refresh_token") in api.refresh_tokens:
                    api.refresh_tokens.discard(body["refresh_token"])
                else:
                    return self._send(401, {"error": "invalid_grant"})
                token, refresh = secrets.token_hex(16), secrets.token_hex(16)
                with api._lock:
                    api.tokens[token] = time.monotonic() + api.token_ttl
                    api.refresh_tokens.add(refresh)
                    api.stats["tokens"] += 1
                self._send(200, {"data": {"access_token": token, "expires_in": api.token_ttl,
                                          "token_type": "bearer", "refresh_token": refresh}})

            def _control(self, path: str, body: dict) -> None:
                if path == "/_control/tasks":
                    api.add_task(body["task_id"], int(body.get("rows", 0)), float(body.get("spacing_minutes", 10)),
                                 int(body.get("bad_every", 0)))
                elif path == "/_control/grow":
                    api.grow(body["task_id"], int(body["rows"]))
                elif path == "/_control/shrink":
                    api.shrink(body["task_id"], int(body["rows"]))
                else:
                    return self._send(404, {"error": "unknown control"})
                self._send(200, {"ok": True})

            def do_GET(self):
                parts = urlsplit(self.path)
                if parts.path == "/_control/stats":
                    return self._send(200, api.stats)
                api.stats["requests"] += 1
                if api.latency:
                    time.sleep(api.latency)
                if api.down:
                    return self._send(503, {"error": "down"})
                if api._throttled():
                    return self._send(429, {"error": "too many requests"}, {"Retry-After": "0.2"})
                token = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
                with api._lock:
                    valid = api.tokens.get(token, 0) > time.monotonic()
                if not valid:
                    api.stats["unauthorized"] += 1
                    return self._send(401, {"error": "invalid token"})
                query = {k: v[0] for k, v in parse_qs(parts.query).items()}
                task = api.tasks.get(query.get("taskId", ""))
                if task is None:
                    return self._send(400, {"error": "unknown task"})
                offset, size = int(query.get("offset", 0)), int(query.get("size", 100))
                end = min(offset + size, task.total)
                rows = [task.row(i) for i in range(offset, end)]
                rest = max(task.total - end, 0)
                if parts.path == "/data/all":  # the OpenAPI: no total, only what is left
                    return self._send(200, {"data": {"offset": end, "restTotal": rest, "data": rows}})
                if parts.path == "/api/alldata/GetDataOfTaskByOffset":
                    return self._send(200, {"data": {"total": task.total, "offset": end, "restTotal": rest,
                                                     "dataList": rows}})
                self._send(404, {"error": "not found"})

        return Handler
