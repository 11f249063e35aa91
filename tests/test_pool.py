"""Title/content pools on real Redis and both databases: every row handed out exactly once."""

import json
import tempfile
import threading
import time
from pathlib import Path

import pytest

from lib.core import keys
from lib.core.embedded_redis import EmbeddedRedis
from lib.core.redis_client import connect, state_redis
from lib.core.settings import load_settings, use_settings
from lib.text_pools.pool import PoolConsumer, PoolEmpty, PoolError, PoolFiller, load_rows, mark_used, model_of
from models import Content, Title
from models.pool import QUEUED, USED

from .helpers import run_cli, wait_for


def consumer(settings, client_factory, *, fill=None):
    sent = []

    def send_mark_used(kind, group_id, ids):
        mark_used(model_of(kind), ids)  # what the mark_used actor does
        sent.append(len(ids))

    return PoolConsumer(client_factory, settings, send_mark_used=send_mark_used, request_fill=fill), sent


def test_fill_takes_newest_batch_first_and_pops_fifo(db, settings):
    load_rows("titles", 1, batch_id=1, texts=[f"old {i}" for i in range(3)])
    load_rows("titles", 1, batch_id=2, texts=[f"new {i}" for i in range(3)])
    r = state_redis(settings)
    result = PoolFiller(r, settings).fill("titles", 1)
    assert result.pushed == 6
    c, _ = consumer(settings, lambda: r)
    assert [c.pop("titles", 1).text for _ in range(6)] == ["new 0", "new 1", "new 2", "old 0", "old 1", "old 2"]
    c.close()
    assert Title.select().where(Title.status == USED).count() == 6


def test_refill_after_partial_consumption_pushes_no_duplicates(db, env):
    settings = load_settings({**env, "POOL_SIZE": "10", "POOL_THRESHOLD": "8"})
    load_rows("contents", 3, 1, [f"c{i}" for i in range(30)])
    r = state_redis(settings)
    filler = PoolFiller(r, settings)
    assert filler.fill("contents", 3).pushed == 10
    c, _ = consumer(settings, lambda: r)
    got = [c.pop("contents", 3).id for _ in range(4)]
    assert filler.fill("contents", 3).pushed == 4  # tops up to 10 with rows not already queued
    queued = [int(x.split(b'"id": ')[1].split(b",")[0]) for x in r.lrange(keys.pool("contents", 3), 0, -1)]
    assert len(queued) == len(set(queued)) == 10 and not set(queued) & set(got)
    c.close()


