"""The dashboard of the running application: the web app (``lib.web``) over its read side and dead letters,
with the operations page's status (``animetop dashboard``, the demo's dashboard)."""

from __future__ import annotations

from typing import Any

import redis
from dramatiq import Broker
from fastapi import FastAPI

from lib.core.redis_client import state_redis
from lib.core.settings import Settings
from lib.crawling.drift import status_section
from lib.market.read_side import ReadSide
from lib.messaging.dead_letters import DeadLetters, ReasonStore
from lib.operations.status import budgets, counts, planned
from lib.web.api import WebContext
from lib.web.app import create_app
from lib.web.auth import OperatorAuth


def status(settings: Settings, broker: Broker, client: redis.Redis) -> dict[str, Any]:
    """What the operations page shows: queue counts, scheduled IPs, crawls in flight, crawler drift, each
    address's request budget, the budget's plan."""
    return {**counts(broker, client), "crawler_drift": status_section(client),
            "crawl_budgets": budgets(settings, client), "crawl_plan": planned(client)}


def app_for(settings: Settings, broker: Broker, read_side: ReadSide | None = None) -> FastAPI:
    """The dashboard of the application configured by ``settings`` on ``broker`` (the actors' broker)."""
    client = state_redis(settings)
    side = read_side or ReadSide(settings, client)
    # only the brokers lib.messaging.broker builds carry their dead letters' reasons
    reasons: ReasonStore | None = getattr(broker, "reasons", None)
    try:
        letters = DeadLetters.for_broker(broker, reasons) if reasons is not None else None
    except (TypeError, AttributeError):
        letters = None
    return create_app(WebContext(settings=settings, read_side=side, status=lambda: status(settings, broker, client),
                                 dead_letters=letters, auth=OperatorAuth(settings.dashboard_token)))
