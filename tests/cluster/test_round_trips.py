"""Round trips on a Redis Cluster: a topic of 12 partitions whose streams sit on all three primaries,
written and read on every partition by confluent-kafka, kafka-python, aiokafka and kcat; ListOffsets,
offsets for times, DeleteRecords; the topic admin APIs; DescribeCluster and Metadata."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import redis
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka import TopicPartition as ATP
from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    NewTopic,
    OffsetSpec,
)
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KTP
from kafka.admin import KafkaAdminClient

from schooner.storage.keys import Keyspace
from tests.clients import consume, kcat
from tests.cluster.helpers import primaries_of

T = 10  # seconds for any one client call
PARTITIONS = 12
CLIENTS = ("confluent", "kafka-python", "aiokafka", "kcat")

Seen = tuple[int, int, bytes | None, bytes | None]  # partition, offset, key, value


def _create(admin: AdminClient, topic: NewTopic) -> None:
    admin.create_topics([topic], request_timeout=T)[topic.topic].result(T)


def _produce(client: str, bootstrap: str, topic: str) -> None:
    """One record to every partition, keyed and valued by the client's name and the partition."""
    records = [(p, f"{client}-k{p}".encode(), f"{client}-v{p}".encode()) for p in range(PARTITIONS)]
    if client == "confluent":
        producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
        for p, key, value in records:
            producer.produce(topic, key=key, value=value, partition=p)
        assert producer.flush(T) == 0
    elif client == "kafka-python":
        kp = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
        futures = [kp.send(topic, key=key, value=value, partition=p) for p, key, value in records]
        assert all(f.get(T).partition == p for f, (p, _, _) in zip(futures, records, strict=True))
        kp.close()
    elif client == "aiokafka":

        async def run() -> None:
            producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
            await producer.start()
            try:
                sent = [
                    await producer.send(topic, key=key, value=value, partition=p) for p, key, value in records
                ]
                await asyncio.gather(*sent)
            finally:
                await producer.stop()

        asyncio.run(run())
    else:
        for p, key, value in records:
            kcat("-b", bootstrap, "-P", "-t", topic, "-p", str(p), "-K:", stdin=key + b":" + value + b"\n")


def _consume(client: str, bootstrap: str, topic: str, count: int) -> list[Seen]:
    """Every partition from its first record, until `count` records arrived."""
    if client == "confluent":
        got = consume(bootstrap, [(topic, p, -2) for p in range(PARTITIONS)], count)
        return [(m.partition(), m.offset(), m.key(), m.value()) for m in got]
    if client == "kafka-python":
        kc = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
        kc.assign([KTP(topic, p) for p in range(PARTITIONS)])
        kc.seek_to_beginning()
        out: list[Seen] = []
        deadline = time.monotonic() + 20
        while len(out) < count and time.monotonic() < deadline:
            for batch in kc.poll(500).values():
                out += [(m.partition, m.offset, m.key, m.value) for m in batch]
        kc.close()
        return out
    if client == "aiokafka":

        async def run() -> list[Seen]:
            ac = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
            await ac.start()
            try:
                ac.assign([ATP(topic, p) for p in range(PARTITIONS)])
                await ac.seek_to_beginning()
                out: list[Seen] = []
                deadline = time.monotonic() + 20
                while len(out) < count and time.monotonic() < deadline:
                    for batch in (await ac.getmany(timeout_ms=500)).values():
                        out += [(m.partition, m.offset, m.key, m.value) for m in batch]
                return out
            finally:
                await ac.stop()

        return asyncio.run(run())
    lines = kcat("-b", bootstrap, "-C", "-t", topic, "-e", "-f", "%p|%o|%k|%s\n").splitlines()
    return [(int(p), int(o), k.encode(), v.encode()) for p, o, k, v in (line.split("|") for line in lines)]


def _offsets(admin: AdminClient, topic: str, spec: OffsetSpec, partitions: int = PARTITIONS) -> list[int]:
    wanted = {TopicPartition(topic, p): spec for p in range(partitions)}
    found = admin.list_offsets(wanted, request_timeout=T)
    return [found[TopicPartition(topic, p)].result(T).offset for p in range(partitions)]


def test_every_client_writes_and_reads_every_partition_on_every_primary(
    cluster_broker: Any, cluster_client: redis.RedisCluster, ks: Keyspace
) -> None:
    bootstrap = cluster_broker.bootstrap
    admin = AdminClient({"bootstrap.servers": bootstrap})
    _create(admin, NewTopic("orders", PARTITIONS, 1))
    assert len(primaries_of(cluster_client, [ks.stream("orders", p) for p in range(PARTITIONS)])) == 3

    for client in CLIENTS:
        _produce(client, bootstrap, "orders")
    # Offsets follow the order the clients wrote in; every key ended in its partition's slot.
    expected = sorted(
        (p, i, f"{c}-k{p}".encode(), f"{c}-v{p}".encode())
        for i, c in enumerate(CLIENTS)
        for p in range(PARTITIONS)
    )
    for p in range(PARTITIONS):
        assert cluster_client.xlen(ks.stream("orders", p)) == len(CLIENTS)
    for client in CLIENTS:
        assert sorted(_consume(client, bootstrap, "orders", len(expected))) == expected, client

    assert _offsets(admin, "orders", OffsetSpec.earliest()) == [0] * PARTITIONS
    assert _offsets(admin, "orders", OffsetSpec.latest()) == [len(CLIENTS)] * PARTITIONS
    # DeleteRecords on every partition: one script per partition, each on its own primary.
    cut = {TopicPartition("orders", p, 1 + p % 3) for p in range(PARTITIONS)}
    for future in admin.delete_records(list(cut), request_timeout=T).values():
        future.result(T)
    assert _offsets(admin, "orders", OffsetSpec.earliest()) == [1 + p % 3 for p in range(PARTITIONS)]
    kept = [s for s in expected if s[1] >= 1 + s[0] % 3]
    assert sorted(_consume("confluent", bootstrap, "orders", len(kept))) == kept


