"""Actors for tests that run real worker processes (``animetop run worker --actors tests.workers.app``)."""

import os
import time

import dramatiq

from lib.app import setup
from lib.core.redis_client import state_redis
from lib.messaging.queues import MAINTENANCE

broker = setup()


@dramatiq.actor(queue_name=MAINTENANCE, time_limit=120_000)
def slow(seconds: float, tag: str) -> None:
    r = state_redis()
    r.rpush("started", f"{tag}:{os.getpid()}")
    time.sleep(seconds)
    r.rpush("finished", tag)
