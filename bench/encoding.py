"""msgpack vs JSON for a 1,000-item crawl result: size, encode+decode time, broker throughput."""

from __future__ import annotations

import random
import struct
import tempfile
import threading
import time
from pathlib import Path

import dramatiq
import msgpack
from dramatiq.encoder import JSONEncoder
from dramatiq.errors import DecodeError

from lib.messaging.broker import build_broker
from lib.messaging.encoder import MsgpackEncoder

from .common import bench_settings, best_of, report


def crawl_result(items: int = 1000) -> dict:
    rng = random.Random(7)
    statuses = ["on_sale", "sold"]
    return {
        "ip_id": 42, "task_id": "t-1", "crawled_at": 1_763_700_000.0, "pages_crawled": 10, "errors": {},
        "items": [
            {
                "source_id": f"m{rng.randrange(10**10, 10**11)}",
                "title": f"鬼滅の刃 竈門炭治郎 フィギュア {i} 未開封 まとめ売り",
                "price": rng.randrange(300, 50000),
                "image_url": f"https://static.mercdn.net/thumb/item/webp/m{i}_1.jpg",
                "item_url": f"https://jp.mercari.com/item/m{i}",
                "status": statuses[i % 2],
                "created": 1_763_600_000 + i, "updated": 1_763_650_000 + i,
            }
            for i in range(items)
        ],
    }


def message_of(payload: dict) -> dict:
    return {"queue_name": "pipeline", "actor_name": "process_result", "args": [], "kwargs": payload,
            "options": {}, "message_id": "x", "message_timestamp": 1}


def encoding() -> None:
    data = message_of(crawl_result())
    mp, js = MsgpackEncoder(), JSONEncoder()
    mp_size, js_size = len(mp.encode(data)), len(js.encode(data))
    print("1,000-item crawl result, encoded (floor: JSON)")
    report("msgpack size (bytes)", mp_size, js_size, "B")
    t_mp = best_of(lambda: mp.decode(mp.encode(data)), 20)
    t_js = best_of(lambda: js.decode(js.encode(data)), 20)
    report("msgpack encode+decode", t_mp, t_js)


def hostile() -> None:
    """How fast a crafted message is refused: a full-size (MESSAGE_MAX_BYTES) message of empty arrays, which
    without the container cap decodes to over 1 GB of lists (tests/security/test_msgpack_limits.py checks the
    memory). Floor: msgpack reading a plain byte string of the same size."""
    encoder = MsgpackEncoder()
    n = encoder.max_bytes - 16
    payload = b"\xdd" + struct.pack(">I", n) + b"\x90" * n
    blob = msgpack.packb(bytes(n))

    def refuse() -> None:
        try:
            encoder.decode(payload)
        except DecodeError:
            return
        raise AssertionError("the crafted message was decoded")

    print(f"a {n / 2**20:.0f} MB message of empty arrays, refused (floor: reading {n / 2**20:.0f} MB of bytes)")
    report("refused in", best_of(refuse, 3), best_of(lambda: msgpack.unpackb(blob), 3))


def throughput(n: int = 2000) -> None:
    print(f"no-op messages through the Redis broker, {n} sent then drained by one worker (floor: JSON)")
    results = {}
    with tempfile.TemporaryDirectory() as tmp, bench_settings(Path(tmp)) as settings:
        for name, encoder in (("json", JSONEncoder()), ("msgpack", MsgpackEncoder())):
            broker = build_broker(settings)
            dramatiq.set_encoder(encoder)  # build_broker installs msgpack; swap for the comparison
            broker.flush_all()
            done = threading.Semaphore(0)

            @dramatiq.actor(broker=broker, queue_name="bench", idempotency_key=False, actor_name=f"noop_{name}")
            def noop(i: int) -> None:
                done.release()  # noqa: B023 - each round's actor runs, and is waited for, within its round

            broker.flush("bench")
            start = time.perf_counter()
            for i in range(n):
                noop.send(i)
            worker = dramatiq.Worker(broker, worker_threads=4, worker_timeout=50)
            worker.start()
            for _ in range(n):
                done.acquire()
            results[name] = n / (time.perf_counter() - start)
            worker.stop()
            broker.close()
    report("msgpack messages/s", results["msgpack"], results["json"], "/s")


def main() -> None:
    encoding()
    hostile()
    throughput()


if __name__ == "__main__":
    main()
