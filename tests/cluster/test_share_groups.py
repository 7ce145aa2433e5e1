"""Share groups (KIP-932) on a Redis Cluster: two confluent-kafka ShareConsumers on 12 partitions spread
over every primary; each record delivered once, a released one again with count two, a record that keeps
failing archived into the dead-letter topic; the share partitions' keys in their partitions' slots."""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

import redis
from confluent_kafka import AcknowledgeType, Consumer, Producer
from redis.cluster import key_slot

from schooner.storage.keys import Keyspace
from tests.broker.helpers import share_describe
from tests.broker.share_rig import Delivery, ShareRunner, create_topic, set_group_configs, wait_for
from tests.cluster.helpers import primaries_of

PARTITIONS = 12
PER_PARTITION = 10


def _decide(d: Delivery) -> Any:
    if d.value == b"release-me" and d.delivery_count == 1:
        return AcknowledgeType.RELEASE
    if d.value == b"poison":
        return AcknowledgeType.RELEASE
    return AcknowledgeType.ACCEPT


def _dead_letters(bootstrap: str, topic: str) -> list[Any]:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "dlq-reader", "auto.offset.reset": "earliest"}
    )
    consumer.subscribe([topic])
    letters: list[Any] = []
    deadline = time.monotonic() + 20
    try:
        while not letters and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and not msg.error():
                letters.append(msg)
    finally:
        consumer.close()
    return letters


def test_share_consumers_on_partitions_over_every_primary(
    cluster_broker: Any, cluster_client: redis.RedisCluster, ks: Keyspace
) -> None:
    bootstrap = cluster_broker.bootstrap
    create_topic(bootstrap, "sq", PARTITIONS)
    set_group_configs(bootstrap, "sq-g", share_auto_offset_reset="earliest", share_delivery_count_limit="2",
                      **{"errors.deadletterqueue.topic.name": "dlq.sq",
                         "errors.deadletterqueue.copy.record.enable": "true"})  # fmt: skip
    runners = [ShareRunner(f"c{i}", bootstrap, "sq-g", ["sq"], _decide).start() for i in range(2)]

    def shared() -> bool:
        (described,) = share_describe(cluster_broker.port, "sq-g")
        got = [{p for t in m.assignment.topic_partitions for p in t.partitions} for m in described.members]
        return len(got) == 2 and all(got) and set().union(*got) == set(range(PARTITIONS))

    wait_for(shared, 30, "both members have partitions")
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    values = {(p, i): b"%d-%d" % (p, i) for p in range(PARTITIONS) for i in range(PER_PARTITION)}
    values[(3, 4)] = b"release-me"
    values[(7, 2)] = b"poison"
    for (p, _), value in sorted(values.items()):
        producer.produce("sq", value=value, partition=p)
    assert producer.flush(10) == 0

    def delivered() -> Counter[tuple[int, int]]:
        return Counter((d.partition, d.offset) for r in runners for d in r.deliveries)

    # Every record once, the released one twice and the poison one up to its limit.
    wait_for(lambda: len(delivered()) == len(values) and delivered()[(3, 4)] == 2, 60, "every record")
    wait_for(lambda: delivered()[(7, 2)] == 2, 30, "the poison record's second delivery")
    letters = _dead_letters(bootstrap, "dlq.sq")
    for r in runners:
        r.stop()
    assert all(r.errors == [] for r in runners), [r.errors for r in runners]
    counts = delivered()
    assert set(counts) == set(values)
    assert {k: n for k, n in counts.items() if n > 1} == {(3, 4): 2, (7, 2): 2}
    got = {(d.partition, d.offset): d.value for r in runners for d in r.deliveries}
    assert got == values
    assert [(m.value(), dict(m.headers())["dlq.origin.offset"]) for m in letters] == [(b"poison", b"2")]

    assert len(primaries_of(cluster_client, [ks.stream("sq", p) for p in range(PARTITIONS)])) == 3
    # A share partition's own keys sit in the slot of its stream.
    for p in range(PARTITIONS):
        slot = key_slot(ks.stream("sq", p).encode())
        assert key_slot(ks.share_partition("sq", p, "sq-g").encode()) == slot
        assert key_slot(ks.mq_dead_letters("sq", p).encode()) == slot
    assert cluster_client.hget(ks.share_partition("sq", 7, "sq-g"), "archived") == b"1"
    assert cluster_client.smembers(ks.share_topics("sq-g")) == {b"sq"}
