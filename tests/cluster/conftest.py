"""Tests on a real Redis Cluster: each pytest-xdist worker starts its own three masters and three replicas on
free loopback ports (so two workers, or two test runs, never share one) and stops them at the end of the
session. Application state goes to the cluster (``REDIS_URL=redis+cluster://…``); the broker stays a single
Redis, as it must."""

from __future__ import annotations

import pytest

from ..conftest import IN_CI
from .local_cluster import ClusterUnavailable, LocalCluster

#: The test cluster's ``cluster-node-timeout``.
NODE_TIMEOUT_MS = 3000


@pytest.fixture(scope="session")
def redis_cluster():
    try:
        # a master down for 3 s is failed over to its replica, as in the production trial of issue 25
        cluster = LocalCluster(masters=3, replicas=1, node_timeout_ms=NODE_TIMEOUT_MS).start()
    except ClusterUnavailable as e:
        if IN_CI:
            pytest.fail(f"{e} (CI=true: the Redis Cluster tests must run)")
        pytest.skip(str(e))
    yield cluster
    cluster.stop()


@pytest.fixture
def env(env, redis_cluster):
    """The isolated app's environment with its state on the (flushed) cluster."""
    redis_cluster.flush()
    return {**env, "REDIS_URL": redis_cluster.url}


@pytest.fixture
def database_url(tmp_path) -> str:
    """SQLite only: the database is not what these tests are about (the suite runs them on MariaDB too)."""
    return f"sqlite:///{tmp_path / 'db.sqlite3'}"
