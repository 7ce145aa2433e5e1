"""Kafka's Java clients (the pinned release's kafka-clients, apache_kafka/) against a Schooner broker: the
idempotent and the transactional producer, the consumer in a classic and a KIP-848 group, the share
consumer (KIP-932) and the admin client, each driven by tests/java/clients/Scenarios.java. What a Java
client reports is checked against what confluent-kafka reads back from the same broker."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

import apache_kafka
from tests.java.topics import T, create, read_all

SOURCE = Path(__file__).parent / "clients" / "Scenarios.java"


def scenario(name: str, bootstrap: str, *args: str) -> Any:
    """One run of a scenario; its JSON answer."""
    classes = apache_kafka.compiled_classes(SOURCE)
    command = apache_kafka.java_command("Scenarios", name, bootstrap, *args, heap="256m", classes=classes)
    done = subprocess.run(command, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, (name, done.stdout[-2000:], done.stderr[-4000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_idempotent_producer_gets_each_record_acknowledged_where_it_is(broker: Any) -> None:
    create(broker.bootstrap, "java-p", 3)
    acked = scenario("produce", broker.bootstrap, "java-p", "300")["acked"]
    assert len(acked) == 300
    stored = [(p, o, v) for p, o, _, v in read_all(broker.bootstrap, "java-p", 3)]
    assert sorted((p, o, v) for v, p, o in acked) == stored
    assert {p for p, _, _ in stored} == {0, 1, 2}  # keys spread over the partitions


def test_transactions_commit_and_abort_as_read_committed_sees_them(broker: Any) -> None:
    create(broker.bootstrap, "java-t", 1)
    scenario("transactions", broker.bootstrap, "java-t", "java-txn")
    committed = [f"c{i}" for i in range(10)] + [f"d{i}" for i in range(3)]
    read = scenario("consume", broker.bootstrap, "java-t", "java-t-g", "classic", "read_committed", "13")
    assert read["values"] == committed
    assert [v for _, _, _, v in read_all(broker.bootstrap, "java-t", 1, "read_committed")] == committed
    everything = [v for _, _, _, v in read_all(broker.bootstrap, "java-t", 1)]
    assert everything == committed[:10] + [f"a{i}" for i in range(5)] + committed[10:]


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_a_group_member_reads_and_commits_everything(broker: Any, protocol: str) -> None:
    topic = f"java-g-{protocol}"
    create(broker.bootstrap, topic, 3)
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(90):
        producer.produce(topic, b"v%d" % i, key=b"k%d" % (i % 9))
    assert producer.flush(T) == 0
    read = scenario("consume", broker.bootstrap, topic, f"{topic}-group", protocol, "read_uncommitted", "90")
    assert sorted(read["values"]) == sorted(f"v{i}" for i in range(90))
    ends: dict[int, int] = {}
    for p, o, _, _ in read_all(broker.bootstrap, topic, 3):
        ends[p] = max(ends.get(p, 0), o + 1)
    assert {int(p): o for p, o in read["committed"].items()} == ends


def test_the_share_consumer_gets_every_record(broker: Any) -> None:
    create(broker.bootstrap, "java-s", 2)
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(40):
        producer.produce("java-s", b"s%d" % i, partition=i % 2)
    assert producer.flush(T) == 0
    read = scenario("share-consume", broker.bootstrap, "java-s", "java-share", "40")
    assert sorted(read["values"]) == sorted(f"s{i}" for i in range(40))


def test_the_admin_client(broker: Any) -> None:
    got = scenario("admin", broker.bootstrap, "java-a")
    assert got["cluster_nodes"] >= 1 and got["listed"] is True
    assert got["partitions"] == 2 and got["partitions_after"] == 4
    assert got["topic_configs"] == {"max.message.bytes": "2000000", "retention.ms": "3600000"}
    assert (got["earliest"], got["latest"]) == (4, 10)
    assert got["group_offset"] == [7, "meta"] and "java-a-g" in got["groups"]
    assert got["listed_after_delete"] is False
