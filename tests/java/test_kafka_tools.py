"""Kafka's own command-line tools (the pinned release's, apache_kafka/) against a Schooner broker, as users
run them: each run's output is read as a user reads it, and what it did is checked through another client."""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Producer, ShareConsumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

import apache_kafka

T = 60


def tool(name: str, bootstrap: str, *args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
    done = apache_kafka.run_tool(name, "--bootstrap-server", bootstrap, *args, timeout=180)
    if ok:
        assert done.returncode == 0, (name, args, done.stdout[-2000:], done.stderr[-2000:])
    return done


def offsets(bootstrap: str, topic: str, *args: str) -> dict[int, int]:
    """kafka-get-offsets' answer: partition -> offset."""
    out = tool("kafka-get-offsets", bootstrap, "--topic", topic, *args).stdout
    found = re.findall(rf"^{re.escape(topic)}:(\d+):(-?\d+)$", out, re.M)
    return {int(p): int(o) for p, o in found}


def test_kafka_topics_creates_describes_alters_and_deletes(broker: Any) -> None:
    b = broker.bootstrap
    created = tool("kafka-topics", b, "--create", "--topic", "tools-t", "--partitions", "2", "--config",
                   "retention.ms=600000")  # fmt: skip
    assert "Created topic tools-t." in created.stdout
    listed = tool("kafka-topics", b, "--list").stdout.split()
    assert "tools-t" in listed
    described = tool("kafka-topics", b, "--describe", "--topic", "tools-t").stdout
    assert "PartitionCount: 2" in described and "retention.ms=600000" in described
    assert len(re.findall(r"Partition: \d+\s+Leader: \d+", described)) == 2
    tool("kafka-topics", b, "--alter", "--topic", "tools-t", "--partitions", "5")
    assert "PartitionCount: 5" in tool("kafka-topics", b, "--describe", "--topic", "tools-t").stdout
    # As Kafka: a topic that exists already, and fewer partitions than it has, are refused with a reason.
    again = tool("kafka-topics", b, "--create", "--topic", "tools-t", ok=False)
    assert again.returncode != 0 and "already exists" in again.stdout + again.stderr
    fewer = tool("kafka-topics", b, "--alter", "--topic", "tools-t", "--partitions", "3", ok=False)
    assert fewer.returncode != 0 and "InvalidPartitionsException" in fewer.stdout + fewer.stderr
    tool("kafka-topics", b, "--delete", "--topic", "tools-t")
    metadata = AdminClient({"bootstrap.servers": b}).list_topics(timeout=T)
    assert "tools-t" not in metadata.topics


def test_kafka_configs_sets_describes_and_deletes_topic_configs(broker: Any) -> None:
    b = broker.bootstrap
    tool("kafka-topics", b, "--create", "--topic", "tools-c", "--partitions", "1")
    tool("kafka-configs", b, "--entity-type", "topics", "--entity-name", "tools-c", "--alter",
         "--add-config", "retention.ms=123456,cleanup.policy=compact")  # fmt: skip
    described = tool("kafka-configs", b, "--entity-type", "topics", "--entity-name", "tools-c",
                     "--describe").stdout  # fmt: skip
    assert "retention.ms=123456" in described and "cleanup.policy=compact" in described
    assert "DYNAMIC_TOPIC_CONFIG:retention.ms=123456" in described
    tool("kafka-configs", b, "--entity-type", "topics", "--entity-name", "tools-c", "--alter",
         "--delete-config", "retention.ms")  # fmt: skip
    described = tool("kafka-configs", b, "--entity-type", "topics", "--entity-name", "tools-c",
                     "--describe").stdout  # fmt: skip
    assert "retention.ms" not in described and "cleanup.policy=compact" in described
    bad = tool("kafka-configs", b, "--entity-type", "topics", "--entity-name", "tools-c", "--alter",
               "--add-config", "retention.ms=soon", ok=False)  # fmt: skip
    assert bad.returncode != 0 and "InvalidConfigurationException" in bad.stdout + bad.stderr
    # The broker's configs, all of them with their sources, as `--all` lists them.
    every = tool("kafka-configs", b, "--entity-type", "brokers", "--entity-name", str(broker.broker_id),
                 "--describe", "--all").stdout  # fmt: skip
    assert re.search(r"log\.retention\.ms=\S+ sensitive=false synonyms=\{", every)


def test_verifiable_producer_and_consumer_and_the_group_tool(broker: Any) -> None:
    b = broker.bootstrap
    tool("kafka-topics", b, "--create", "--topic", "tools-v", "--partitions", "3")
    produced = tool("kafka-verifiable-producer", b, "--topic", "tools-v", "--max-messages", "300", "--acks",
                    "-1", "--repeating-keys", "30")  # fmt: skip
    events = [json.loads(line) for line in produced.stdout.splitlines() if line.startswith("{")]
    assert [e for e in events if e["name"] == "tool_data"][0]["acked"] == 300
    acked = [e for e in events if e["name"] == "producer_send_success"]
    assert len(acked) == 300
    ends = offsets(b, "tools-v")
    assert sum(ends.values()) == 300 and set(ends) == {0, 1, 2}
    for e in acked:  # each acknowledged offset is below its partition's end
        assert e["offset"] < ends[e["partition"]]

    consumed = tool("kafka-verifiable-consumer", b, "--topic", "tools-v", "--group-id", "tools-g",
                    "--max-messages", "300", "--reset-policy", "earliest")  # fmt: skip
    events = [json.loads(line) for line in consumed.stdout.splitlines() if line.startswith("{")]
    assert sum(e["count"] for e in events if e["name"] == "records_consumed") == 300
    commits = [e for e in events if e["name"] == "offsets_committed"]
    assert commits and all(c["success"] for c in commits)

    described = tool("kafka-consumer-groups", b, "--describe", "--group", "tools-g").stdout
    rows = re.findall(r"^tools-g\s+tools-v\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)", described, re.M)
    # Committed where records were read (the tool commits what it consumed), as on Kafka.
    assert {int(p): (int(c), int(e), int(lag)) for p, c, e, lag in rows} == {
        p: (end, end, 0) for p, end in ends.items() if end
    }
    assert "tools-g" in tool("kafka-consumer-groups", b, "--list").stdout.split()

    # Offsets reset while the group is empty, as a user rewinds a consumer: what the tool plans, then does.
    planned = tool("kafka-consumer-groups", b, "--group", "tools-g", "--reset-offsets", "--to-earliest",
                   "--topic", "tools-v", "--dry-run").stdout  # fmt: skip
    assert len(re.findall(r"^tools-g\s+tools-v\s+\d+\s+0\s*$", planned, re.M)) == 3
    unchanged = {p: e if e else -1001 for p, e in ends.items()}  # -1001: nothing committed
    assert _committed(b, "tools-g", "tools-v", 3) == unchanged
    tool("kafka-consumer-groups", b, "--group", "tools-g", "--reset-offsets", "--to-earliest", "--topic",
         "tools-v", "--execute")  # fmt: skip
    assert _committed(b, "tools-g", "tools-v", 3) == {0: 0, 1: 0, 2: 0}
    tool("kafka-consumer-groups", b, "--group", "tools-g", "--reset-offsets", "--shift-by", "7", "--topic",
         "tools-v:1", "--execute")  # fmt: skip
    tool("kafka-consumer-groups", b, "--group", "tools-g", "--reset-offsets", "--to-offset", "5", "--topic",
         "tools-v:2", "--execute")  # fmt: skip
    assert _committed(b, "tools-g", "tools-v", 3) == {0: 0, 1: min(7, ends[1]), 2: min(5, ends[2])}
    tool("kafka-consumer-groups", b, "--group", "tools-g", "--reset-offsets", "--to-latest", "--all-topics",
         "--execute")  # fmt: skip
    assert _committed(b, "tools-g", "tools-v", 3) == ends
    tool("kafka-consumer-groups", b, "--delete", "--group", "tools-g")
    assert "tools-g" not in tool("kafka-consumer-groups", b, "--list").stdout.split()


def _committed(bootstrap: str, group: str, topic: str, partitions: int) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        found = consumer.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=T)
        return {tp.partition: tp.offset for tp in found}
    finally:
        consumer.close()


