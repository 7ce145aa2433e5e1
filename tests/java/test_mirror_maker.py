"""MirrorMaker 2 (dedicated mode, apache_kafka/connect/pom.xml) between a real Kafka broker and a
Schooner broker: a topic, its records and a consumer group's committed offsets copied from Kafka into
Schooner (checkpoints and the translated offsets MirrorMaker writes into the group), so that the group
carries on on Schooner from where it stopped on Kafka, reading nothing twice and missing nothing; and a
topic copied the other way, from Schooner into Kafka. docs/operations.md's "Moving from Kafka" is this."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

import apache_kafka
from tests.java.topics import T, create, read_all

pytestmark = pytest.mark.application

FIRST, MORE = 300, 100


def mirror_maker(kafka: str, schooner: str, folder: Path) -> subprocess.Popen[bytes]:
    """MirrorMaker 2 copying `orders` and the groups from Kafka to Schooner, and `payments` back."""
    properties = {
        "clusters": "kafka, schooner",
        "kafka.bootstrap.servers": kafka,
        "schooner.bootstrap.servers": schooner,
        "kafka->schooner.enabled": "true",
        "kafka->schooner.topics": "orders",
        "kafka->schooner.groups": "billing",
        "schooner->kafka.enabled": "true",
        "schooner->kafka.topics": "payments",
        "schooner->kafka.groups": "none",
        # Topics keep their names (a move, not an aggregation into prefixed copies).
        "replication.policy.class": "org.apache.kafka.connect.mirror.IdentityReplicationPolicy",
        "sync.group.offsets.enabled": "true",
        "sync.group.offsets.interval.seconds": "1",
        "emit.checkpoints.interval.seconds": "1",
        "refresh.topics.interval.seconds": "2",
        "refresh.groups.interval.seconds": "2",
        "offset.lag.max": "0",  # an offset sync for every record: translations are exact
        "replication.factor": "1",
        **{
            f"{topic}.replication.factor": "1"
            for topic in ("checkpoints.topic", "heartbeats.topic", "offset-syncs.topic")
        },
        **{f"{kind}.storage.replication.factor": "1" for kind in ("config", "offset", "status")},
    }
    config = folder / "mm2.properties"
    config.write_text("".join(f"{k}={v}\n" for k, v in properties.items()))
    with open(folder / "mm2.log", "ab") as log:
        return subprocess.Popen(
            apache_kafka.java_command(
                "org.apache.kafka.connect.mirror.MirrorMaker", str(config), pom=apache_kafka.CONNECT_POM
            ),
            stdout=log,
            stderr=subprocess.STDOUT,
        )


def produce(bootstrap: str, topic: str, values: range) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in values:
        producer.produce(topic, f"{topic}-{i}".encode(), key=f"k{i % 7}".encode())
    assert producer.flush(T) == 0


def consume(bootstrap: str, group: str, topic: str, count: int) -> list[str]:
    """`count` records of the topic in the group, from its committed offsets, committed after."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                         "enable.auto.commit": False})  # fmt: skip
    try:
        consumer.subscribe([topic])
        got: list[str] = []
        deadline = time.monotonic() + T
        while len(got) < count and time.monotonic() < deadline:
            message = consumer.poll(1)
            if message is not None and not message.error():
                got.append(message.value().decode())
        consumer.commit(asynchronous=False)
        time.sleep(1)
        assert consumer.poll(1) is None, "more records than expected"
        return got
    finally:
        consumer.close()


def committed(bootstrap: str, group: str, topic: str, partitions: int) -> list[int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        found = consumer.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=T)
        return [tp.offset for tp in found]
    finally:
        consumer.close()


def wait_for(
    condition: Any, what: str, process: subprocess.Popen[bytes], log: Path, timeout: float = 240
) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert process.poll() is None, log.read_text()[-4000:]
        assert time.monotonic() < deadline, f"{what} within {timeout} s:\n" + log.read_text()[-4000:]
        time.sleep(1)


def test_a_consumer_group_moves_from_kafka_to_schooner(
    broker: Any, reference_kafka: Any, tmp_path: Path
) -> None:
    kafka, schooner = reference_kafka.bootstrap, broker.bootstrap
    create(kafka, "orders", 3)
    create(schooner, "payments", 2)
    produce(kafka, "orders", range(FIRST))
    produce(schooner, "payments", range(50))
    on_kafka = consume(kafka, "billing", "orders", FIRST)  # the group, on Kafka, reads everything so far
    assert sorted(on_kafka) == sorted(f"orders-{i}" for i in range(FIRST))
    ends = committed(kafka, "billing", "orders", 3)

    process = mirror_maker(kafka, schooner, tmp_path)
    log = tmp_path / "mm2.log"
    try:
        wait_for(
            lambda: committed(schooner, "billing", "orders", 3) == ends,
            "billing's offsets on Schooner",
            process,
            log,
        )
        # Every record, at the offset it has on Kafka (offsets on Schooner count records, as Kafka's do).
        assert read_all(schooner, "orders", 3) == read_all(kafka, "orders", 3)
        produce(kafka, "orders", range(FIRST, FIRST + MORE))  # producers still write to Kafka meanwhile
        wait_for(
            lambda: len(read_all(schooner, "orders", 3)) == FIRST + MORE,
            "the new records on Schooner",
            process,
            log,
        )
        wait_for(lambda: len(read_all(kafka, "payments", 2)) == 50, "payments on Kafka", process, log)
    finally:
        process.terminate()
        process.wait(60)

    # The group carries on on Schooner: the records written since, each once.
    on_schooner = consume(schooner, "billing", "orders", MORE)
    assert sorted(on_schooner) == sorted(f"orders-{i}" for i in range(FIRST, FIRST + MORE))
    back = [(p, o, k, v) for p, o, k, v in read_all(kafka, "payments", 2)]
    assert back == read_all(schooner, "payments", 2), "Schooner's topic on Kafka, record for record"
