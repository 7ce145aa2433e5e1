"""A real Redis Cluster of redis-server processes (storage/redis/embedded_cluster.py): 3 primaries with a
replica each, formed by redis-cli --cluster create; the keys of 12 partitions spread over all three
primaries by their hash tags; a SIGKILLed primary is replaced by its replica."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from redis.cluster import RedisCluster

from schooner.storage.keys import Keyspace
from schooner.storage.redis.embedded import ephemeral_low
from schooner.storage.redis.embedded_cluster import BUS_OFFSET, HIGH_PORT, EmbeddedCluster, free_cluster_port


def test_node_ports_and_their_bus_ports_are_below_the_ephemeral_range() -> None:
    """An outgoing connection can take a free port of the ephemeral range before a node binds it."""
    assert ephemeral_low() - 1 - BUS_OFFSET > 11_000  # this machine leaves room below the range
    for _ in range(50):
        port = free_cluster_port(set())
        assert port + BUS_OFFSET < ephemeral_low()


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[EmbeddedCluster]:
    c = EmbeddedCluster(tmp_path / "cluster", primaries=3, replicas=1, node_timeout_ms=1000)
    c.start()
    yield c
    c.stop()


def test_the_cluster_forms_and_partitions_spread_over_every_primary(cluster: EmbeddedCluster) -> None:
    assert all(n.port <= HIGH_PORT and n.port + BUS_OFFSET < 65536 for n in cluster.nodes)
    assert len(cluster.primary_ports()) == 3
    client = RedisCluster.from_url(cluster.url)
    try:
        ks = Keyspace("schooner")
        owners = set()
        for p in range(12):
            key = ks.stream("orders", p)
            client.xadd(key, {"value": b"v"}, id="0-1")
            owners.add(client.get_node_from_key(key).port)
        assert len(owners) == 3
    finally:
        client.close()
    # A plain client on one node is told to go elsewhere for most keys: the error new users see.
    plain = redis.Redis(port=cluster.nodes[0].port)
    with pytest.raises(redis.exceptions.MovedError):
        for p in range(12):
            plain.xlen(Keyspace("schooner").stream("orders", p))
    plain.close()


def test_a_killed_primary_is_replaced_by_its_replica(cluster: EmbeddedCluster) -> None:
    before = cluster.primary_ports()
    victim = cluster.node_for_port(before[0])
    victim.kill()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        now = cluster.primary_ports()
        if len(now) == 3 and before[0] not in now:
            break
        time.sleep(0.2)
    assert len(cluster.primary_ports()) == 3 and before[0] not in cluster.primary_ports()
    cluster.wait_ok()


def test_a_cluster_of_one_primary_holds_every_slot(cluster_factory) -> None:
    """redis-cli --cluster create wants three primaries; one primary (the benchmarks' baseline) is
    formed with CLUSTER ADDSLOTSRANGE, its replica with CLUSTER REPLICATE."""
    single = cluster_factory(primaries=1, replicas=1)
    assert single.primary_ports() == [single.nodes[0].port]
    client = RedisCluster.from_url(single.url)
    try:
        keys = [Keyspace("schooner").stream("orders", p) for p in range(12)]
        for key in keys:
            client.xadd(key, {"value": b"v"}, id="0-1")
        assert {client.get_node_from_key(key).port for key in keys} == {single.nodes[0].port}
        replica = redis.Redis(port=single.nodes[1].port)
        assert replica.info("replication")["role"] == "slave"
        replica.close()
    finally:
        client.close()