def test_two_fillers_racing_fill_once(db, settings):
    load_rows("titles", 2, 1, [f"t{i}" for i in range(50)])
    r = state_redis(settings)
    results = []
    start = threading.Barrier(2)

    def fill():
        start.wait()
        results.append(PoolFiller(r, settings).fill("titles", 2))

    threads = [threading.Thread(target=fill) for _ in range(2)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert sorted(x.pushed for x in results) == [0, 50]
    assert r.llen(keys.pool("titles", 2)) == 50


def test_unknown_kind_or_group(db, settings):
    c, _ = consumer(settings, lambda: state_redis(settings))
    with pytest.raises(PoolError, match="unknown pool kind 'titles; DROP TABLE titles'"):
        c.pop("titles; DROP TABLE titles", 1)
    with pytest.raises(PoolError, match="no titles group 99"):
        c.pop("titles", 99)
    c.close()


def test_lost_pool_is_recovered(db, settings):
    load_rows("titles", 4, 1, [f"t{i}" for i in range(20)])
    r = state_redis(settings)
    PoolFiller(r, settings).fill("titles", 4)
    r.delete(keys.pool("titles", 4))  # Redis lost the list; the rows are still "queued" in the database
    result = PoolFiller(r, settings).fill("titles", 4)
    assert result.recovered == 20 and result.pushed == 20


@pytest.mark.slow_on_cluster  # the cluster's pop script runs in its other pool tests in the fast tier
def test_eight_consumers_with_concurrent_fills_hand_out_every_row_once(db, env):
    settings = load_settings({**env, "POOL_SIZE": "600", "POOL_THRESHOLD": "120"})
    total = 6_000  # ten pools' worth: the consumers drain it through many refills
    load_rows("titles", 7, 1, [f"row {i}" for i in range(total // 2)])
    load_rows("titles", 7, 2, [f"row {i}" for i in range(total // 2, total)])
    r = state_redis(settings)
    filler = PoolFiller(r, settings)
    stop = threading.Event()
    fills, fill_errors = [], []

    def keep_filling():
        while not stop.is_set():
            try:
                fills.append(filler.fill("titles", 7).pushed)
            except Exception as e:  # a filler must never crash: the test fails below
                fill_errors.append(e)
            time.sleep(0.01)  # a filler's pace, so the consumers meet fills in progress (not a wait)

    fill_threads = [threading.Thread(target=keep_filling) for _ in range(2)]
    [t.start() for t in fill_threads]
    c, _ = consumer(settings, lambda: r)
    got: list[list[int]] = [[] for _ in range(8)]

    def consume(slot):
        while True:
            try:
                got[slot].append(c.pop("titles", 7).id)
            except PoolEmpty:
                return

    consumers = [threading.Thread(target=consume, args=(i,)) for i in range(8)]
    [t.start() for t in consumers]
    [t.join() for t in consumers]
    stop.set()
    [t.join() for t in fill_threads]
    c.close()
    handed = [i for ids in got for i in ids]
    assert fill_errors == []
    assert sum(fills) > 600  # the fillers really ran alongside
    assert len(handed) == total and len(set(handed)) == total
    assert Title.select().where(Title.status == USED).count() == total


def test_redis_stopped_mid_run_falls_back_without_duplicates(db, env, tmp_path):
    server = EmbeddedRedis(Path(tempfile.mkdtemp(dir="/tmp")))  # short path: unix socket length limit
    server.ensure_running()
    try:
        settings = load_settings({**env, "POOL_SIZE": "300", "POOL_THRESHOLD": "100"})
        r = connect(f"{server.url}?db=1")
        load_rows("contents", 5, 1, [f"c{i}" for i in range(1000)])
        PoolFiller(r, settings).fill("contents", 5)
        c, _ = consumer(settings, lambda: r)
        handed = [c.pop("contents", 5).id for _ in range(150)]
        queued_in_redis = 150  # still in the list when Redis goes away
        server.stop()
        while True:
            try:
                handed.append(c.pop("contents", 5).id)
            except PoolEmpty:
                break
        c.close()
        assert len(handed) == len(set(handed))  # never twice
        assert len(handed) == 1000 - queued_in_redis  # the rest waits, queued, in Redis's AOF
        assert Content.select().where(Content.status == QUEUED).count() == queued_in_redis
    finally:
        server.stop()


def test_pool_load_cli(cli_env_pool):
    env, tmp = cli_env_pool
    lines = tmp / "titles.txt"
    lines.write_text("鬼滅の刃 新刊\n呪術廻戦 最新話\n", encoding="utf-8")
    result = run_cli(env, "pool", "load", "titles", str(lines), "--group", "1", "--batch", "3")
    assert result.returncode == 0, result.stderr
    assert "2 titles loaded" in result.stdout
    jl = tmp / "c.jsonl"
    jl.write_text('{"text": "本文 1"}\n{"text": "本文 2"}\n{"text": "本文 3"}\n', encoding="utf-8")
    assert "3 contents loaded" in run_cli(env, "pool", "load", "contents", str(jl), "--group", "2",
                                          "--batch", "1").stdout
    assert "unknown pool kind" in run_cli(env, "pool", "load", "users", str(jl), "--group", "1", "--batch", "1").stderr


@pytest.fixture
def cli_env_pool(env, database_url, tmp_path):
    env = {**env, "DATABASE_URL": database_url}
    assert run_cli(env, "db", "init").returncode == 0
    return env, tmp_path


def test_consumer_triggers_one_fill_and_batches_mark_used_through_the_broker(db, env, broker, app_actors, processed,
                                                                           start_worker):
    """The wiring of ``actors.pool_consumer()``: fill requests and mark_used go out as messages to the real
    actors on a real worker."""
    settings = load_settings({**env, "POOL_SIZE": "50", "POOL_THRESHOLD": "20", "POOL_MARK_USED_INTERVAL": "100ms"})
    use_settings(settings)  # what the actors read when they run
    load_rows("titles", 9, 1, [f"t{i}" for i in range(200)])
    c = app_actors.pool_consumer(settings)
    start_worker(broker, threads=2, queues=["pool"])
    handed = [c.pop("titles", 9).id for _ in range(200)]  # first pops fall back to the database until filled
    c.close()
    assert len(set(handed)) == 200
    wait_for(lambda: Title.select().where(Title.status == USED).count() == 200, what="all rows marked used")
    fills, marks = processed.processed["fill_pool"], processed.processed["mark_used"]
    assert 1 <= fills < 20  # requests were deduplicated, not one per pop
    assert 1 <= marks < 200  # batched, not one UPDATE per pop


def test_a_fill_claims_exactly_the_rows_it_pushes(db, env, caplog):
    """The claim marks queued, by one range, exactly the first POOL_SIZE available rows in claiming order
    (newest batch first, then id), across batches and around rows already used."""
    caplog.set_level("INFO", logger="lib.text_pools.pool")
    settings = load_settings({**env, "POOL_SIZE": "7", "POOL_THRESHOLD": "7"})
    for batch in (1, 3, 2):
        load_rows("titles", 9, batch, [f"b{batch}-{i}" for i in range(4)])
    used = Title.get(Title.text == "b3-1")
    mark_used(Title, [used.id])
    result = PoolFiller(state_redis(settings), settings).fill("titles", 9)
    expected = ["b3-0", "b3-2", "b3-3", "b2-0", "b2-1", "b2-2", "b2-3"]  # computed by hand from the order
    assert result.pushed == 7
    assert sorted(t.text for t in Title.select().where(Title.status == QUEUED)) == sorted(expected)
    pushed = [json.loads(x)["text"] for x in reversed(state_redis(settings).lrange(keys.pool("titles", 9), 0, -1))]
    assert pushed == expected
    assert "claiming by id" not in caplog.text  # the range alone marked them (not the fallback)


def test_a_claim_whose_range_moved_claims_by_id(db, settings, monkeypatch):
    """Had rows come into the claimed range between the SELECT and the UPDATE (the range marked more than it
    selected), the claim is undone and made again by id: still exactly the rows pushed."""
    load_rows("titles", 10, 1, [f"t{i}" for i in range(30)])
    real = PoolFiller._queue_through
    calls = []

    def moved(self, model, group_id, last):
        calls.append(real(self, model, group_id, last))
        return calls[-1] + 1

    monkeypatch.setattr(PoolFiller, "_queue_through", moved)
    r = state_redis(settings)
    result = PoolFiller(r, settings).fill("titles", 10)
    assert calls == [30] and result.pushed == 30
    assert Title.select().where((Title.group_id == 10) & (Title.status == QUEUED)).count() == 30
    assert sorted(json.loads(x)["id"] for x in r.lrange(keys.pool("titles", 10), 0, -1)) == \
        sorted(t.id for t in Title.select().where(Title.group_id == 10))
