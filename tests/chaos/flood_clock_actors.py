"""Actors of the flood and clock-trouble chaos tests (issue #9, scenarios 4 and 6a).

A real worker loads them with ``animetop run worker --actors tests.chaos.flood_clock_actors``; the tests
declare the same actors on their own broker with ``declare(broker)`` to send through ``actor.send``, so
sender and worker share one definition.
"""

from __future__ import annotations

import json
import os
import time

import dramatiq
from dramatiq.middleware import CurrentMessage

from lib.core import keys
from lib.core.redis_client import state_redis
from lib.messaging.queues import MAINTENANCE

#: Scenario 4: the valid messages of the flood.
FLOOD_QUEUE = MAINTENANCE
FLOOD_ACTOR = "flood_record"
FLOOD_RUNS = "chaos:flood:runs"        # incremented once per run
FLOOD_SEEN = "chaos:flood:seen"        # the numbers of the runs (a set)

#: Scenario 6a: a long task under a lock whose lease is a fraction of its run time.
GUARDED_ACTOR = "guarded_long"
LOCK_TTL_MS = 1000


def guarded_lock_name(key: str) -> str:
    """The Redis key of the lock a ``guarded_long`` message for ``key`` takes."""
    return keys.lock(f"chaos:{key}")


def runs_key(key: str) -> str:
    return f"chaos:guarded:runs:{key}"


def declare(broker) -> dict[str, dramatiq.Actor]:
    """Declare the actors on ``broker``: the worker's and the test's declarations are the same code."""

    @dramatiq.actor(broker=broker, queue_name=FLOOD_QUEUE, actor_name=FLOOD_ACTOR, max_retries=0)
    def flood_record(n: int, tag: str) -> None:
        pipe = state_redis().pipeline(transaction=False)
        pipe.incr(FLOOD_RUNS)
        pipe.sadd(FLOOD_SEEN, n)
        pipe.execute()

    @dramatiq.actor(broker=broker, queue_name=MAINTENANCE, actor_name=GUARDED_ACTOR,
                    lock_key=lambda key, tag, seconds: f"chaos:{key}", lock_ttl=LOCK_TTL_MS, time_limit=60_000)
    def guarded_long(key: str, tag: str, seconds: float) -> None:
        """Runs ``seconds``, sampling its own lock every 100 ms (its token and remaining lease); one JSON record
        of the run (start, end, pid, lock waits, samples) goes to ``runs_key(key)`` when it ends."""
        r = state_redis()
        lock = guarded_lock_name(key)
        message = CurrentMessage.get_current_message()
        started = time.time()
        samples = []
        while time.time() - started < seconds:
            token, pttl = r.get(lock), r.pttl(lock)
            samples.append([time.time(), token.decode() if token else None, pttl])
            time.sleep(0.1)
        record = {"tag": tag, "pid": os.getpid(), "start": started, "end": time.time(), "samples": samples,
                  "lock_waits": message.options.get("lock_waits", 0) if message else None}
        r.rpush(runs_key(key), json.dumps(record))

    return {"flood_record": flood_record, "guarded_long": guarded_long}


if os.environ.get("ANIMETOP_CHAOS_WORKER") == "1":  # only in the worker process, not when a test imports this
    from lib.app import setup

    broker = setup()
    declare(broker)
