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


def test_each_listener_endpoint_is_registered(redis_server: Any, keyspace: str) -> None:
    ks = Keyspace(keyspace)
    redis = client.connect_sync(redis_server.url)
    endpoints = {"PLAINTEXT": ("h1", 9092), "SSL": ("h1", 9093), "SASL_SSL": ("::1", 9094)}
    me = BrokerInfo(1, "h1", 9092, None, endpoints)
    drive_sync(redis, cluster.heartbeat(ks, me, 60_000))
    assert redis.hget(ks.broker(1), "endpoints") == b"PLAINTEXT://h1:9092,SSL://h1:9093,SASL_SSL://[::1]:9094"
    (found,) = drive_sync(redis, cluster.live_brokers(ks))
    assert found == me
    assert found.endpoint("SSL") == ("h1", 9093) and found.endpoint("SASL_SSL") == ("::1", 9094)
    assert found.endpoint("SASL_PLAINTEXT") is None


def test_a_registration_without_endpoints_is_plaintext_on_host_and_port(
    redis_server: Any, keyspace: str
) -> None:
    ks = Keyspace(keyspace)
    redis = client.connect_sync(redis_server.url)
    redis.hset(ks.broker(3), mapping={"host": "old", "port": 9092, "rack": ""})  # as brokers before listeners
    redis.zadd(ks.brokers, {"3": time.time() * 1000 + 60_000})
    (found,) = drive_sync(redis, cluster.live_brokers(ks))
    assert found.endpoint("PLAINTEXT") == ("old", 9092)
    assert found.endpoint("SSL") is None
