"""The Redis client for application state (REDIS_URL), one per process."""

from __future__ import annotations

import threading

import redis
from redis.backoff import ExponentialBackoff
from redis.retry import Retry

from lib.core.embedded_redis import EmbeddedRedis
from lib.core.settings import Settings, get_settings

_lock = threading.Lock()
_clients: dict[str, redis.Redis] = {}


def ensure_redis_server(settings: Settings) -> None:
    """Start the embedded redis-server when no Redis is configured; no-op otherwise."""
    if settings.embedded_redis:
        EmbeddedRedis(settings.data_path).ensure_running()


def connect(url: str) -> redis.Redis:
    """A client that rides out a Redis restart: short timeouts, reconnect and retry."""
    return redis.Redis.from_url(
        url,
        socket_timeout=10,
        socket_connect_timeout=5,
        health_check_interval=30,
        retry=Retry(ExponentialBackoff(cap=1.0, base=0.05), retries=5),
        retry_on_error=[redis.ConnectionError, redis.TimeoutError],
    )


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
