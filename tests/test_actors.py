"""The production actors themselves: declared once (in ``actors/``), through the routes, and runnable on
Dramatiq's StubBroker as its testing guidance describes."""

from __future__ import annotations

import ast
import time
from pathlib import Path

from dramatiq import Message

import actors  # configured by conftest, as a process's start-up does
from lib.core.redis_client import state_redis
from lib.messaging.routes import ALL_ROUTES, CRAWL_IP
from lib.scheduling.catalogue import Catalogue
from lib.scheduling.schedule import ScheduleStore
from models import AppliedResult, ItemSnapshot

from .helpers import wait_for

TESTS = Path(__file__).parent


def test_every_route_is_one_declared_actor_on_its_queue():
    declared = {actor.actor_name: actor.queue_name for actor in actors.ACTORS}
    assert declared == {route.actor_name: route.queue_name for route in ALL_ROUTES}
    assert len(actors.ACTORS) == len(ALL_ROUTES)


def test_no_test_declares_a_production_actor():
    """Tests run the actors of ``actors/``; a copy under tests/ would test the copy."""
    production = {route.actor_name for route in ALL_ROUTES}
    offenders = []
    for path in TESTS.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for decorator in node.decorator_list:
                call = decorator if isinstance(decorator, ast.Call) else None
                func = call.func if call else decorator
                if not (isinstance(func, ast.Attribute) and func.attr == "actor"):
                    continue
                names = {node.name} | {kw.value.value for kw in (call.keywords if call else [])
                                       if kw.arg == "actor_name" and isinstance(kw.value, ast.Constant)}
                spread = any(kw.arg is None for kw in (call.keywords if call else []))  # **OPTIONS of a real actor
                if names & production or spread:
                    offenders.append(f"{path.relative_to(TESTS)}:{node.lineno} {node.name}")
    assert offenders == []


def test_the_production_actors_on_dramatiqs_stub_broker(db, settings, stub_broker, start_worker):
    """A tick of the real schedule_tick sends the real crawl task, and the real process_result applies a result,
    on the StubBroker with a worker (real Redis and database underneath)."""
    r = state_redis(settings)
    ip = Catalogue(ScheduleStore(r), settings).add("ダンジョン飯")
    actors.schedule_tick.send()
    start_worker(stub_broker, queues=["scheduler", "pipeline"])
    stub_broker.join("scheduler", timeout=20_000)
    crawl = wait_for(lambda: stub_broker.queues[CRAWL_IP.queue_name].qsize() == 1
                     and Message.decode(stub_broker.queues[CRAWL_IP.queue_name].get_nowait()), what="the crawl task")
    assert crawl.actor_name == CRAWL_IP.actor_name and crawl.kwargs["ip_id"] == ip.id

    items = [{"source_id": f"m{i}", "status": "on_sale", "price": 1000 + i} for i in range(5)]
    actors.process_result.send(ip.id, crawl.kwargs["task_id"], time.time(), items, 1)
    stub_broker.join("pipeline", timeout=20_000)
    wait_for(lambda: AppliedResult.select().count() == 1, what="the result applied")
    assert ItemSnapshot.select().where(ItemSnapshot.ip_id == ip.id).count() == 5
    assert stub_broker.dead_letters == []
