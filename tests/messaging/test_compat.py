"""One test per Dramatiq or periodiq internal that ``lib.messaging.compat`` relies on, each on a real Redis
broker (or periodiq's real scheduler). A failure here means the pinned library changed under us: fix
``lib/messaging/compat.py`` for the new version before widening the pin in setup.cfg."""

from __future__ import annotations

import inspect
import threading
from urllib.parse import urlsplit

import dramatiq
import periodiq
import pika
import pytest
import redis as redis_lib

from lib.messaging import compat
from lib.messaging.broker import build_broker

from ..helpers import TcpProxy, wait_for

QUEUE = "compat"


def internal(name: str) -> str:
    return (f"{name} changed in dramatiq {dramatiq.__version__} / periodiq {periodiq.__version__}: "
            f"update lib/messaging/compat.py")


@pytest.fixture
def queue(broker):
    broker.declare_queue(QUEUE)
    return QUEUE


def enqueue(broker, **options) -> dramatiq.Message:
    message = dramatiq.Message(queue_name=QUEUE, actor_name="compat_probe", args=(), kwargs={}, options={})
    return broker.enqueue(message, **options)


def take(broker) -> tuple[object, dramatiq.Message]:
    consumer = broker.consume(QUEUE, prefetch=1, timeout=100)
    return consumer, wait_for(lambda: next(consumer), what="a message from the consumer")


def test_the_consumer_base_class_has_what_we_override(broker, queue):
    base = compat.RedisConsumerBase
    assert list(inspect.signature(base.__init__).parameters) == ["self", "broker", "queue_name", "prefetch",
                                                                  "timeout"], internal("_RedisConsumer.__init__")
    for method in ("__next__", "ack", "nack", "requeue", "close"):
        assert callable(getattr(base, method, None)), internal(f"_RedisConsumer.{method}")
    consumer = broker.consume(queue, prefetch=1, timeout=100)
    assert isinstance(consumer, base) and isinstance(consumer.queued_message_ids, set), \
        internal("_RedisConsumer.queued_message_ids")
    consumer.close()


def test_a_ready_message_is_in_the_queue_list_and_the_payload_hash(broker, queue):
    rid = enqueue(broker).options["redis_message_id"]
    assert rid.encode() in broker.client.lrange(compat.queue_key(broker, queue), 0, -1), internal("queue key")
    assert broker.client.hexists(compat.payloads_key(broker, queue), rid), internal("payload hash key")


def test_a_delayed_message_is_in_the_delay_queues_payload_hash(broker, queue):
    rid = enqueue(broker, delay=60_000).options["redis_message_id"]
    assert compat.delay_queue_name(queue) == f"{queue}.DQ", internal("dq_name")
    assert broker.client.hexists(compat.delayed_payloads_key(broker, queue), rid), internal("delay payload hash")


def test_a_taken_message_is_in_this_brokers_ack_set(broker, queue):
    rid = enqueue(broker).options["redis_message_id"]
    consumer, message = take(broker)
    assert message.options["redis_message_id"] == rid
    assert broker.client.sismember(compat.acks_key(broker, queue), rid), internal("ack set key")
    assert [k.decode() for k in broker.client.scan_iter(compat.acks_pattern(broker, queue))] == \
        [compat.acks_key(broker, queue)], internal("ack set pattern")
    consumer.ack(message)
    assert not broker.client.sismember(compat.acks_key(broker, queue), rid)
    consumer.close()


def test_nack_moves_a_taken_message_to_the_dead_letter_keys(broker, queue):
    rid = enqueue(broker).options["redis_message_id"]
    consumer, _ = take(broker)
    compat.nack(broker, queue, rid)
    assert broker.client.zscore(compat.dead_key(broker, queue), rid) is not None, internal("dead-letter set")
    assert broker.client.hexists(compat.dead_payloads_key(broker, queue), rid), internal("dead-letter payloads")
    found = [k.decode() for k in broker.client.scan_iter(compat.dead_queues_pattern(broker))]
    assert [compat.dead_queue_of(broker, k) for k in found] == [queue], internal("dead-letter key pattern")
    assert compat.dead_queue_name(queue) == f"{queue}.XQ" and compat.base_queue_name(f"{queue}.XQ") == queue
    consumer.close()


def test_requeue_puts_a_taken_message_back_at_the_front(broker, queue):
    rid = enqueue(broker).options["redis_message_id"]
    consumer, _ = take(broker)
    assert broker.client.llen(compat.queue_key(broker, queue)) == 0
    compat.requeue(broker, queue, rid)
    assert broker.client.lrange(compat.queue_key(broker, queue), 0, -1) == [rid.encode()], internal("do_requeue")
    assert not broker.client.sismember(compat.acks_key(broker, queue), rid)
    consumer.close()


