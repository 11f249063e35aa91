"""Item states in Redis: what ``ItemStateStore.write`` stores, ``read`` gives back, for any number of items."""

import pytest

from lib.core import keys
from lib.core.clock import FrozenClock
from lib.core.redis_client import state_redis
from lib.market.item_state import CHUNK, ItemState, ItemStateStore

T0 = 1_800_000_000.0


@pytest.fixture
def store(settings):
    r = state_redis(settings)
    r.flushdb()
    return ItemStateStore(r, 3600, 7200, FrozenClock(T0))


@pytest.mark.parametrize("n", [1, CHUNK, CHUNK + 1, 2 * CHUNK + 7])
def test_states_read_back_as_written_missing_ones_left_out(store, n):
    written = {f"m{i}": ItemState("sold" if i % 3 == 0 else "on_sale", None if i % 5 == 0 else 1000 + i,
                                  T0 - i, T0 + i / 8, None if i % 7 == 0 else f"{i:016x}")
               for i in range(n)}
    store.write(5, written.items())
    asked = [f"gone{i}" for i in range(3)] + list(written) + ["gone-last"]
    assert store.read(5, asked) == written
    assert store.read(6, list(written)) == {}  # another IP's keys


def test_a_state_written_by_the_previous_version_reads_without_a_title_key(store):
    # before states kept ``t``: four fields, price "" for none
    store.client.hset(keys.item_state(5, "old"), mapping={"status": "on_sale", "price": "", "first_seen": T0,
                                                          "last_seen": T0 + 60})
    assert store.read(5, ["old"]) == {"old": ItemState("on_sale", None, T0, T0 + 60, None)}


def test_an_older_state_never_overwrites_a_newer_one(store):
    store.write(5, [("a", ItemState("sold", 900, T0, T0 + 120, "k2"))])
    store.write(5, [("a", ItemState("on_sale", 1000, T0, T0 + 60, "k1"))])
    assert store.read(5, ["a"]) == {"a": ItemState("sold", 900, T0, T0 + 120, "k2")}


def test_states_expire_by_status(store):
    store.write(5, [("a", ItemState("on_sale", 1, T0, T0)), ("b", ItemState("sold", 1, T0, T0))])
    assert 3590 < store.client.pttl(keys.item_state(5, "a")) / 1000 <= 3600
    assert 7190 < store.client.pttl(keys.item_state(5, "b")) / 1000 <= 7200
