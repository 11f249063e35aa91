"""Commands run on the app's clock: with CLOCK_SPEED the schedule is written in the app's time."""

from __future__ import annotations

import time

from lib.core.clock import Clock
from lib.core.redis_client import state_redis
from lib.scheduling.schedule import ScheduleStore

from ..helpers import run_cli


def test_ip_add_schedules_in_the_apps_accelerated_time(env, settings):
    anchor = time.time() - 3600  # an hour ago at 60x: the app's clock is about 59 hours ahead of the wall clock
    clocked = {**env, "CLOCK_SPEED": "60", "CLOCK_ANCHOR": str(anchor)}
    assert run_cli(clocked, "db", "init").returncode == 0
    before = Clock(60, anchor).now()
    result = run_cli(clocked, "ip", "add", "鬼滅の刃")
    after = Clock(60, anchor).now()
    assert result.returncode == 0, result.stderr
    due = ScheduleStore(state_redis(settings)).time_of(1)
    assert due is not None and before <= due <= after, (before, due, after, time.time())
