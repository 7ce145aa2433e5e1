"""Kafka clients and the MQ library on the same topics: same records, same partitions for the same keys."""

from __future__ import annotations

from typing import Any

from confluent_kafka import Producer as KafkaProducer
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaProducer as KafkaPythonProducer
from prometheus_client import CollectorRegistry

from schooner.mq import Consumer, ConsumerConfig, Message, OutgoingMessage, Producer, partition_for_key
from schooner.storage.keys import Keyspace
from tests.clients import consume, from_beginning

from .conftest import wait_until

PARTITIONS = 5
KEYS = [b"customer-%d" % i for i in range(120)] + [b"", bytes(range(40))]


def create(bootstrap: str, name: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, PARTITIONS, 1)])[name].result(15)


def test_kafka_producer_to_mq_consumer(broker: Any, redis_server: Any, keyspace: str) -> None:
    create(broker.bootstrap, "from-kafka")
    producer = KafkaProducer({"bootstrap.servers": broker.bootstrap, "partitioner": "murmur2_random",
                              "linger.ms": 5})  # fmt: skip
    placed: dict[bytes, tuple[int, int]] = {}

    def delivered(err: Any, msg: Any) -> None:
        assert err is None, err
        placed[msg.key()] = (msg.partition(), msg.offset())

    for i, key in enumerate(KEYS):
        headers = [("n", b"%d" % i)]
        producer.produce("from-kafka", value=b"v%d" % i, key=key, headers=headers, on_delivery=delivered)
    assert producer.flush(30) == 0
    seen: dict[bytes, Message] = {}
    config = ConsumerConfig(start="earliest", lease_ms=2000, poll_ms=10)
    with Consumer(redis_server.url, "from-kafka", "mq", lambda m: seen.__setitem__(m.key, m),
                  keyspace=Keyspace(keyspace), config=config, registry=CollectorRegistry()):  # fmt: skip
        wait_until(lambda: len(seen) == len(KEYS))
    for i, key in enumerate(KEYS):
        m = seen[key]
        assert (m.partition, m.offset) == placed[key] and m.partition == partition_for_key(key, PARTITIONS)
        assert (m.value, m.headers) == (b"v%d" % i, [("n", b"%d" % i)])


def test_mq_producer_to_kafka_consumer(broker: Any, redis_server: Any, keyspace: str) -> None:
    create(broker.bootstrap, "from-mq")
    producer = Producer(redis_server.url, keyspace=Keyspace(keyspace), registry=CollectorRegistry())
    sent = producer.send_batch(
        "from-mq", [OutgoingMessage(b"v%d" % i, key=k, headers={"n": b"%d" % i}) for i, k in enumerate(KEYS)]
    )
    read = consume(broker.bootstrap, from_beginning("from-mq", PARTITIONS), len(KEYS), timeout=30)
    got = {m.key(): m for m in read}
    assert len(read) == len(got) == len(KEYS)  # every key, once
    for i, (key, s) in enumerate(zip(KEYS, sent, strict=True)):
        msg = got[key]
        assert (msg.partition(), msg.offset()) == (s.partition, s.offset)
        assert (msg.value(), msg.headers()) == (b"v%d" % i, [("n", b"%d" % i)])
    # The partitions are the ones Kafka producers pick: confluent-kafka with murmur2, and kafka-python's
    # DefaultPartitioner.
    expected = {key: s.partition for key, s in zip(KEYS, sent, strict=True)}
    kafka = KafkaProducer({"bootstrap.servers": broker.bootstrap, "partitioner": "murmur2_random"})
    placed: dict[bytes, int] = {}

    def delivered(err: Any, msg: Any) -> None:
        placed[msg.key()] = msg.partition()

    for key in KEYS:
        kafka.produce("from-mq", value=b"again", key=key, on_delivery=delivered)
    assert kafka.flush(30) == 0
    assert placed == expected
    other = KafkaPythonProducer(bootstrap_servers=broker.bootstrap)
    futures = {key: other.send("from-mq", value=b"again", key=key) for key in KEYS}
    other.flush(30)
    assert {key: f.get(10).partition for key, f in futures.items()} == expected
    other.close()