def test_delete_records_moves_the_log_start(broker: Any, tmp_path: Path) -> None:
    b = broker.bootstrap
    tool("kafka-topics", b, "--create", "--topic", "tools-d", "--partitions", "1")
    producer = Producer({"bootstrap.servers": b})
    for i in range(20):
        producer.produce("tools-d", b"%d" % i, partition=0)
    assert producer.flush(T) == 0
    plan = tmp_path / "delete.json"
    where = {"topic": "tools-d", "partition": 0, "offset": 12}
    plan.write_text(json.dumps({"version": 1, "partitions": [where]}))
    out = tool("kafka-delete-records", b, "--offset-json-file", str(plan)).stdout
    assert re.search(r"partition: tools-d-0\s+low_watermark: 12", out)
    assert offsets(b, "tools-d", "--time", "earliest") == {0: 12}
    assert offsets(b, "tools-d", "--time", "latest") == {0: 20}


def test_acls_are_added_listed_and_removed(broker_factory: Any) -> None:
    b = broker_factory(authorizer=True, allow_everyone_if_no_acl_found=True).bootstrap
    tool("kafka-acls", b, "--add", "--allow-principal", "User:alice", "--operation", "Read", "--topic",
         "tools-a", "--group", "tools-ag")  # fmt: skip
    listed = tool("kafka-acls", b, "--list", "--topic", "tools-a").stdout
    assert "principal=User:alice" in listed and "operation=READ" in listed
    assert "permissionType=ALLOW" in listed
    assert "principal=User:alice" in tool("kafka-acls", b, "--list", "--group", "tools-ag").stdout
    tool("kafka-acls", b, "--remove", "--force", "--allow-principal", "User:alice", "--operation", "Read",
         "--topic", "tools-a")  # fmt: skip
    assert "User:alice" not in tool("kafka-acls", b, "--list", "--topic", "tools-a").stdout
    assert "User:alice" in tool("kafka-acls", b, "--list", "--group", "tools-ag").stdout


