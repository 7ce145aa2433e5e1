"""Fixtures of the cluster tests: a broker on the session's Redis Cluster (`redis_cluster`), a redis-py
cluster client on it, and the keyspace's names, so a test can say on which primary a key sits."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis

from schooner.storage.keys import Keyspace
from schooner.storage.redis.embedded_cluster import EmbeddedCluster


@pytest.fixture
def cluster_broker(broker_factory: Callable[..., Any], redis_cluster: EmbeddedCluster) -> Any:
    """One broker whose Redis is the session's cluster."""
    return broker_factory(redis_url=redis_cluster.url)


@pytest.fixture
def cluster_client(redis_cluster: EmbeddedCluster) -> Iterator[redis.RedisCluster]:
    client = redis.RedisCluster.from_url(redis_cluster.url)
    yield client
    client.close()


@pytest.fixture
def ks(keyspace: str) -> Keyspace:
    return Keyspace(keyspace)
