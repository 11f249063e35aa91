"""Client of a data-export API shaped like Octoparse's OpenAPI (docs/operating/collection.md).

``POST {base}/token`` (password or refresh_token grant) gives a bearer
token; ``GET {base}/data/all?taskId&offset&size`` pages rows as
``data.{offset, total?, restTotal, data[]}``. The older API
(``/api/alldata/GetDataOfTaskByOffset``, ``data.{total, offset, restTotal,
dataList[]}``) answers the same question; both shapes are accepted. Where
the total is missing it is derived as ``offset + len(rows) + restTotal``.
A 401 refreshes the token once; a 429 backs off and tries again.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

logger = logging.getLogger(__name__)

THROTTLE_ATTEMPTS = 6
TIMEOUT = 30


class ApiError(RuntimeError):
    """The API failed or answered something we cannot use."""


class ApiShapeError(ApiError):
    """The API answered with JSON of the wrong shape."""


@dataclass(frozen=True)
class Page:
    offset: int
    total: int
    rows: list[Any]


class ExportApiClient:
    def __init__(self, base_url: str, username: str, password: str) -> None:
        self.base_url = base_url.rstrip("/")
        self.username = username
        self.password = password
        self._token: str | None = None
        self._refresh: str | None = None
        self._expires_at = 0.0
        self._lock = threading.Lock()
        self.requests = 0
        self.throttled = 0

    # -- auth ----------------------------------------------------------------
    def _authenticate(self, refresh: bool) -> str:
        if refresh and self._refresh:
            body = {"refresh_token": self._refresh, "grant_type": "refresh_token"}
        else:
            body = {"username": self.username, "password": self.password, "grant_type": "password"}
        status, payload = self._raw("POST", "/token", body=body)
        if status == 401 and refresh:
            return self._authenticate(refresh=False)  # the refresh token expired too: log in again
        if status != 200:
            raise ApiError(f"token request failed: HTTP {status}: {str(payload)[:200]}")
        data = _field(payload, "data", dict)
        token: str = _field(data, "access_token", str)
        self._token = token
        self._refresh = data.get("refresh_token")
        self._expires_at = time.monotonic() + float(data.get("expires_in") or 3600) - 30
        return token

    def _bearer(self) -> str:
        with self._lock:
            if self._token is None or time.monotonic() >= self._expires_at:
                return self._authenticate(refresh=self._token is not None)
            return self._token

    # -- requests --------------------------------------------------------------
    def _raw(self, method: str, path: str, *, body: dict[str, Any] | None = None, query: dict[str, Any] | None = None,
             token: str | None = None) -> tuple[int, Any]:
        url = f"{self.base_url}{path}"
        if query:
            url += "?" + urllib.parse.urlencode(query)
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(url, data=data, method=method)
        request.add_header("Content-Type", "application/json")
        if token:
            request.add_header("Authorization", f"Bearer {token}")
        self.requests += 1
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
                status, raw = response.status, response.read()
        except urllib.error.HTTPError as e:
            status, raw = e.code, e.read()
            retry_after = e.headers.get("Retry-After") if e.headers else None
            if status == 429:
                return status, {"retry_after": retry_after}
        except (urllib.error.URLError, OSError) as e:
            raise ApiError(f"{method} {path}: {e}") from None
        try:
            return status, json.loads(raw) if raw else None
        except json.JSONDecodeError:
            raise ApiShapeError(f"{method} {path}: HTTP {status} with a body that is not JSON: {raw[:120]!r}") from None

    def _get(self, path: str, query: dict[str, Any]) -> tuple[int, Any]:
        delay = 0.25
        refreshed = False
        for attempt in range(1, THROTTLE_ATTEMPTS + 1):
            status, payload = self._raw("GET", path, query=query, token=self._bearer())
            if status == 401 and not refreshed:
                with self._lock:
                    self._expires_at = 0.0  # force a refresh on the next call
                refreshed = True
                continue
            if status == 429:
                self.throttled += 1
                wait = float((payload or {}).get("retry_after") or delay)
                logger.info("export API throttled (429): waiting %.2fs (attempt %d)", wait, attempt)
                time.sleep(wait)
                delay = min(delay * 2, 5.0)
                continue
            return status, payload
        raise ApiError(f"GET {path}: still throttled after {THROTTLE_ATTEMPTS} attempts")

    def page(self, task_id: str, offset: int, size: int) -> Page:
        """Rows ``offset`` … ``offset + size - 1`` of a task, oldest first."""
        status, payload = self._get("/data/all", {"taskId": task_id, "offset": offset, "size": size})
        if status == 404:
            status, payload = self._get("/api/alldata/GetDataOfTaskByOffset",
                                        {"taskId": task_id, "offset": offset, "size": size})
        if status != 200:
            raise ApiError(f"page of task {task_id} at offset {offset}: HTTP {status}: {str(payload)[:200]}")
        return parse_page(payload, offset)

    def total(self, task_id: str) -> int:
        return self.page(task_id, 0, 1).total


def _field(obj: Any, name: str, kind: type) -> Any:
    if not isinstance(obj, dict) or not isinstance(obj.get(name), kind):
        raise ApiShapeError(f"expected {name!r} ({kind.__name__}) in {str(obj)[:200]}")
    return obj[name]


def parse_page(payload: Any, requested_offset: int) -> Page:
    """Either API shape to a Page; a missing total is derived from restTotal."""
    data = _field(payload, "data", dict)
    rows = data.get("data", data.get("dataList"))
    if not isinstance(rows, list):
        raise ApiShapeError(f"expected a list of rows in data.data or data.dataList: {str(data)[:200]}")
    offset = data.get("offset", requested_offset)
    if not isinstance(offset, int):
        raise ApiShapeError(f"offset is not a whole number: {offset!r}")
    total = data.get("total")
    if total is None:
        rest = data.get("restTotal")
        if not isinstance(rest, int):
            raise ApiShapeError("neither total nor restTotal in the answer")
        total = requested_offset + len(rows) + rest
    if not isinstance(total, int) or total < 0:
        raise ApiShapeError(f"total is not a whole number: {total!r}")
    return Page(offset=offset, total=total, rows=rows)
