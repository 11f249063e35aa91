"""The one classification of transient state errors (lib/core/state_errors.py), on errors real servers give."""

import threading
import time

import pytest
import redis

from lib.core.errors import StateUnavailable
from lib.core.state_errors import is_transient, ride_out

from .helpers import RedisServer, free_port


def error_of(operation) -> BaseException:
    with pytest.raises(Exception) as caught:
        operation()
    return caught.value


def test_an_outage_is_transient_and_so_is_what_is_raised_from_it(redis_server):
    refused = error_of(lambda: redis.Redis(port=free_port(), socket_connect_timeout=1).ping())
    assert isinstance(refused, redis.ConnectionError) and is_transient(refused)
    try:
        raise StateUnavailable("idempotency check failed") from refused
    except StateUnavailable as e:
        assert is_transient(e)
    assert not is_transient(StateUnavailable("no cause"))


def test_errors_no_retry_cures_are_not_transient(redis_server):
    client = redis.Redis.from_url(redis_server)
    client.set("animetop:test:str", "x")
    wrong_type = error_of(lambda: client.lpush("animetop:test:str", 1))
    assert isinstance(wrong_type, redis.ResponseError) and not is_transient(wrong_type)
    client.delete("animetop:test:str")
    # a wrong password is a kind of ConnectionError in redis-py: retrying it would only hide it
    assert not is_transient(redis.AuthenticationError("invalid username-password pair"))
    assert not is_transient(RuntimeError("boom")) and not is_transient(None)


def test_ride_out_waits_for_a_server_that_comes_back_and_gives_up_on_other_errors(tmp_path):
    server = RedisServer(tmp_path / "state")
    starter = threading.Timer(0.5, server.start)
    started = time.monotonic()
    starter.start()
    try:
        assert ride_out(lambda: redis.Redis(port=server.port, socket_connect_timeout=1).ping(), patience=20)
        assert time.monotonic() - started >= 0.5
        calls = []

        def wrong() -> None:
            calls.append(1)
            raise redis.ResponseError("WRONGTYPE")

        with pytest.raises(redis.ResponseError):
            ride_out(wrong)
        assert calls == [1]  # not retried
    finally:
        starter.join()
        server.stop()
