"""Consumer groups on a Redis Cluster: a classic group of two confluent-kafka consumers through a
rebalance and a broker restart, and a KIP-848 group; the group's keys share its own slot while the
partitions it commits for sit in slots on every primary."""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

import redis
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from redis.cluster import key_slot

from schooner.storage.keys import Keyspace
from tests.broker.helpers import committed, fill, produce_each, wait
from tests.cluster.helpers import primaries_of
from tests.group_clients import ConsumerProtocolMember, GroupMember

PARTITIONS = 12
PER_PARTITION = 20
FAST_848 = {"consumer_group_heartbeat_ms": 300, "consumer_group_session_ms": 8000}


def _group_keys_share_a_slot(ks: Keyspace, group: str) -> None:
    slots = {
        key_slot(k.encode()) for k in (ks.group(group), ks.group_offsets(group), ks.group_configs(group))
    }
    assert len(slots) == 1, slots


def _produce_more(bootstrap: str, topic: str) -> set[tuple[str, int, int]]:
    """Another PER_PARTITION records on every partition; where they went. Idempotent, as fill(...,
    idempotent=True) below: the checks count each record once, and a plain producer's retry (after an
    append answered "possibly appended" on a loaded machine) may append a batch twice, as in Kafka."""
    return produce_each(
        bootstrap, topic, PARTITIONS, PER_PARTITION, idempotent=True, tag=b"more-", timeout=10
    )


def _exactly_once(members: list[Any], produced: set[tuple[str, int, int]]) -> None:
    wait(lambda: len({c for m in members for c in m.consumed}) >= len(produced), 60, "everything is consumed")
    for m in members:
        m.stop_event.set()
        m.join(30)
    assert all(m.error is None for m in members), [m.error for m in members]
    counts = Counter(c for m in members for c in m.consumed)
    assert set(counts) == produced
    assert max(counts.values()) == 1, [c for c, n in counts.items() if n > 1][:5]


def test_classic_group_rebalances_and_its_commits_survive_a_broker_restart(
    broker_factory: Any, redis_cluster: Any, cluster_client: redis.RedisCluster, ks: Keyspace
) -> None:
    broker = broker_factory(redis_url=redis_cluster.url)
    produced = fill(broker.bootstrap, "classic12", PARTITIONS, PER_PARTITION, idempotent=True)
    conf = {"heartbeat.interval.ms": 300}
    first = GroupMember("confluent", broker.bootstrap, "classic", "classic12", pace=0.05, **conf)
    first.start()
    wait(lambda: len(first.consumed) > 0, 30, "the first member consumes")
    second = GroupMember("confluent", broker.bootstrap, "classic", "classic12", pace=0.05, **conf)
    second.start()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})

    def two_members() -> bool:
        group = admin.describe_consumer_groups(["classic"])["classic"].result(10)
        return len(group.members) == 2 and all(m.assignment.topic_partitions for m in group.members)

    wait(two_members, 30, "a rebalance gives the second member partitions")
    produced |= _produce_more(broker.bootstrap, "classic12")
    _exactly_once([first, second], produced)
    assert first.consumed and second.consumed

    offsets = committed(cluster_client, ks, "classic")
    assert offsets == {f"classic12:{p}": 2 * PER_PARTITION for p in range(PARTITIONS)}
    _group_keys_share_a_slot(ks, "classic")
    assert len(primaries_of(cluster_client, [ks.stream("classic12", p) for p in range(PARTITIONS)])) == 3

    broker.stop()
    again = broker_factory(redis_url=redis_cluster.url)
    producer = Producer({"bootstrap.servers": again.bootstrap, "linger.ms": 5})
    for p in range(PARTITIONS):
        producer.produce("classic12", value=b"after", partition=p)
    assert producer.flush(10) == 0
    c = Consumer({"bootstrap.servers": again.bootstrap, "group.id": "classic", "enable.auto.commit": False,
                  "auto.offset.reset": "earliest"})  # fmt: skip
    try:
        tps = [TopicPartition("classic12", p) for p in range(PARTITIONS)]
        assert [tp.offset for tp in c.committed(tps, timeout=10)] == [2 * PER_PARTITION] * PARTITIONS
        c.subscribe(["classic12"])
        got: list[Any] = []
        deadline = time.monotonic() + 30
        while len(got) < PARTITIONS and time.monotonic() < deadline:
            got += [m for m in c.consume(PARTITIONS, 0.5) if not m.error()]
        assert sorted((m.partition(), m.offset(), m.value()) for m in got) == [
            (p, 2 * PER_PARTITION, b"after") for p in range(PARTITIONS)
        ]
    finally:
        c.close()


def test_consumer_protocol_group_on_a_cluster(
    broker_factory: Any, redis_cluster: Any, cluster_client: redis.RedisCluster, ks: Keyspace
) -> None:
    broker = broker_factory(redis_url=redis_cluster.url, **FAST_848)
    produced = fill(broker.bootstrap, "kip848", PARTITIONS, PER_PARTITION, idempotent=True)
    members = [ConsumerProtocolMember(broker.bootstrap, "next-gen", "kip848", pace=0.05) for _ in range(2)]
    members[0].start()
    wait(lambda: len(members[0].consumed) > 0, 30, "the first member consumes")
    members[1].start()

    def split() -> bool:
        now = [m.assignments[-1] for m in members if m.assignments]
        return len(now) == 2 and all(now) and not now[0] & now[1] and len(now[0] | now[1]) == PARTITIONS

    wait(split, 30, "the two members split the partitions")
    produced |= _produce_more(broker.bootstrap, "kip848")
    _exactly_once(members, produced)
    assert members[0].consumed and members[1].consumed
    assert committed(cluster_client, ks, "next-gen") == {
        f"kip848:{p}": 2 * PER_PARTITION for p in range(PARTITIONS)
    }
    _group_keys_share_a_slot(ks, "next-gen")


def test_group_ids_that_would_break_a_hash_tag(
    cluster_broker: Any, cluster_client: redis.RedisCluster
) -> None:
    """Kafka allows any group id; one that starts with "}" would leave its keys without a hash tag."""
    fill(cluster_broker.bootstrap, "odd", PARTITIONS, 1)
    for group in ("}odd", "~odd", "{odd}", "a}b"):
        c = Consumer(
            {"bootstrap.servers": cluster_broker.bootstrap, "group.id": group, "enable.auto.commit": False}
        )
        try:
            c.commit(offsets=[TopicPartition("odd", p, 1) for p in range(PARTITIONS)], asynchronous=False)
            tps = [TopicPartition("odd", p) for p in range(PARTITIONS)]
            assert [tp.offset for tp in c.committed(tps, timeout=10)] == [1] * PARTITIONS, group
        finally:
            c.close()