def test_kafka_transactions_lists_and_describes_an_open_transaction(broker: Any) -> None:
    b = broker.bootstrap
    tool("kafka-topics", b, "--create", "--topic", "tools-x", "--partitions", "1")
    producer = Producer({"bootstrap.servers": b, "transactional.id": "tools-txn"})
    producer.init_transactions(T)
    producer.begin_transaction()
    producer.produce("tools-x", b"in a transaction", partition=0)
    assert producer.flush(T) == 0
    try:
        listed = tool("kafka-transactions", b, "list").stdout
        assert re.search(r"^tools-txn\s+\d+\s+\d+\s+Ongoing\s*$", listed, re.M), listed
        described = tool("kafka-transactions", b, "describe", "--transactional-id", "tools-txn").stdout
        assert "Ongoing" in described and "tools-x-0" in described
        producers = tool("kafka-transactions", b, "describe-producers", "--topic", "tools-x", "--partition",
                         "0").stdout  # fmt: skip
        # Epoch 0, no marker yet (so no coordinator epoch, -1, as Kafka), sequence 0, the transaction from 0.
        assert re.search(r"^\d+\s+0\s+-1\s+0\s+\d+\s+0\s*$", producers, re.M), producers
    finally:
        producer.commit_transaction(T)
    listed = tool("kafka-transactions", b, "list").stdout
    assert re.search(r"^tools-txn\s+\d+\s+\d+\s+CompleteCommit\s*$", listed, re.M), listed


def _share_offsets(bootstrap: str, group: str) -> dict[int, tuple[int, int]]:
    """kafka-share-groups --describe: partition -> (start offset, lag)."""
    out = tool("kafka-share-groups", bootstrap, "--describe", "--group", group).stdout
    rows = re.findall(rf"^{group}\s+\S+\s+(\d+)\s+(-?\d+)\s+(-?\d+)\s*$", out, re.M)
    return {int(p): (int(start), int(lag)) for p, start, lag in rows}


