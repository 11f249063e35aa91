"""animetop status: what an operator sees."""

import json

from lib.core.clock import Clock
from lib.core.redis_client import state_redis
from lib.scheduling.catalogue import Catalogue
from lib.scheduling.schedule import ScheduleStore
from lib.scheduling.tick import Scheduler

from .helpers import run_cli


def test_status_shows_queues_schedule_in_flight_and_locks(db, database_url, env, settings, broker):
    env = {**env, "DATABASE_URL": database_url}
    r = state_redis(settings)
    catalogue = Catalogue(ScheduleStore(r), settings)
    for k in ("鬼滅の刃", "呪術廻戦", "ワンピース"):
        catalogue.add(k)
    Scheduler(settings, r, broker, Clock()).tick()  # three crawls in flight, queued
    lock = r.lock("animetop:lock:ip:1", timeout=60)
    lock.acquire()
    result = run_cli(env, "status", "--format", "json")
    assert result.returncode == 0, result.stderr
    status = json.loads(result.stdout)
    assert status["queues"]["crawl"]["ready"] == 3
    assert status["in_flight_crawls"] == [1, 2, 3]
    assert status["scheduled_ips"] == 3 and status["due_now"] == 0 and status["next_due_at"]
    assert [x["lock"] for x in status["locks"]] == ["ip:1"]
    table = run_cli(env, "status").stdout
    assert "crawl" in table and "crawls in flight: 3" in table and "ip:1" in table