def test_heartbeat_records_this_broker_alive(broker, queue):
    broker.client.delete(f"{broker.namespace}:__heartbeats__")
    compat.heartbeat(broker, queue)
    assert broker.client.zscore(f"{broker.namespace}:__heartbeats__", broker.broker_id) is not None, \
        internal("do_heartbeat")


def test_forget_fetched_drops_a_message_the_consumer_holds(broker, queue):
    enqueue(broker)
    consumer, message = take(broker)
    assert message.message_id in consumer.queued_message_ids, internal("_RedisConsumer.queued_message_ids")
    compat.forget_fetched(consumer, message.message_id)
    assert message.message_id not in consumer.queued_message_ids
    consumer.close()


def test_pipelined_enqueue_gives_messages_a_worker_runs(broker, settings, start_worker):
    ran = []

    @dramatiq.actor(broker=broker, queue_name=QUEUE, actor_name="compat_probe")
    def compat_probe(n: int) -> None:
        ran.append(n)

    sent = compat.enqueue_pipelined(broker, [compat_probe.message(n) for n in range(3)])
    assert all(m.options.get("redis_message_id") for m in sent), internal("dispatch enqueue")
    start_worker(broker, queues=[QUEUE])
    wait_for(lambda: sorted(ran) == [0, 1, 2], what="the pipelined messages run")


def test_periodiq_send_actors_is_wrapped_and_rides_out_an_outage(settings, redis_server, caplog):
    """periodiq's Scheduler.send_actors(self, actors, now) is what the wrapper replaces; with the broker cut,
    the wrapped send tries again until the broker is back, then the tick is in the queue."""
    assert list(inspect.signature(periodiq.Scheduler.send_actors).parameters) == ["self", "actors", "now"], \
        internal("periodiq.Scheduler.send_actors")
    build_broker(settings).close()  # building the app's broker installs the wrapper
    assert getattr(periodiq.Scheduler.send_actors, "rides_out_broker_outages", False), internal("the wrapper")

    url = urlsplit(settings.broker_url_resolved)
    if url.scheme != "redis":
        pytest.skip("needs a TCP Redis to cut")
    proxy = TcpProxy(url.hostname, url.port or 6379)
    try:
        from dramatiq.brokers.redis import RedisBroker
        from redis.backoff import NoBackoff
        from redis.retry import Retry

        client = redis_lib.Redis(host="127.0.0.1", port=proxy.port, db=int(url.path.strip("/") or 0),
                                 socket_connect_timeout=0.5, socket_timeout=0.5, retry=Retry(NoBackoff(), 0))
        cut_broker = RedisBroker(client=client, namespace="compat-periodiq", middleware=[])

        @dramatiq.actor(broker=cut_broker, queue_name=QUEUE, actor_name="compat_tick")
        def compat_tick() -> None:
            pass

        proxy.cut()
        threading.Timer(1.5, proxy.restore).start()
        periodiq.Scheduler([compat_tick]).send_actors([compat_tick], now="2026-01-01T00:00:00")
        assert cut_broker.client.llen(f"compat-periodiq:{QUEUE}") == 1
        assert any("trying again" in r.getMessage() for r in caplog.records)  # it met the outage
        cut_broker.client.delete(f"compat-periodiq:{QUEUE}", f"compat-periodiq:{QUEUE}.msgs")
    finally:
        proxy.close()


@pytest.mark.rabbitmq
def test_the_rabbitmq_brokers_thread_connection_is_in_its_state_and_connections():
    from dramatiq.brokers.rabbitmq import RabbitmqBroker

    from ..conftest import RABBITMQ_URL, need_rabbitmq

    need_rabbitmq()
    broker = RabbitmqBroker(url=RABBITMQ_URL, middleware=[])
    try:
        assert compat.thread_connection(broker) is None, internal("RabbitmqBroker.state")
        connection = broker.connection
        assert compat.thread_connection(broker) is connection, internal("RabbitmqBroker.state.connection")
        assert connection in broker.connections, internal("RabbitmqBroker.connections")
        elsewhere: list = []
        thread = threading.Thread(target=lambda: elsewhere.append(compat.thread_connection(broker)))
        thread.start()
        thread.join(timeout=10)
        assert elsewhere == [None], internal("RabbitmqBroker.state (one connection per thread)")
        del broker.connection
        assert compat.thread_connection(broker) is None and connection not in broker.connections
        assert not connection.is_open

        own = pika.BlockingConnection(broker.parameters)
        compat.set_thread_connection(broker, own)
        assert broker.connection is own and broker.channel.is_open, internal("RabbitmqBroker.connection")
    finally:
        broker.close()
    assert not own.is_open, internal("RabbitmqBroker.close (closes every connection in connections)")
