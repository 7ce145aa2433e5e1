"""Transactions on a Redis Cluster: one transaction spans partitions on every primary (a marker per
partition, each in its partition's slot) and commits a group's offsets; commit and abort as
read_committed and read_uncommitted consumers see them; the coordinator's state sits in the slot of its
transactional id."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import redis
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from redis.cluster import key_slot

from schooner.storage.keys import Keyspace
from tests.cluster.helpers import primaries_of

PARTITIONS = 12
T = 15


def _read(bootstrap: str, topic: str, isolation: str, expect: int) -> list[tuple[int, bytes]]:
    """(partition, value) of every record from the start of every partition, waiting for `expect` of
    them and then half a second more, to see that no more come."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"r-{uuid.uuid4().hex}",
                         "isolation.level": isolation, "enable.auto.commit": False})  # fmt: skip
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    out: list[tuple[int, bytes]] = []
    deadline = time.monotonic() + 20
    settle: float | None = None
    try:
        while time.monotonic() < (settle or deadline):
            out += [(m.partition(), m.value()) for m in consumer.consume(100, 0.2) if not m.error()]
            if settle is None and len(out) >= expect:
                settle = time.monotonic() + 0.5
    finally:
        consumer.close()
    return sorted(out)


def _every(prefix: str) -> list[tuple[int, bytes]]:
    return [(p, f"{prefix}-{p}".encode()) for p in range(PARTITIONS)]


def _transaction(producer: Producer, consumer: Consumer, prefix: str, offset: int, commit: bool) -> None:
    producer.begin_transaction()
    for p, value in _every(prefix):
        producer.produce("tx-out", value=value, partition=p)
    offsets = [TopicPartition("tx-in", p, offset) for p in range(3)]
    producer.send_offsets_to_transaction(offsets, consumer.consumer_group_metadata(), T)
    producer.flush(T)  # an abort drops the records not sent yet
    if commit:
        producer.commit_transaction(T)
    else:
        producer.abort_transaction(T)


def test_a_transaction_across_primaries_commits_aborts_and_sends_offsets(
    cluster_broker: Any, cluster_client: redis.RedisCluster, ks: Keyspace
) -> None:
    bootstrap = cluster_broker.bootstrap
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for topic, count in (("tx-out", PARTITIONS), ("tx-in", 3)):
        admin.create_topics([NewTopic(topic, count, 1)])[topic].result(T)
    streams = [ks.stream("tx-out", p) for p in range(PARTITIONS)]
    assert len(primaries_of(cluster_client, streams)) == 3

    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": "tx-cluster", "linger.ms": 5})
    producer.init_transactions(T)
    group = Consumer({"bootstrap.servers": bootstrap, "group.id": "copier", "enable.auto.commit": False})
    _transaction(producer, group, "c1", 5, commit=True)
    _transaction(producer, group, "a", 9, commit=False)
    # An open transaction holds every partition's last stable offset, on every primary.
    producer.begin_transaction()
    for p, value in _every("c2"):
        producer.produce("tx-out", value=value, partition=p)
    producer.flush(T)
    assert _read(bootstrap, "tx-out", "read_committed", PARTITIONS) == _every("c1")
    state = cluster_client.hgetall(ks.transaction("tx-cluster"))
    assert json.loads(state[b"state"])["state"] == "Ongoing"
    producer.commit_transaction(T)

    assert _read(bootstrap, "tx-out", "read_committed", 2 * PARTITIONS) == sorted(_every("c1") + _every("c2"))
    everything = sorted(_every("c1") + _every("a") + _every("c2"))
    assert _read(bootstrap, "tx-out", "read_uncommitted", 3 * PARTITIONS) == everything
    # Each partition's stream holds its records and the three markers, written in its own slot.
    assert [cluster_client.xlen(s) for s in streams] == [6] * PARTITIONS
    assert all(cluster_client.hlen(ks.txn_open("tx-out", p)) == 0 for p in range(PARTITIONS))
    assert all(cluster_client.zcard(ks.aborted("tx-out", p)) == 1 for p in range(PARTITIONS))

    # The offsets of the committed transaction count; those of the aborted one do not.
    tps = [TopicPartition("tx-in", p) for p in range(3)]
    assert [tp.offset for tp in group.committed(tps, timeout=T)] == [5, 5, 5]
    group.close()
    assert cluster_client.hlen(ks.group_txn_offsets("copier")) == 0
    assert key_slot(ks.group_txn_offsets("copier").encode()) == key_slot(ks.group_offsets("copier").encode())

    # The coordinator's state: in the slot of the transactional id, not of any partition or {meta}.
    state = cluster_client.hgetall(ks.transaction("tx-cluster"))
    assert json.loads(state[b"state"])["state"] == "CompleteCommit"
    assert key_slot(ks.transaction("tx-cluster").encode()) == key_slot(b"{tx-cluster}")
    assert b"tx-cluster" in cluster_client.zrange(ks.transaction_ids, 0, -1)
    producer.flush(T)
