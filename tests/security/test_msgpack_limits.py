"""msgpack decoding has limits: oversized, deeply nested and lying-header messages are refused at once with
little memory, and dead-lettered with the reason by a real worker."""

from __future__ import annotations

import struct
import tracemalloc
import uuid
from pathlib import Path

import dramatiq
import pytest
from dramatiq.errors import DecodeError

from lib.core.settings import load_settings, use_settings

from ..helpers import wait_for

ROOT = Path(__file__).resolve().parents[2]


def _array32(n: int) -> bytes:
    return b"\xdd" + struct.pack(">I", n)


#: Crafted payloads: name → (bytes, words of the reason).
HOSTILE_PAYLOADS = {
    "array header claiming 2**31 elements": (_array32(2**31), "declared length"),
    "map header claiming 2**32-1 entries": (b"\xdf" + struct.pack(">I", 2**32 - 1), "declared length"),
    "str header claiming 2**31 bytes": (b"\xdb" + struct.pack(">I", 2**31) + b"x" * 16, "declared length"),
    "bin header claiming 2**31 bytes": (b"\xc6" + struct.pack(">I", 2**31) + b"x" * 16, "declared length"),
    "ext header claiming 2**31 bytes": (b"\xc9" + struct.pack(">I", 2**31) + b"\x01", "declared length"),
    "ext type": (b"\xd4\x01\x01", "ext types"),
    "nested 60,000 deep": (b"\x91" * 60_000 + b"\xc0", "nested too deeply"),
    "a map nested 5,000 deep": (b"\x81\xa1k" * 5_000 + b"\xc0", "nested too deeply"),
    "60,000 empty arrays": (_array32(60_000) + b"\x90" * 60_000, "arrays and maps"),
    "10,000 empty maps as a map's values": (b"\xde" + struct.pack(">H", 10_000) + b"".join(
        b"\xa4" + f"{i:04d}".encode() + b"\x80" for i in range(10_000)), "arrays and maps"),
}


@pytest.mark.parametrize("name", list(HOSTILE_PAYLOADS))
def test_hostile_msgpack_is_refused_at_once_with_little_memory(name):
    from lib.messaging.encoder import MsgpackEncoder

    payload, words = HOSTILE_PAYLOADS[name]
    encoder = MsgpackEncoder(max_bytes=65536)
    tracemalloc.start()
    try:
        with pytest.raises(DecodeError) as e:
            encoder.decode(payload)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert words in str(e.value) and str(e.value).startswith("not valid msgpack")
    assert peak < 8 * 1024 * 1024, f"{peak / 2**20:.1f} MB"  # how fast: python -m bench encoding


def test_a_full_size_message_of_empty_containers_stays_small():
    """16 MB (the default MESSAGE_MAX_BYTES) of empty arrays would be over 1 GB of Python lists and seconds of
    CPU; the container cap stops it early."""
    from lib.messaging.encoder import MsgpackEncoder

    encoder = MsgpackEncoder()
    n = encoder.max_bytes - 16
    payload = _array32(n) + b"\x90" * n
    tracemalloc.start()
    try:
        with pytest.raises(DecodeError, match="arrays and maps"):
            encoder.decode(payload)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 * 1024 * 1024, f"{peak / 2**20:.1f} MB"  # how fast: python -m bench encoding


def test_real_messages_are_far_from_the_limits():
    from bench.encoding import crawl_result, message_of
    from lib.messaging.encoder import MsgpackEncoder

    encoder = MsgpackEncoder()
    data = message_of(crawl_result(items=5000))      # five times a full crawl (10 pages of ~120)
    assert encoder.decode(encoder.encode(data)) == data
    deep = {"a": [{"b": [[[{"c": "鬼滅の刃"}]]]}] * 50}  # nested rows from an export API
    message = message_of(deep)
    assert encoder.decode(encoder.encode(message)) == message


def test_hostile_messages_are_dead_lettered_with_the_reason_by_a_real_worker(env, start_worker):
    from lib.core.redis_client import state_redis
    from lib.messaging.broker import build_broker
    from lib.messaging.dead_letters import DeadLetters

    settings = load_settings({**env, "MESSAGE_MAX_BYTES": "65536"})
    use_settings(settings)
    broker = build_broker(settings)
    dramatiq.set_broker(broker)
    seen = state_redis(settings)

    @dramatiq.actor(broker=broker, queue_name="work")
    def count(n: int) -> None:
        seen.rpush("seen", n)

    count.send(1)
    payloads = dict(HOSTILE_PAYLOADS)
    payloads["70,000 bytes"] = b"\x00" * 70_000, "over MESSAGE_MAX_BYTES"
    for payload, _ in payloads.values():
        broker.do_enqueue("work", str(uuid.uuid4()), payload)
    count.send(2)
    with pytest.raises(Exception, match="over MESSAGE_MAX_BYTES"):    # refused when sent, too
        count.send_with_options(args=(3,), blob="x" * 70_000)
    start_worker(broker, threads=2)
    letters = DeadLetters.for_broker(broker, broker.reasons)
    dead = wait_for(lambda: len(letters.list("work")) == len(payloads) and letters.list("work"), timeout=60,
                    what="every hostile payload dead-lettered")
    wait_for(lambda: sorted(int(x) for x in seen.lrange("seen", 0, -1)) == [1, 2], what="the valid messages")
    reasons = [d.reason for d in dead]
    for name, (_, words) in payloads.items():
        assert sum(words in r for r in reasons) >= 1, (name, reasons)
    assert all("undecodable message" in r for r in reasons)
    count.send(4)                                                       # the worker is still up
    wait_for(lambda: b"4" in seen.lrange("seen", 0, -1), what="a message after the hostile ones")
    broker.close()
    use_settings(None)


# == 4. Chromium runs sandboxed unless CHROMIUM_NO_SANDBOX is on ================================================