def test_offsets_for_times_on_every_partition(cluster_broker: Any) -> None:
    bootstrap = cluster_broker.bootstrap
    admin = AdminClient({"bootstrap.servers": bootstrap})
    _create(admin, NewTopic("clock", PARTITIONS, 1))
    base = int(time.time() * 1000) - 60_000
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for p in range(PARTITIONS):
        for i in range(3):
            producer.produce("clock", value=b"%d" % i, partition=p, timestamp=base + i * 1000 + p)
    assert producer.flush(T) == 0

    assert _offsets(admin, "clock", OffsetSpec.for_timestamp(base + 500 + PARTITIONS)) == [1] * PARTITIONS
    # Record 1 of partition p is stamped base + 1000 + p: at or after the target only from partition 6 on.
    assert _offsets(admin, "clock", OffsetSpec.for_timestamp(base + 1006)) == [
        2 if p < 6 else 1 for p in range(PARTITIONS)
    ]
    assert _offsets(admin, "clock", OffsetSpec.max_timestamp()) == [2] * PARTITIONS
    kc = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    try:
        found = kc.offsets_for_times({KTP("clock", p): base + 1999 for p in range(PARTITIONS)})
        assert {tp.partition: o.offset for tp, o in found.items()} == {p: 2 for p in range(PARTITIONS)}
    finally:
        kc.close()


def test_topic_admin_create_alter_grow_delete(
    cluster_broker: Any, cluster_client: redis.RedisCluster, ks: Keyspace
) -> None:
    bootstrap = cluster_broker.bootstrap
    admin = AdminClient({"bootstrap.servers": bootstrap})
    _create(admin, NewTopic("admin-t", 3, 1, config={"retention.ms": "3600000"}))
    resource = ConfigResource(
        ConfigResource.Type.TOPIC,
        "admin-t",
        incremental_configs=[
            ConfigEntry("retention.bytes", "1000000", incremental_operation=AlterConfigOpType.SET)
        ],
    )
    admin.incremental_alter_configs([resource], request_timeout=T)[resource].result(T)
    described = ConfigResource(ConfigResource.Type.TOPIC, "admin-t")
    configs = admin.describe_configs([described], request_timeout=T)[described].result(T)
    assert (configs["retention.ms"].value, configs["retention.bytes"].value) == ("3600000", "1000000")

    admin.create_partitions([NewPartitions("admin-t", PARTITIONS)], request_timeout=T)["admin-t"].result(T)
    assert len(admin.list_topics(timeout=T).topics["admin-t"].partitions) == PARTITIONS
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for p in range(PARTITIONS):
        producer.produce("admin-t", value=b"x", partition=p)
    assert producer.flush(T) == 0
    streams = [ks.stream("admin-t", p) for p in range(PARTITIONS)]
    assert all(cluster_client.xlen(s) == 1 for s in streams)
    assert len(primaries_of(cluster_client, streams)) == 3

    admin.delete_topics(["admin-t"], request_timeout=T)["admin-t"].result(T)
    assert "admin-t" not in admin.list_topics(timeout=T).topics
    # Every key of every partition is gone, on whichever primary it was.
    keys = [key for p in range(PARTITIONS) for key in ks.partition_keys("admin-t", p)]
    assert sum(cluster_client.exists(key) for key in keys) == 0


def test_describe_cluster_and_metadata(cluster_broker: Any, broker_factory: Any, redis_cluster: Any) -> None:
    second = broker_factory(redis_url=redis_cluster.url)
    admin = AdminClient({"bootstrap.servers": cluster_broker.bootstrap})
    _create(admin, NewTopic("meta-t", PARTITIONS, 1))
    ids = {cluster_broker.broker_id, second.broker_id}
    description = admin.describe_cluster(request_timeout=T).result(T)
    assert {n.id for n in description.nodes} == ids and description.cluster_id
    kadmin = KafkaAdminClient(bootstrap_servers=second.bootstrap, request_timeout_ms=T * 1000)
    try:
        described = kadmin.describe_cluster()
        assert described["cluster_id"] == description.cluster_id
        assert {b["broker_id"] for b in described["brokers"]} == ids
    finally:
        kadmin.close()
    metadata = admin.list_topics("meta-t", timeout=T)
    partitions = metadata.topics["meta-t"].partitions
    assert sorted(partitions) == list(range(PARTITIONS))
    # Leaders are spread over the live brokers, which both serve every partition.
    assert {p.leader for p in partitions.values()} == ids