def test_kafka_share_groups_on_a_live_share_group(broker: Any) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("tools-s", 2, 1)])["tools-s"].result(T)
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(20):
        producer.produce("tools-s", b"s%d" % i, partition=i % 2)
    assert producer.flush(T) == 0
    consumer = ShareConsumer({"bootstrap.servers": broker.bootstrap, "group.id": "tools-sg"})
    try:
        consumer.subscribe(["tools-s"])
        deadline = time.monotonic() + T
        while _share_offsets(broker.bootstrap, "tools-sg") != {0: (10, 0), 1: (10, 0)}:
            assert time.monotonic() < deadline, "the share consumer did not read and acknowledge everything"
            consumer.poll(1.0)  # what it is given it accepts with the next fetch
        assert "tools-sg" in tool("kafka-share-groups", broker.bootstrap, "--list").stdout.split()
        members = tool(
            "kafka-share-groups", broker.bootstrap, "--describe", "--group", "tools-sg", "--members"
        )
        (member,) = [line.split() for line in members.stdout.splitlines() if line.startswith("tools-sg ")]
        assert member[-2:] == ["2", "tools-s:0,1"], "one member, both partitions"
        state = tool("kafka-share-groups", broker.bootstrap, "--describe", "--group", "tools-sg", "--state")
        assert state.stdout.split()[-2:] == ["Stable", "1"]
        busy = tool("kafka-share-groups", broker.bootstrap, "--delete", "--group", "tools-sg", ok=False)
        assert "tools-sg" in tool("kafka-share-groups", broker.bootstrap, "--list").stdout.split(), (
            busy.stdout
        )
    finally:
        consumer.close()
    reset = tool("kafka-share-groups", broker.bootstrap, "--reset-offsets", "--group", "tools-sg",
                 "--topic", "tools-s", "--to-earliest", "--execute")  # fmt: skip
    assert sorted(re.findall(r"^tools-sg\s+tools-s\s+(\d)\s+(\d+)\s*$", reset.stdout, re.M)) == [
        ("0", "0"),
        ("1", "0"),
    ]
    assert _share_offsets(broker.bootstrap, "tools-sg") == {0: (0, 10), 1: (0, 10)}, (
        "everything to read again"
    )
    tool(
        "kafka-share-groups",
        broker.bootstrap,
        "--delete-offsets",
        "--group",
        "tools-sg",
        "--topic",
        "tools-s",
    )
    assert _share_offsets(broker.bootstrap, "tools-sg") == {}
    deleted = tool("kafka-share-groups", broker.bootstrap, "--delete", "--group", "tools-sg")
    assert "successful" in deleted.stdout
    assert "tools-sg" not in tool("kafka-share-groups", broker.bootstrap, "--list").stdout.split()


def test_the_console_producer_and_consumer(broker: Any) -> None:
    lines = "".join(f"key{i}\tvalue {i}\n" for i in range(25))
    produced = subprocess.run(
        apache_kafka.java_command(
            apache_kafka.TOOLS["kafka-console-producer"], "--bootstrap-server", broker.bootstrap, "--topic",
            "tools-console", "--property", "parse.key=true", heap="256m",
        ),
        input=lines, capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert produced.returncode == 0, produced.stderr[-2000:]
    consumed = tool("kafka-console-consumer", broker.bootstrap, "--topic", "tools-console",
                    "--from-beginning", "--max-messages", "25", "--formatter-property", "print.key=true",
                    "--group", "tools-console-g")  # fmt: skip
    assert consumed.stdout.splitlines() == lines.splitlines()
    groups = tool(
        "kafka-consumer-groups", broker.bootstrap, "--describe", "--group", "tools-console-g"
    ).stdout
    assert re.search(r"^tools-console-g\s+tools-console\s+0\s+25\s+25\s+0\b", groups, re.M), groups
