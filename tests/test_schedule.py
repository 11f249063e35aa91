"""schedule_tick on real Redis and both databases, with a clock the tests move."""

import threading
import time
from datetime import datetime, timedelta, timezone

import dramatiq
import pytest

from lib.core import keys
from lib.core.clock import FrozenClock
from lib.core.redis_client import state_redis
from lib.core.settings import load_settings
from lib.messaging.dead_letters import DeadLetters
from lib.messaging.queues import CRAWL
from lib.scheduling.execution_state import ExecutionState
from lib.scheduling.schedule import CRAWL_JOB, interval_for, startup_offset
from lib.scheduling.tick import Scheduler
from models import IpMetadata, JobExecutionState

from .helpers import wait_for

T0 = 1_800_000_000.0
HOUR = 3600.0


@pytest.fixture
def clock():
    return FrozenClock(T0)


@pytest.fixture
def scheduler(db, settings, broker, clock):
    broker.declare_queue(CRAWL)
    return Scheduler(settings, state_redis(settings), broker, clock)


def crawl_messages(broker) -> list[dict]:
    from dramatiq import Message

    client = broker.client
    ids = client.lrange(f"{broker.namespace}:{CRAWL}", 0, -1)
    payloads = client.hmget(f"{broker.namespace}:{CRAWL}.msgs", ids) if ids else []
    return [Message.decode(p).kwargs for p in payloads]


def add_ips(scheduler, n, **kwargs):
    return [scheduler.catalogue.add(f"キーワード {i}", **kwargs) for i in range(n)]


@pytest.mark.parametrize("weight, hours", [(4.0, 1), (2.0, 1), (1.0, 2), (0.5, 2), (0.0, 2), (-1.0, 2), (1.5, 4 / 3)])
def test_dynamic_interval(weight, hours):
    settings = load_settings({})
    assert interval_for(weight, settings) == pytest.approx(hours * HOUR)


def test_interval_bounds_come_from_settings():
    settings = load_settings({"SCHEDULER_BASE_INTERVAL": "30m", "SCHEDULER_MIN_INTERVAL": "10m",
                              "SCHEDULER_MAX_INTERVAL": "1h"})
    assert interval_for(10, settings) == 600
    assert interval_for(0.1, settings) == 3600


@pytest.mark.parametrize("weight, pinned, why", [
    (1.5, None, "heat: weight 1.50, base 30m / weight = 20m"),
    (10.0, None, "heat: weight 10.00, base 30m / weight = 3m, held at the least interval"),
    (0.1, None, "heat: weight 0.10, base 30m / weight = 5h, held at the most interval"),
    (0.0, None, "weight 0: the base interval 30m"),
    (10.0, 6 * HOUR, "pinned by an operator"),
])
def test_the_interval_says_why(weight, pinned, why):
    from types import SimpleNamespace

    from lib.scheduling.schedule import interval_reason, ip_interval

    settings = load_settings({"SCHEDULER_BASE_INTERVAL": "30m", "SCHEDULER_MIN_INTERVAL": "10m",
                              "SCHEDULER_MAX_INTERVAL": "1h"})
    ip = SimpleNamespace(weight=weight, pinned_interval=pinned)
    assert interval_reason(ip, settings) == why
    assert ip_interval(ip, settings) == (pinned or interval_for(weight, settings))


def test_execution_state_records_and_decides(db, clock):
    state = ExecutionState(clock)
    assert state.last_execution_time("crawl_ip", 7) is None
    assert state.should_run_now("crawl_ip", 7, HOUR)
    assert state.record_execution("crawl_ip", 7, at=T0 - 600)
    assert state.record_execution("crawl_ip", 7, at=T0 - 300)
    row = JobExecutionState.get(JobExecutionState.param_key == "7")
    assert (row.execution_count, row.last_execution_time) == (2, T0 - 300)
    assert state.next_run_time("crawl_ip", 7, HOUR) == T0 - 300 + HOUR
    assert not state.should_run_now("crawl_ip", 7, HOUR)
    clock.advance(HOUR)
    assert state.should_run_now("crawl_ip", 7, HOUR)
    assert state.record_execution("fill_pool", "", at=T0)  # a job without a parameter
    assert state.last_execution_time("fill_pool") == T0


def test_execution_state_read_failure_means_first_run(db, clock):
    state = ExecutionState(clock)
    db.drop_tables([JobExecutionState])
    assert state.last_execution_time("crawl_ip", 1) is None  # logged as a warning, not raised
    assert state.record_execution("crawl_ip", 1) is False  # retried, then given up without raising
    db.create_tables([JobExecutionState])


