"""collect_batch against the local fake export API, on real Redis and both databases."""

from datetime import datetime, timedelta

import pytest

from lib.collection.collector import Collector, DatabaseSink, add_task, find_task, parse_date, record_key
from lib.collection.export_api import ApiShapeError, ExportApiClient, parse_page
from lib.core.clock import Clock
from lib.core.settings import load_settings, use_settings
from lib.standins.fake_export_api import FakeExportApi
from models import CollectedRow, CollectionTask

from .helpers import run_cli, wait_for

DAY_ROWS = 144  # one row every 10 minutes


@pytest.fixture
def api():
    server = FakeExportApi(rate_limit=1000).start()
    yield server
    server.stop()


@pytest.fixture
def collector(db, api):
    return Collector(ExportApiClient(api.url, "demo", "demo"), DatabaseSink(), Clock())


def run(collector, task, stop_after=None):
    """Drive a run window by window, as the actor chain does; optionally 'die' after some windows."""
    msg = collector.start(find_task(task.task_id))
    windows = 0
    while msg is not None:
        outcome = collector.batch(msg)
        windows += 1
        if stop_after is not None and windows >= stop_after:
            return windows
        msg = outcome.next_message
    return windows


def fresh_ids(api, task_id, days=7):
    """Ids of the rows the source holds that are newer than ``days`` — the ground truth."""
    task = api.tasks[task_id]
    cutoff = datetime.utcnow() - timedelta(days=days)
    out = set()
    for i in range(task.total):
        row = task.row(i)
        if isinstance(row, dict) and parse_date(row.get("date")) and parse_date(row["date"]) >= cutoff:
            out.add(row["id"])
    return out


def sink_ids(task):
    import json

    return {json.loads(r.data)["id"] for r in CollectedRow.select().where(CollectedRow.task == task.id)}


