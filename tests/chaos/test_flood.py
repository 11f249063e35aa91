"""Chaos scenario 4 (issue #9): the broker flooded with 10,000 malformed messages among valid ones.

The bad messages go straight into the Redis broker's structures, as any producer with access to the broker
could write them (the message id RPUSHed on ``<ns>:<queue>``, the payload in the hash ``<ns>:<queue>.msgs``,
which is what Dramatiq's ``dispatch.lua`` does on enqueue): random bytes, msgpack that is not a message,
messages for actors that do not exist, messages whose arguments do not fit the actor, messages over
MESSAGE_MAX_BYTES, and messages fine but for the broker's own option ``redis_message_id`` (the id of their Redis
entry, which a producer other than Dramatiq's enqueue may leave out). The valid ones go through ``actor.send``
in between. A real ``animetop run worker`` (two Dramatiq processes) works through the lot while the test
samples its memory.

Checked at the end: every bad message is in the dead-letter queue with the reason of its kind, every valid one
ran exactly once, the same worker processes are still up (no restart), their resident memory stayed bounded,
and nothing is left in the queue.

The dead-letter queue is bounded in time, not in count: Dramatiq's Redis broker drops dead letters older than
DEAD_MESSAGE_TTL during its random queue maintenance (BROKER_MAINTENANCE_CHANCE of the commands on that
queue; a live worker's polling is enough), and each reason key expires with it (PX DEAD_MESSAGE_TTL). A flood
therefore costs Redis at most (rate of bad messages) x DEAD_MESSAGE_TTL of dead letters; the oversized ones
are refused by the worker, not by Redis, so they too sit in ``<queue>.XQ.msgs`` until then, and
``animetop deadletters purge`` empties a queue's DLQ at once. The end of the test shows the expiry at work.
"""

from __future__ import annotations

import random
import re
import threading
import time
import uuid

import dramatiq
import msgpack
from dramatiq import Message
from dramatiq.brokers.redis import RedisBroker

from lib.core import keys
from lib.core.redis_client import state_redis
from lib.core.settings import load_settings, use_settings
from lib.messaging.broker import NAMESPACE, build_broker
from lib.messaging.dead_letters import DeadLetters

from ..helpers import free_port, rss_kib, wait_for
from .flood_clock_actors import FLOOD_ACTOR, FLOOD_QUEUE, FLOOD_RUNS, FLOOD_SEEN, declare

BAD_TOTAL = 10_000
#: How many of each kind (they sum to BAD_TOTAL); oversized ones are few because each sits in Redis whole.
KINDS = {"random_bytes": 2_800, "not_a_message": 1_000, "unknown_actor": 2_500, "wrong_arguments": 3_000,
         "oversized": 500, "no_broker_id": 200}
VALID = 1_000
MAX_BYTES = 65_536
#: Resident memory any one worker process may reach (a worker with the app loaded takes ~45 MB here).
RSS_CEILING_KIB = 400 * 1024
#: Growth a worker process may show between the 2,000th handled message and the end.
RSS_GROWTH_KIB = 64 * 1024

#: What the dead-letter reason of each kind must say.
REASONS = {
    "random_bytes": re.compile(r"^undecodable message: DecodeError: (not valid msgpack|not a message)"),
    "not_a_message": re.compile(r"^undecodable message: DecodeError: not a message"),
    "unknown_actor": re.compile(r"^ActorNotFound: .*no_such_actor_\d+"),
    "wrong_arguments": re.compile(r"^BadMessage: (argument '(n|tag)' of flood_record must be|arguments do not fit "
                                  r"flood_record)"),
    "no_broker_id": re.compile(r"^BadMessage: not a message of this broker: its options carry no Redis id "
                               r"\(redis_message_id"),
    "oversized": re.compile(rf"^undecodable message: DecodeError: message of \d+ bytes is over "
                            rf"MESSAGE_MAX_BYTES={MAX_BYTES}"),
}


def message_bytes(actor_name: str, args: tuple, kwargs: dict, rid: str, options: dict | None = None
                  ) -> tuple[str, bytes]:
    """A Dramatiq message as the Redis broker stores it (its options carry the id of its Redis entry)."""
    message = Message(queue_name=FLOOD_QUEUE, actor_name=actor_name, args=args, kwargs=kwargs,
                      options={"redis_message_id": rid} if options is None else options)
    return message.message_id, msgpack.packb(message.asdict(), use_bin_type=True)


