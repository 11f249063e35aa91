"""The key layout on a real cluster: keys one script or transaction touches share a hash slot, the others
spread, and the cluster really refuses a script whose keys cross slots (what the layout guards against)."""

import pytest
import redis
from redis.exceptions import RedisClusterException

from lib.core import keys
from lib.core.redis_client import state_redis

#: Each group is touched by one Lua script or transaction (its module in the comment).
GROUPS = {
    "in-flight claim and release (scheduling/schedule.py)": [keys.TASKS_PENDING, keys.TASKS_STARTED],
    "one IP's item states (market/item_state.py)": [keys.item_state(42, sid) for sid in ("m1", "m2", "x9")],
    "a pool's list and handed set (text_pools/pool.py)": [keys.pool("titles", 1), keys.pool_handed("titles", 1)],
    "one IP's detail caches and their index (market/read_side.py)": [
        keys.ip_cache(42, "detail:24"), keys.ip_cache(42, "detail:1"), keys.cache_index(keys.ip_cache_group(42))],
}


@pytest.mark.parametrize("group", GROUPS)
def test_keys_used_together_share_a_slot(settings, redis_cluster, group):
    node = redis_cluster.node(redis_cluster.running[0])
    assert len({node.cluster("KEYSLOT", key) for key in GROUPS[group]}) == 1


def test_named_keys_keep_their_names():
    """Others find the in-flight set and the pool lists under the names docs/concepts/scheduling.md and
    docs/operating/pools.md give them."""
    assert keys.TASKS_PENDING == "animetop:queue:tasks:pending"
    assert keys.pool("titles", 1) == "titles:pool:1"


def test_unrelated_keys_spread_over_every_master(settings, redis_cluster):
    masters = {redis_cluster.master_of(keys.item_state(ip_id, "m1")) for ip_id in range(1, 60)}
    assert masters == set(redis_cluster.masters())
    masters = {redis_cluster.master_of(keys.pool("titles", group)) for group in range(1, 60)}
    assert masters == set(redis_cluster.masters())


def test_a_script_across_slots_is_refused(settings, redis_cluster):
    """The control: two IPs' states (different tags) in one script fail on the cluster, so the tests of the
    scripts on it would catch a layout that broke the rule."""
    client = state_redis(settings)
    a, b = keys.item_state(1, "m1"), keys.item_state(2, "m1")
    node = redis_cluster.node(redis_cluster.running[0])
    assert node.cluster("KEYSLOT", a) != node.cluster("KEYSLOT", b)
    script = "redis.call('SET', KEYS[1], 1); redis.call('SET', KEYS[2], 1)"
    with pytest.raises(RedisClusterException, match="same key slot"):  # redis-py's cluster client refuses it
        client.eval(script, 2, a, b)
    with pytest.raises(redis.ResponseError, match="same slot"):  # and so does the server
        node.eval(script, 2, a, b)


def test_a_broker_url_at_a_cluster_node_stops_start_up(env, redis_cluster):
    """BROKER_URL=redis://<a cluster node> passes the URL check; start-up finds the cluster and refuses it."""
    from ..helpers import run_cli

    node = f"redis://127.0.0.1:{redis_cluster.running[0]}/0"
    done = run_cli({**env, "BROKER_URL": node}, "status")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1] == (
        f"animetop: bad setting BROKER_URL: {node} is a node of a Redis Cluster. Dramatiq's Redis broker does not "
        "support Redis Cluster (its scripts touch keys of several queues at once); use RabbitMQ (amqp://…) or a "
        "single Redis server (redis://…)")
