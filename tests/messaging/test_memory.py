"""ReleaseMemory: the pages a message's work freed go back to the system when the message ends, under a real
Dramatiq worker (StubBroker: the broker is not under test)."""

import dramatiq
from dramatiq.brokers.stub import StubBroker

from lib.messaging.middleware.memory import ReleaseMemory, malloc_trim

BLOCK = 100_000  # under glibc's mmap threshold: served from the arena of the thread that asks
BLOCKS = 400


def anonymous_mb() -> float:
    with open("/proc/self/smaps_rollup") as rollup:
        for line in rollup:
            if line.startswith("Pss_Anon:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no Pss_Anon in /proc/self/smaps_rollup")


def run(middleware: ReleaseMemory, messages: int, work) -> None:
    broker = StubBroker(middleware=[middleware])
    actor = dramatiq.actor(work, broker=broker)
    worker = dramatiq.Worker(broker, worker_threads=1, worker_timeout=50)
    worker.start()
    try:
        for _ in range(messages):
            actor.send()
        broker.join(actor.queue_name, timeout=60_000)
        worker.join()
    finally:
        worker.stop()
        broker.close()


def test_the_pages_a_message_freed_are_given_back_when_it_ends():
    kept: list[bytes] = []
    seen: dict[str, float] = {}

    def fragment() -> None:
        # 40 MB in 100 kB blocks, one in eight kept (the last one too, so the arena's top cannot shrink): the
        # freed ones lie between live ones, where only a trim reaches them
        blocks = [bytes([n % 251]) * BLOCK for n in range(BLOCKS)]
        kept.extend(blocks[7::8])
        del blocks
        seen["freed"] = anonymous_mb()

    assert malloc_trim() is not None  # glibc: what the project's images run on
    run(ReleaseMemory(interval=0), 1, fragment)
    given_back = seen["freed"] - anonymous_mb()
    assert given_back > 20, f"only {given_back:.1f} MB of the 35 MB freed went back"
    assert len(kept) == BLOCKS // 8


def test_a_burst_of_messages_is_trimmed_once_an_interval():
    calls: list[int] = []

    def trim(pad: int) -> int:
        calls.append(pad)
        return 1

    run(ReleaseMemory(interval=3600, trim=trim), 5, lambda: None)
    assert calls == [0]
    calls.clear()
    run(ReleaseMemory(interval=0, trim=trim), 3, lambda: None)
    assert calls == [0, 0, 0]
