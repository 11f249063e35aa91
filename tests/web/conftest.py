"""The dashboard on real services: the app over the test's database, Redis and broker, served by uvicorn."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any

import dramatiq
import pytest

from lib.core.clock import FrozenClock
from lib.core.redis_client import state_redis
from lib.market.read_side import ReadSide
from lib.messaging.dead_letters import DeadLetters
from lib.operations.dashboard import status
from lib.web.api import WebContext
from lib.web.app import create_app
from lib.web.auth import OperatorAuth
from lib.web.server import BackgroundServer

from ..helpers import wait_for
from ..test_alerts_and_read_side import T0, seed_results

TOKEN = "operator-token-for-tests-0123456789"


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes
    cookies: dict[str, str] = field(default_factory=dict)

    def json(self) -> Any:
        return json.loads(self.body)


def call(url: str, method: str = "GET", body: Any = None, headers: dict[str, str] | None = None) -> Reply:
    data = None if body is None else json.dumps(body).encode()
    return call_request(urllib.request.Request(url, data=data, method=method, headers={
        **({"Content-Type": "application/json"} if data is not None else {}), **(headers or {})}))


def call_request(request: urllib.request.Request) -> Reply:
    try:
        with urllib.request.urlopen(request, timeout=15) as response:
            reply = Reply(response.status, dict(response.headers), response.read())
    except urllib.error.HTTPError as e:
        reply = Reply(e.code, dict(e.headers), e.read())
    for name, value in reply.headers.items():
        if name.lower() == "set-cookie":
            key, _, rest = value.partition("=")
            reply.cookies[key] = rest.split(";")[0]
    return reply


@dataclass
class Dashboard:
    url: str
    ips: list
    clock: FrozenClock
    letters: DeadLetters
    token: str | None


def start_dashboard(settings, broker, token: str | None, clock: FrozenClock) -> tuple[BackgroundServer, DeadLetters]:
    client = state_redis(settings)
    letters = DeadLetters.for_broker(broker, broker.reasons)
    ctx = WebContext(settings=settings, read_side=ReadSide(settings, client, clock),
                     status=lambda: status(settings, broker, client), dead_letters=letters, auth=OperatorAuth(token))
    return BackgroundServer(create_app(ctx)).start(), letters


@pytest.fixture(params=[TOKEN, None], ids=["operator", "read-only"])
def dashboard(request, db, settings, broker):
    """The dashboard over three IPs' results (tests/test_alerts_and_read_side.seed_results), with and without an
    operator token."""
    clock = FrozenClock(T0 + 120)
    ips, _ = seed_results(settings, clock)
    server, letters = start_dashboard(settings, broker, request.param, clock)
    yield Dashboard(server.url, ips, clock, letters, request.param)
    server.stop()


@pytest.fixture
def dead(dashboard, broker, start_worker) -> list[str]:
    """Three dead letters on the queue "work", put there by a real worker (still running: a requeued one fails
    and is dead-lettered again)."""
    @dramatiq.actor(broker=broker, queue_name="work", max_retries=0)
    def doomed(n: int) -> None:
        raise RuntimeError(f"doomed {n}")

    sent = [doomed.send(n) for n in range(3)]
    start_worker(broker)
    wait_for(lambda: len(dashboard.letters.list("work")) == 3, what="three dead letters")
    return [m.message_id for m in sent]
