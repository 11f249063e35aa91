"""The Redis client for application state (REDIS_URL), one per process: a single server, or a Redis Cluster
through redis-py's cluster client (``redis+cluster://``)."""

from __future__ import annotations

import threading
from typing import Any, cast

import redis
from redis.backoff import ExponentialBackoff, NoBackoff
from redis.cluster import ClusterNode, RedisCluster
from redis.retry import Retry

from lib.core import redis_urls
from lib.core.embedded_redis import EmbeddedRedis
from lib.core.settings import Settings, get_settings
from lib.core.state_errors import ride_out

_lock = threading.Lock()
_clients: dict[str, redis.Redis] = {}

#: Socket time limits of every state client: short, so a restarted server is noticed and retried.
_TIMEOUTS = {"socket_timeout": 10, "socket_connect_timeout": 5}


def ensure_redis_server(settings: Settings) -> None:
    """Start the embedded redis-server when no Redis is configured; no-op otherwise."""
    if settings.embedded_redis:
        EmbeddedRedis(settings.data_path).ensure_running()


def _retry() -> Retry:
    """The standalone client's retries: 0.1, 0.2, 0.4, 0.8 and 1 s apart, about ``state_errors.CLIENT_PATIENCE``."""
    return Retry(ExponentialBackoff(cap=1.0, base=0.05), retries=5)


class PatientRedisCluster(RedisCluster):  # type: ignore[misc]  # redis-py is read untyped (pyproject.toml)
    """redis-py's cluster client, waiting between its retries.

    redis-py 8's cluster client retries a command that met a connection error, a time-out, ``CLUSTERDOWN`` or an
    uncovered slot ``retry.get_retries()`` times, re-reading the slot map before each, but without waiting: its
    ``retry`` object only gives the count (its docstring says so; the backoff is "not yet fully utilized"). A
    master that is down but not yet failed over (up to ``cluster-node-timeout``) refuses all of them within
    milliseconds. So the client makes one immediate retry (which follows a failover that already happened) and this
    class calls each command again with exponential backoff for ``state_errors.CLIENT_PATIENCE`` seconds, as the
    standalone client's retries wait: a master restarted within that, or a slot migrating (``TRYAGAIN``), costs
    the caller nothing. A longer outage (a failover takes ``cluster-node-timeout`` and an election) is the
    messages' to ride out, without holding a worker thread (``lib.messaging.middleware.retries``). Pipelines
    (``ClusterPipeline``) keep redis-py's own retries; their callers' messages retry them.
    """

    def execute_command(self, *args: Any, **kwargs: Any) -> Any:
        return ride_out(lambda: super(PatientRedisCluster, self).execute_command(*args, **kwargs))


def connect(url: str) -> redis.Redis:
    """A client that rides out a Redis restart: short timeouts, reconnect and retry.

    For a ``redis+cluster://`` URL, redis-py's ``RedisCluster``: it learns the slot map from the nodes given,
    sends each command to the master of its key's slot, follows MOVED/ASK, and on a connection error re-reads
    the map and retries. It offers the commands, scripts, pipelines (transactions within one slot) and locks
    of ``redis.Redis`` the application uses, so callers keep one type; every script and transaction names
    keys of one slot (lib/core/keys.py's hash tags), which tests/cluster runs on a real cluster.
    """
    if redis_urls.is_cluster_url(url):
        return cast(redis.Redis, connect_cluster(url))
    return redis.Redis.from_url(
        url,
        health_check_interval=30,
        retry=_retry(),
        retry_on_error=[redis.ConnectionError, redis.TimeoutError],
        **_TIMEOUTS,
    )


def connect_cluster(url: str) -> RedisCluster:
    """redis-py's cluster client (``PatientRedisCluster``) for a ``redis+cluster://host:port[,host:port…]`` URL."""
    parsed = redis_urls.parse_cluster_url(url)
    return PatientRedisCluster(
        startup_nodes=[ClusterNode(host, port) for host, port in parsed.nodes],
        username=parsed.username,
        password=parsed.password,
        ssl=parsed.tls,
        retry=Retry(NoBackoff(), retries=1),  # one at once, on the re-read slot map; then PatientRedisCluster waits
        **_TIMEOUTS,
    )


def serves_a_cluster(url: str) -> bool:
    """Whether the server at a plain ``redis://`` URL is a Redis Cluster node (False when it cannot be asked now:
    a server that is down is not refused at start-up, the processes ride that out).

    Asked once, without the state clients' retries: the guard is against a misconfiguration, and the first real
    command on an unreachable server waits out those retries anyway, so waiting here too doubled the time a
    command line took to say the server cannot be reached."""
    client = redis.Redis.from_url(url, retry=Retry(NoBackoff(), 0), **_TIMEOUTS)
    try:
        return bool(client.info("cluster").get("cluster_enabled"))
    except redis.RedisError:
        return False
    finally:
        client.close()


def state_redis(settings: Settings | None = None) -> redis.Redis:
    """The shared client of the application-state database."""
    settings = settings or get_settings()
    url = settings.state_redis_url
    with _lock:
        client = _clients.get(url)
        if client is None:
            ensure_redis_server(settings)
            client = _clients[url] = connect(url)
        return client
