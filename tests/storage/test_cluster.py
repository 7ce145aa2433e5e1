"""Broker registrations and the cluster-wide counters, on a real redis-server."""

from __future__ import annotations

import time
from typing import Any

from schooner.storage import cluster
from schooner.storage.cluster import BrokerInfo
from schooner.storage.keys import Keyspace
from schooner.storage.redis import client
from schooner.storage.redis.calls import drive_sync, run_sync


def test_registrations_lapse_unless_renewed(redis_server: Any, keyspace: str) -> None:
    ks = Keyspace(keyspace)
    redis = client.connect_sync(redis_server.url)
    one, two = BrokerInfo(1, "h1", 9092, "r1"), BrokerInfo(2, "h2", 9093)
    drive_sync(redis, cluster.heartbeat(ks, two, 60_000))
    drive_sync(redis, cluster.heartbeat(ks, one, 200))
    assert drive_sync(redis, cluster.live_brokers(ks)) == [one, two]
    time.sleep(0.3)
    assert drive_sync(redis, cluster.live_brokers(ks)) == [two]
    drive_sync(redis, cluster.unregister(ks, 2))
    assert drive_sync(redis, cluster.live_brokers(ks)) == []
    assert not redis.exists(ks.broker(2))


def test_counters_and_the_cluster_id(redis_server: Any, keyspace: str) -> None:
    ks = Keyspace(keyspace)
    redis = client.connect_sync(redis_server.url)
    first = drive_sync(redis, cluster.cluster_id(ks))
    assert drive_sync(redis, cluster.cluster_id(ks)) == first and len(first) == 22
    ids = [run_sync(redis, cluster.next_producer_id(ks)) for _ in range(3)]
    assert ids == [ids[0], ids[0] + 1, ids[0] + 2]
    assert run_sync(redis, cluster.allocate_broker_id(ks)) + 1 == run_sync(
        redis, cluster.allocate_broker_id(ks)
    )