def test_tick_enqueues_due_ips_once_and_moves_them_forward(scheduler, broker, clock):
    ips = add_ips(scheduler, 3, weight=2.0)
    result = scheduler.tick()
    assert sorted(result.enqueued) == [ip.id for ip in ips]
    sent = crawl_messages(broker)
    assert sorted(m["ip_id"] for m in sent) == [ip.id for ip in ips]
    assert {m["keyword"] for m in sent} == {ip.keyword for ip in ips}
    assert len({m["task_id"] for m in sent}) == 3
    assert scheduler.in_flight.members() == {ip.id for ip in ips}
    assert scheduler.store.all() == {ip.id: T0 + HOUR for ip in ips}
    # due again (an operator moved them), but still in flight: not sent twice
    scheduler.store.schedule_many({ip.id: T0 for ip in ips})
    result = scheduler.tick()
    assert result.enqueued == [] and sorted(result.already_in_flight) == [ip.id for ip in ips]
    assert len(crawl_messages(broker)) == 3


def test_not_due_ips_wait(scheduler, broker, clock):
    ip = add_ips(scheduler, 1)[0]
    scheduler.store.schedule(ip.id, T0 + 10)
    assert scheduler.tick().enqueued == []
    clock.advance(10)
    assert scheduler.tick().enqueued == [ip.id]


def test_rebuild_after_redis_lost_follows_the_database(scheduler, settings, clock):
    never, overdue, recent, heavy, off = add_ips(scheduler, 5)
    IpMetadata.update(weight=4.0).where(IpMetadata.id == heavy.id).execute()
    IpMetadata.update(active=False).where(IpMetadata.id == off.id).execute()
    state = ExecutionState(clock)
    state.record_execution(CRAWL_JOB, overdue.id, at=T0 - 3 * HOUR)
    state.record_execution(CRAWL_JOB, recent.id, at=T0 - 0.5 * HOUR)
    state.record_execution(CRAWL_JOB, heavy.id, at=T0 - 0.5 * HOUR)
    # last_crawled_at alone counts too (rows from before execution state existed)
    IpMetadata.update(last_crawled_at=datetime.fromtimestamp(T0 - 5 * HOUR, timezone.utc).replace(tzinfo=None)) \
        .where(IpMetadata.id == never.id).execute()

    state_redis(settings).flushdb()  # Redis lost its data
    result = scheduler.tick()
    spread = settings.scheduler_startup_spread
    expected = {
        never.id: T0 + startup_offset(never.id, spread),      # last crawl 5 h ago: overdue
        overdue.id: T0 + startup_offset(overdue.id, spread),  # 3 h ago, interval 2 h: overdue
        recent.id: T0 + 1.5 * HOUR,                           # 30 min ago + 2 h
        heavy.id: T0 + 0.5 * HOUR,                            # 30 min ago + 1 h (weight 4 → min interval)
    }
    assert result.rebuilt == 4
    assert scheduler.store.all() == pytest.approx(expected)
    assert all(0 <= startup_offset(i, spread) < spread for i in range(1, 1000))


def test_a_pinned_interval_holds_whatever_the_heat_in_the_tick_the_rebuild_and_the_closed_loop(scheduler, settings,
                                                                                                  clock):
    from lib.market.processing import CrawlResult, ResultProcessor

    hot, pinned = add_ips(scheduler, 2, weight=4.0)  # heat's interval: the minimum, 1 h
    state = ExecutionState(clock)
    state.record_execution(CRAWL_JOB, pinned.id, at=T0 - 2 * HOUR)
    # pinned every 6 h: its next crawl is its last + 6 h (not due now, as it would be at 1 h)
    assert scheduler.catalogue.pin(pinned.id, 6 * HOUR).pinned_interval == 6 * HOUR
    assert scheduler.store.time_of(pinned.id) == T0 + 4 * HOUR
    # the tick's provisional next time
    scheduler.store.schedule(pinned.id, T0)
    assert sorted(scheduler.tick().enqueued) == [hot.id, pinned.id]
    assert scheduler.store.all() == {hot.id: T0 + HOUR, pinned.id: T0 + 6 * HOUR}
    # the result's closed loop
    proc = ResultProcessor(settings, state_redis(settings), clock)
    proc.apply(CrawlResult.parse(pinned.id, "t-pinned", T0 + 60, []))
    assert scheduler.store.time_of(pinned.id) == T0 + 60 + 6 * HOUR
    # the schedule rebuilt from the database
    state_redis(settings).flushdb()
    assert scheduler.tick().rebuilt == 2
    assert scheduler.store.time_of(pinned.id) == pytest.approx(T0 + 60 + 6 * HOUR)
    # unpinned, its heat decides again: last crawl a minute ago + 1 h
    scheduler.catalogue.pin(pinned.id, None)
    assert scheduler.store.time_of(pinned.id) == T0 + 60 + HOUR


