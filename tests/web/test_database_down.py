"""The API while the database does not answer: 503 with ``Retry-After`` and a problem body (not a 500, which
says the server is broken and pages an operator), the reason logged without credentials, and the same requests
answered again once the database is back. MariaDB behind a proxy the test cuts (tests/helpers.TcpProxy)."""

from __future__ import annotations

import logging
from urllib.parse import urlsplit

import pytest

from lib.core.clock import FrozenClock
from lib.core.redis_client import state_redis

from ..conftest import MYSQL_URL, need
from ..helpers import TcpProxy, recreate_mysql_database
from ..test_alerts_and_read_side import T0, seed_results
from .conftest import TOKEN, call, start_dashboard

pytestmark = pytest.mark.mysql


@pytest.fixture
def proxy():
    need(MYSQL_URL, "MySQL/MariaDB")
    parts = urlsplit(MYSQL_URL)
    proxy = TcpProxy(parts.hostname or "127.0.0.1", parts.port or 3306)
    yield proxy
    proxy.close()


@pytest.fixture
def database_url(proxy) -> str:
    """The test's MariaDB database, reached through ``proxy``."""
    recreate_mysql_database(MYSQL_URL)[0].close()
    parts = urlsplit(MYSQL_URL)
    return f"mysql://{parts.username or 'root'}@127.0.0.1:{proxy.port}{parts.path}"


def test_the_api_answers_503_with_retry_after_while_the_database_is_down(db, settings, broker, proxy, caplog):
    clock = FrozenClock(T0 + 120)
    ips, _ = seed_results(settings, clock)
    server, _ = start_dashboard(settings, broker, TOKEN, clock)
    paths = ["/api/v1/leaderboard?hours=24&by=outflow", f"/api/v1/ips/{ips[0].id}?hours=24",
             f"/api/v1/ips/{ips[0].id}/days?days=7", f"/api/v1/ips/{ips[0].id}/segments?hours=24",
             "/api/v1/segments?hours=24"]
    try:
        before = {path: call(server.url + path) for path in paths}
        assert {path: r.status for path, r in before.items()} == dict.fromkeys(paths, 200)
        state_redis(settings).flushdb()  # no cached answer: every path must read the database
        caplog.set_level(logging.WARNING, logger="lib.web.app")
        proxy.cut()
        down = {path: call(server.url + path) for path in paths}
        for path, reply in down.items():
            assert reply.status == 503, (path, reply.status, reply.body[:300])
            assert reply.headers.get("retry-after", reply.headers.get("Retry-After")) == "5", path
            assert reply.json() == {"detail": "the database is unavailable; try again shortly"}, path
        assert any("the database is unavailable" in r.getMessage() and r.levelno == logging.WARNING
                   for r in caplog.records)
        proxy.restore()
        after = {path: call(server.url + path) for path in paths}
        assert {path: r.status for path, r in after.items()} == dict.fromkeys(paths, 200)
        assert after[paths[0]].json()["rows"] == before[paths[0]].json()["rows"]
    finally:
        server.stop()


def test_the_document_says_every_operation_may_answer_503(db, settings, broker):
    server, _ = start_dashboard(settings, broker, TOKEN, FrozenClock(T0))
    try:
        doc = call(server.url + "/api/v1/openapi.json").json()
    finally:
        server.stop()
    operations = [op for item in doc["paths"].values() for op in item.values() if isinstance(op, dict)]
    assert operations
    for op in operations:
        answer = op["responses"]["503"]
        assert "Retry-After" in answer["headers"]
        assert answer["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/Problem"}
