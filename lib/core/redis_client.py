"""The Redis client for application state (REDIS_URL), one per process: a single server, or a Redis Cluster
through redis-py's cluster client (``redis+cluster://``)."""

from __future__ import annotations

import threading
from typing import cast

import redis
from redis.backoff import ExponentialBackoff
from redis.cluster import ClusterNode, RedisCluster
from redis.retry import Retry

from lib.core import redis_urls
from lib.core.embedded_redis import EmbeddedRedis
from lib.core.settings import Settings, get_settings

_lock = threading.Lock()
_clients: dict[str, redis.Redis] = {}

#: Socket time limits of every state client: short, so a restarted server is noticed and retried.
_TIMEOUTS = {"socket_timeout": 10, "socket_connect_timeout": 5}


def ensure_redis_server(settings: Settings) -> None:
    """Start the embedded redis-server when no Redis is configured; no-op otherwise."""
    if settings.embedded_redis:
        EmbeddedRedis(settings.data_path).ensure_running()


def _retry() -> Retry:
    return Retry(ExponentialBackoff(cap=1.0, base=0.05), retries=5)


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
    """redis-py's cluster client for a ``redis+cluster://host:port[,host:port…]`` URL."""
    parsed = redis_urls.parse_cluster_url(url)
    return RedisCluster(
        startup_nodes=[ClusterNode(host, port) for host, port in parsed.nodes],
        username=parsed.username,
        password=parsed.password,
        ssl=parsed.tls,
        retry=_retry(),
        **_TIMEOUTS,
    )


def serves_a_cluster(client: redis.Redis) -> bool:
    """Whether the server behind a plain client is a Redis Cluster node (False when it cannot be asked now:
    a server that is down is not refused at start-up, the processes ride that out)."""
    try:
        return bool(client.info("cluster").get("cluster_enabled"))
    except redis.RedisError:
        return False


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