def bad_message(kind: str, i: int, rng: random.Random) -> tuple[str, str, bytes]:
    """(Redis id, id its dead-letter reason is stored under, payload) of one bad message of ``kind``."""
    rid = str(uuid.UUID(int=rng.getrandbits(128)))
    if kind == "random_bytes":
        return rid, rid, rng.randbytes(rng.randint(1, 512))
    if kind == "not_a_message":
        shapes = [[i, "x"], i, f"text {i}", {"actor_name": FLOOD_ACTOR, "args": [i]},
                  {"queue_name": FLOOD_QUEUE, "actor_name": FLOOD_ACTOR, "args": [i, "t"], "kwargs": {},
                   "options": {}, "message_id": i, "message_timestamp": 0}]
        return rid, rid, msgpack.packb(shapes[i % len(shapes)])
    if kind == "unknown_actor":
        message_id, payload = message_bytes(f"no_such_actor_{i % 50}", (i, "t"), {}, rid)
        return rid, message_id, payload
    if kind == "wrong_arguments":
        variants = [(("not a number", "t"), {}), ((i,), {}), ((i, "t"), {"extra": 1}), ((1.5, "t"), {}),
                    ((True, "t"), {}), ((i, 7), {}), ((), {"n": i, "tag": ["t"]})]
        args, kwargs = variants[i % len(variants)]
        message_id, payload = message_bytes(FLOOD_ACTOR, args, kwargs, rid)
        return rid, message_id, payload
    if kind == "no_broker_id":  # a fine message, from a producer that does not set the broker's own option
        options = [{}, {"redis_message_id": i}, {"redis_message_id": "not-an-id"}][i % 3]
        message_id, payload = message_bytes(FLOOD_ACTOR, (i, "t"), {}, rid, options)
        return rid, message_id, payload
    if kind == "oversized":  # a well-formed message for a real actor, just too big
        size = rng.randint(MAX_BYTES + 1, 4 * MAX_BYTES)
        message_id, payload = message_bytes(FLOOD_ACTOR, (i, "x" * size), {}, rid)
        return rid, rid, payload
    raise ValueError(kind)