def test_restart_with_redis_intact_changes_nothing(scheduler, settings, broker, clock):
    add_ips(scheduler, 4)
    scheduler.store.schedule(1, T0 + 500)
    before = scheduler.store.all()
    fresh = Scheduler(settings, state_redis(settings), broker, clock)  # a restarted process
    assert fresh.rebuild_if_empty() == 0
    assert fresh.store.all() == before


def test_two_ticks_racing_enqueue_every_due_ip_exactly_once(scheduler, settings, env, broker, clock):
    ips = [IpMetadata(keyword=f"kw{i}", display_name=f"kw{i}", weight=1.0, created_at=datetime(2026, 1, 1),
                      updated_at=datetime(2026, 1, 1)) for i in range(300)]
    IpMetadata.bulk_create(ips, batch_size=100)
    ids = [ip.id for ip in IpMetadata.select()]
    scheduler.store.schedule_many({i: T0 - 1 for i in ids})
    racing = load_settings({**env, "SCHEDULER_BATCH_SIZE": "40", "SCHEDULER_BACKPRESSURE_THRESHOLD": "100000"})
    tickers = [Scheduler(racing, state_redis(settings), broker, clock) for _ in range(2)]
    start = threading.Barrier(2)
    results = []

    def run(s):
        start.wait()
        results.append(s.tick())

    threads = [threading.Thread(target=run, args=(s,)) for s in tickers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    sent = [m["ip_id"] for m in crawl_messages(broker)]
    assert sorted(sent) == sorted(ids)  # every one, none twice
    assert sum(len(r.enqueued) for r in results) == 300


def test_backpressure_stops_and_resumes(scheduler, broker, clock, settings):
    add_ips(scheduler, 120)
    first = scheduler.tick()
    assert len(first.enqueued) == settings.scheduler_batch_size == 50
    assert first.backpressure
    assert first.follow_up_at == pytest.approx(T0 + 5)
    assert len(scheduler.store.due(T0)) == 70  # the rest stay due
    assert scheduler.tick().enqueued == []  # the queue is still deep
    broker.flush(CRAWL)  # crawlers drained it
    second = scheduler.tick()
    assert len(second.enqueued) == 50 and second.backpressure
    broker.flush(CRAWL)
    third = scheduler.tick()
    assert len(third.enqueued) == 20 and not third.backpressure


def test_disable_removes_and_a_disabled_due_ip_is_dropped(scheduler, broker, clock):
    a, b = add_ips(scheduler, 2)
    scheduler.catalogue.disable(a.id)
    assert scheduler.store.time_of(a.id) is None
    IpMetadata.update(active=False).where(IpMetadata.id == b.id).execute()  # disabled behind our back
    result = scheduler.tick()
    assert result.enqueued == [] and result.removed == [b.id]
    assert scheduler.store.count() == 0


def test_follow_up_tick_for_an_ip_due_within_the_minute_is_requested_once(scheduler, broker, clock):
    ip = add_ips(scheduler, 1)[0]
    scheduler.store.schedule(ip.id, T0 + 20)
    assert scheduler.tick().follow_up_at == T0 + 20
    assert scheduler.tick().follow_up_at is None  # already on its way: the chain does not multiply
    delayed = broker.client.hlen(f"{broker.namespace}:scheduler.DQ.msgs")
    assert delayed == 1
    clock.advance(21)
    assert scheduler.tick().enqueued == [ip.id]


def test_a_paused_schedule_sends_nothing_and_ends_the_tick_chain(scheduler, broker, clock):
    due, soon = add_ips(scheduler, 2)
    scheduler.store.schedule(due.id, T0 - 5)
    scheduler.store.schedule(soon.id, T0 + 20)  # would ask for a delayed tick
    scheduler.store.pause()
    result = scheduler.tick()
    assert result.paused and result.enqueued == [] and result.follow_up_at is None
    assert crawl_messages(broker) == []
    assert broker.client.hlen(f"{broker.namespace}:scheduler.DQ.msgs") == 0  # no tick to come
    assert scheduler.store.time_of(due.id) == T0 - 5  # nothing was lost: it is still due
    scheduler.store.resume()
    assert scheduler.tick().enqueued == [due.id]
    assert [m["ip_id"] for m in crawl_messages(broker)] == [due.id]


def test_crawl_ip_releases_its_ip_when_it_ends(app_actors):
    """crawl_ip names the IP whose in-flight marker its end releases (the middleware below does the rest)."""
    assert app_actors.crawl_ip.options["releases_in_flight"](7, "キーワード", "7-1-x") == 7


def test_a_task_that_fails_for_good_releases_its_ip(scheduler, broker, settings, start_worker):
    """The InFlightRelease middleware on an actor of this test whose every run fails (the real crawl_ip takes
    minutes of backoff to fail for good)."""
    ip = add_ips(scheduler, 1)[0]

    @dramatiq.actor(broker=broker, actor_name="failing_crawl", queue_name="failing-crawl", max_retries=1,
                    releases_in_flight=lambda ip_id, *_, **__: ip_id)
    def failing_crawl(ip_id: int, keyword: str, task_id: str) -> None:
        raise RuntimeError("browser crashed")

    assert scheduler.in_flight.claim([ip.id], T0) == {ip.id}
    failing_crawl.send(ip.id, "キーワード 0", "t1")
    start_worker(broker, queues=["failing-crawl"])
    letters = DeadLetters.for_broker(broker, broker.reasons)
    wait_for(lambda: letters.list("failing-crawl"), what="the task in the dead-letter queue")
    wait_for(lambda: scheduler.in_flight.members() == set(), what="the in-flight member released")


def test_janitor_releases_a_stuck_member(scheduler, settings, clock):
    ip = add_ips(scheduler, 1)[0]
    scheduler.tick()
    assert scheduler.in_flight.members() == {ip.id}
    clock.advance(2 * HOUR + 1)  # due again, and its crawl vanished long ago (> JANITOR_TIMEOUT)
    result = scheduler.tick()
    assert result.swept == [ip.id]
    assert result.enqueued == [ip.id]  # crawled again, not blocked forever


def test_crawls_go_out_within_seconds_of_their_due_time(db, settings, broker, app_actors, start_worker):
    """Real time: the real schedule_tick sees an IP due in 3 s and wakes up for it with a delayed tick (without
    it the crawl would wait for periodiq's next minute). No crawler runs: the crawl task stays in its queue."""
    from dramatiq import Message

    from lib.core.clock import Clock

    r = state_redis(settings)
    real = Scheduler(settings, r, broker, Clock())
    ip = real.catalogue.add("ぼっち・ざ・ろっく！")
    due_at = time.time() + 3
    real.store.schedule(ip.id, due_at)

    app_actors.schedule_tick.send()
    start_worker(broker, threads=2, queues=["scheduler"])
    # the first tick found nothing due and asked for one delayed tick at the IP's due time (no periodiq runs
    # here: that delayed tick is the only way the crawl can go out)
    eta = float(wait_for(lambda: r.get(keys.SCHEDULE_NEXT_TICK), what="the follow-up tick requested"))
    assert eta == pytest.approx(due_at)
    raw = wait_for(lambda: broker.client.hvals(f"{broker.namespace}:{CRAWL}.msgs"), timeout=30, what="the crawl task")
    task = Message.decode(raw[0])
    assert task.kwargs["ip_id"] == ip.id
    assert task.message_timestamp / 1000 >= due_at  # not before it was due


def test_two_periodiq_processes_sending_the_same_minute_run_one_tick(db, settings, broker, app_actors, processed,
                                                                     start_worker):
    """periodiq has no guard against a second scheduler process: the tick actor's own options are."""
    schedule_tick = app_actors.schedule_tick
    start_worker(broker, threads=4, queues=["scheduler"])
    now = datetime.now(timezone.utc).replace(microsecond=0)
    # periodiq skips ticks older than its skip delay: two recent, distinct tick times
    for n, minute in enumerate(((now - timedelta(seconds=2)).isoformat(), now.isoformat()), start=1):
        for _ in range(2):  # what two periodiq processes send
            schedule_tick.send_with_options(scheduled_at=minute)
        # a minute's ticks are handled before the next minute's arrive (a tick still running would make the
        # next one skip on the tick lock, by design)
        wait_for(lambda: processed.processed["schedule_tick"] + processed.skipped["schedule_tick"] == 2 * n,
                 timeout=20, what=f"both messages of tick {n} handled")
    assert processed.processed["schedule_tick"] == 2  # one per minute
    assert processed.skipped["schedule_tick"] == 2