def test_first_run_stops_after_three_expired_batches(collector, api):
    api.add_task("t1", rows=30 * DAY_ROWS)  # 30 days of rows; 7 are fresh
    task = add_task("t1", "fake", key_field="id")
    windows = run(collector, task)
    assert sink_ids(task) == fresh_ids(api, "t1")
    fresh_windows = -(-len(fresh_ids(api, "t1")) // 100)
    assert windows <= fresh_windows + 3 + 1  # the fresh ones, one mixed, three expired: not all 43
    task = find_task("t1")
    assert task.run_id is None and task.last_start_offset == 30 * DAY_ROWS - 100


def test_second_run_reads_only_new_rows_plus_the_overlap(collector, api):
    api.add_task("t2", rows=1000)
    task = add_task("t2", "fake")  # no key field: rows deduplicated by content hash
    run(collector, task)
    before = sink_ids(task)
    api.grow("t2", 250)
    requests = collector.client.requests
    windows = run(collector, task)
    assert windows == 4  # 1250-100=1150 → 1050 → 950 → 900 (the previous start): new rows + one overlap
    assert sink_ids(task) == before | set(range(1000, 1250))
    assert CollectedRow.select().where(CollectedRow.task == task.id).count() == len(before) + 250
    assert collector.client.requests - requests == windows + 1  # + the total


def test_killed_mid_run_resumes_to_the_same_sink(collector, api):
    api.add_task("a", rows=900)
    api.add_task("b", rows=900, anchor=api.tasks["a"].anchor)
    clean, killed = add_task("a", "fake", key_field="id"), add_task("b", "fake", key_field="id")
    run(collector, clean)
    run(collector, killed, stop_after=4)  # the worker dies after four windows
    assert find_task("b").run_id is not None and find_task("b").run_current_offset == 400
    run(collector, killed)  # `collect run` continues where it stopped
    assert sink_ids(killed) == sink_ids(clean) == set(range(900))
    assert find_task("b").last_start_offset == find_task("a").last_start_offset


def test_token_refresh_on_401(collector, api):
    api.add_task("t", rows=500)
    task = add_task("t", "fake", key_field="id")
    msg = collector.start(task)
    collector.batch(msg)
    api.expire_tokens()  # the source forgets every token
    run(collector, task)
    assert sink_ids(task) == set(range(500))
    assert api.stats["tokens"] >= 2 and api.stats["unauthorized"] >= 1


def test_throttled_requests_back_off(collector, api):
    api.rate_limit = 3  # per second
    api.add_task("t", rows=1000)
    task = add_task("t", "fake", key_field="id")
    run(collector, task)
    assert sink_ids(task) == set(range(1000))
    assert collector.client.throttled > 0 and api.stats["throttled"] > 0


def test_shrinking_total_and_a_total_below_one_batch(collector, api):
    api.add_task("small", rows=30)
    small = add_task("small", "fake", key_field="id")
    assert run(collector, small) == 1 and sink_ids(small) == set(range(30))

    api.add_task("t", rows=1000)
    task = add_task("t", "fake", key_field="id")
    run(collector, task)
    api.shrink("t", 600)  # rows deleted at the source: total 400 < last start 900
    api.grow("t", 20)
    assert run(collector, task) == 1  # handled: the newest window only
    assert set(range(1000, 1020)) <= sink_ids(task)


def test_bad_rows_are_counted_and_skipped(collector, api):
    api.add_task("t", rows=700, bad_every=7)
    task = add_task("t", "fake", key_field="id")
    run(collector, task)
    task = find_task("t")
    assert task.rows_skipped == 100  # every seventh row: no date, or not an object
    assert sink_ids(task) == {i for i in range(700) if i % 7 != 6}


def test_disabled_task_stops_its_run(collector, api):
    api.add_task("t", rows=1000)
    task = add_task("t", "fake", key_field="id")
    msg = collector.start(task)
    outcome = collector.batch(msg)
    CollectionTask.update(enabled=False).where(CollectionTask.id == task.id).execute()
    stopped = collector.batch(outcome.next_message)
    assert stopped.finished and stopped.stop_reason == "disabled"
    assert find_task("t").run_id is None


def test_answer_shapes():
    new = parse_page({"data": {"offset": 300, "restTotal": 50, "data": [{}] * 100}}, 200)
    old = parse_page({"data": {"offset": 300, "total": 350, "restTotal": 50, "dataList": [{}] * 100}}, 200)
    assert new.total == old.total == 350
    for bad in ({"nope": 1}, {"data": {"offset": 0, "restTotal": 1}}, {"data": {"data": [], "offset": "x"}},
                {"data": {"data": []}}):
        with pytest.raises(ApiShapeError):
            parse_page(bad, 0)


def test_record_keys():
    assert record_key({"id": 7, "x": 1}, "id") == "7"
    assert record_key({"b": 1, "a": 2}, None) == record_key({"a": 2, "b": 1}, None)
    assert record_key({"a": 1}, None) != record_key({"a": 2}, None)


def test_actor_chain_on_a_real_worker(db, api, env, broker, app_actors, start_worker):
    """The real collect_batch, configured from the settings (COLLECT_API_URL, the database sink)."""
    use_settings(load_settings({**env, "COLLECT_API_URL": api.url}))
    api.add_task("w", rows=650)
    task = add_task("w", "fake", key_field="id", batch_size=100)
    first = Collector(ExportApiClient(api.url, "demo", "demo"), DatabaseSink()).start(task)
    app_actors.collect_batch.send(**first.as_kwargs())
    app_actors.collect_batch.send(**first.as_kwargs())  # delivered twice: the chain must not fork
    start_worker(broker, threads=2, queues=["collect"])
    wait_for(lambda: find_task("w").run_id is None, timeout=30, what="the run to finish")
    assert sink_ids(task) == set(range(650))


def test_collect_cli(api, env, database_url):
    env = {**env, "DATABASE_URL": database_url, "COLLECT_API_URL": api.url}
    assert run_cli(env, "db", "init").returncode == 0
    result = run_cli(env, "collect", "add", "cli-task", "--source", "octoparse", "--batch-size", "50")
    assert result.returncode == 0, result.stderr
    assert "exists already" in run_cli(env, "collect", "add", "cli-task").stderr
    assert "cli-task" in run_cli(env, "collect", "list").stdout
    assert run_cli(env, "collect", "disable", "cli-task").returncode == 0
    assert "disabled" in run_cli(env, "collect", "run", "cli-task").stderr