class RssSampler:
    """Samples the resident memory of the worker processes, with how many messages were handled by then."""

    def __init__(self, pids, handled) -> None:
        self.pids = pids
        self.handled = handled
        self.samples: list[tuple[int, dict[int, int]]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.25):
            self.samples.append((self.handled(), {pid: rss_kib(pid) for pid in self.pids()}))

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def test_flood_of_malformed_messages(env, process_types, tmp_path):
    env = {**env, "MESSAGE_MAX_BYTES": str(MAX_BYTES)}
    worker_env = {**env, "ANIMETOP_CHAOS_WORKER": "1", "WORKER_PROCESSES": "2", "WORKER_THREADS": "4",
                  "WORKER_SHUTDOWN_TIMEOUT": "10s", "LOG_LEVEL": "WARNING", "METRICS_PORT": str(free_port(2)),
                  "dramatiq_prom_db": str(tmp_path / "prometheus")}
    settings = load_settings(env)
    use_settings(settings)
    broker = build_broker(settings)
    dramatiq.set_broker(broker)
    flood_record = declare(broker)["flood_record"]
    broker_redis, r = broker.client, state_redis(settings)
    xq = f"{NAMESPACE}:{FLOOD_QUEUE}.XQ"

    runner = process_types("worker", worker_env, actors="tests.chaos.flood_clock_actors")
    flood_record.send(-1, "warm-up")  # the worker is consuming before the flood starts
    wait_for(lambda: r.get(FLOOD_RUNS) == b"1", timeout=60, what="the warm-up message")
    # the two worker processes and the /metrics fork Dramatiq starts once they are up (same command line)
    workers = wait_for(lambda: len(runner.dramatiq_workers()) == 3 and runner.dramatiq_workers(), timeout=60,
                       what="two Dramatiq worker processes and the metrics fork")

    def handled() -> int:
        return int(broker_redis.zcard(xq)) + int(r.get(FLOOD_RUNS) or 0) - 1

    sampler = RssSampler(lambda: workers, handled)
    rng = random.Random(4)
    kinds = [kind for kind, count in KINDS.items() for _ in range(count)]
    rng.shuffle(kinds)
    expected: dict[str, str] = {}  # id of the reason -> kind
    queue, payloads = f"{NAMESPACE}:{FLOOD_QUEUE}", f"{NAMESPACE}:{FLOOD_QUEUE}.msgs"
    started = time.monotonic()
    valid_sent = 0
    batch = BAD_TOTAL // VALID  # bad messages between two valid ones
    for start in range(0, BAD_TOTAL, batch):
        pipe = broker_redis.pipeline(transaction=False)
        for i in range(start, start + batch):
            rid, reason_id, payload = bad_message(kinds[i], i, rng)
            expected[reason_id] = kinds[i]
            pipe.hset(payloads, rid, payload)
            pipe.rpush(queue, rid)
        pipe.execute()
        flood_record.send(valid_sent, "valid")
        valid_sent += 1
    pushed = time.monotonic() - started
    assert valid_sent == VALID and len(expected) == BAD_TOTAL

    wait_for(lambda: handled() >= BAD_TOTAL + VALID, timeout=90, interval=0.5, what="every message handled")
    wait_for(lambda: not any(broker.client.exists(f"{NAMESPACE}:{FLOOD_QUEUE}{suffix}") for suffix in ("", ".msgs"))
             and not list(broker_redis.scan_iter(f"{NAMESPACE}:__acks__.*.{FLOOD_QUEUE}*")),
             timeout=30, what="the queue, its payloads and the acks to be empty")
    elapsed = time.monotonic() - started
    sampler.stop()

    # every valid message ran exactly once
    assert r.get(FLOOD_RUNS) == str(VALID + 1).encode()
    assert {int(n) for n in r.smembers(FLOOD_SEEN)} == set(range(-1, VALID))

    # every bad one is dead-lettered, with the reason of its kind
    letters = DeadLetters.for_broker(broker, broker.reasons).list(FLOOD_QUEUE)
    assert len(letters) == BAD_TOTAL
    by_id = {}
    for letter in letters:
        reason_id = letter.message_id if letter.message is not None else letter.id
        by_id[reason_id] = letter
    assert set(by_id) == set(expected)
    wrong = [(expected[i], by_id[i].reason) for i in expected if not REASONS[expected[i]].search(by_id[i].reason or "")]
    assert not wrong, f"{len(wrong)} dead letters with a reason not of their kind, e.g. {wrong[:5]}"

    # the workers stayed up: same processes, no restart by the runner, nothing critical in the log
    assert runner.proc.poll() is None
    assert sorted(runner.dramatiq_workers()) == sorted(workers)
    log = runner.log.read_text(errors="replace")
    assert "exited unexpectedly" not in log and "Consumer encountered" not in log

    # memory stayed bounded: no process near the ceiling, and no growth once the flood was under way
    assert sampler.samples, "no memory samples"
    peak = max(max(s.values()) for _, s in sampler.samples)
    at_2000 = next(s for n, s in sampler.samples if n >= 2_000)
    late_peak = {pid: max(s.get(pid, 0) for n, s in sampler.samples if n >= 2_000) for pid in workers}
    growth = {pid: late_peak[pid] - at_2000[pid] for pid in workers}
    print(f"\nflood: pushed in {pushed:.1f}s, all handled in {elapsed:.1f}s; worker RSS at 2,000 handled "
          f"{sorted(at_2000.values())} KiB, peak {peak} KiB, growth after {growth} KiB")
    assert peak < RSS_CEILING_KIB, f"a worker reached {peak} KiB"
    assert max(growth.values()) < RSS_GROWTH_KIB, f"worker memory grew by {growth} KiB during the flood"

    # the dead-letter queue is bounded by DEAD_MESSAGE_TTL: reasons expire with it, and queue maintenance with
    # a TTL the entries have outlived drops them (here a broker whose TTL is 1 ms, maintenance on every command)
    reason_ttls = [r.pttl(keys.dead_letter_reason(i)) for i in list(expected)[:50]]
    assert all(0 < ttl <= settings.dead_message_ttl * 1000 for ttl in reason_ttls)
    sweeper = RedisBroker(client=broker_redis, namespace=NAMESPACE, dead_message_ttl=1,
                          maintenance_chance=1_000_000, heartbeat_timeout=broker.heartbeat_timeout)
    sweeper.do_qsize(FLOOD_QUEUE)
    assert broker_redis.zcard(xq) == 0 and broker_redis.hlen(f"{xq}.msgs") == 0
    broker.close()
    use_settings(None)
