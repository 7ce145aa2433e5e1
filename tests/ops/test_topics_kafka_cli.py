"""`schooner topics list|create|describe|alter|delete` against a real broker, checked with
confluent-kafka's AdminClient; and each bad input failing with one line on stderr."""

from __future__ import annotations

import json
from typing import Any

from confluent_kafka.admin import AdminClient, ConfigResource

from tests.clients import Rec, confluent_produce
from tests.ops.cli_rig import QUICK, refused, schooner, text, unreachable


def _configs(bootstrap: str, topic: str) -> dict[str, Any]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    (future,) = admin.describe_configs([ConfigResource("topic", topic)]).values()
    return {name: entry for name, entry in future.result(10).items()}


def _partitions(bootstrap: str, topic: str) -> int:
    meta = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10)
    return len(meta.topics[topic].partitions)


def test_create_list_describe(broker: Any) -> None:
    b = ("-b", broker.bootstrap)
    done = schooner("topics", "create", "orders", "--partitions", "3", "--config", "retention.ms=60000",
                    "-c", "cleanup.policy=compact", *b)  # fmt: skip
    assert done.returncode == 0 and text(done.stdout).strip() == "created orders", text(done.stderr)
    assert _partitions(broker.bootstrap, "orders") == 3
    configs = _configs(broker.bootstrap, "orders")
    assert configs["retention.ms"].value == "60000" and not configs["retention.ms"].is_default
    assert configs["cleanup.policy"].value == "compact"

    listed = json.loads(schooner("topics", "list", "-o", "json", *b).stdout)
    assert {"topic": "orders", "partitions": 3, "replication_factor": 1} in listed
    table = text(schooner("topics", "list", *b).stdout)
    assert any(line.split() == ["orders", "3", "1"] for line in table.splitlines()), table

    confluent_produce(broker.bootstrap, "orders", [Rec(b"k", b"v%d" % i) for i in range(4)], partition=1)
    described = json.loads(schooner("topics", "describe", "orders", "-o", "json", *b).stdout)
    by_partition = {p["partition"]: p for p in described["partitions"]}
    assert sorted(by_partition) == [0, 1, 2]
    assert (by_partition[1]["earliest"], by_partition[1]["latest"], by_partition[1]["records"]) == (0, 4, 4)
    assert (by_partition[0]["earliest"], by_partition[0]["latest"]) == (0, 0)
    assert by_partition[1]["leader"] == broker.broker_id
    # Only the configs set on the topic, unless --all-configs.
    assert {c["name"]: c["value"] for c in described["configs"]} == {
        "cleanup.policy": "compact", "retention.ms": "60000",
    }  # fmt: skip
    assert {c["source"] for c in described["configs"]} == {"DYNAMIC_TOPIC_CONFIG"}
    every = json.loads(schooner("topics", "describe", "orders", "--all-configs", "-o", "json", *b).stdout)
    names = {c["name"] for c in every["configs"]}
    assert {"retention.ms", "cleanup.policy", "max.message.bytes", "segment.bytes"} <= names
    table = text(schooner("topics", "describe", "orders", *b).stdout)
    assert "retention.ms" in table and "max.message.bytes" not in table
    assert "table" not in described and "table:" not in table  # the cold-tier table: tiered topics only
    assert any(line.split()[:6] == ["1", str(broker.broker_id), str(broker.broker_id), "0", "4", "4"]
               for line in table.splitlines()), table  # fmt: skip


def test_alter_sets_deletes_and_adds_partitions(broker: Any) -> None:
    b = ("-b", broker.bootstrap)
    schooner(
        "topics", "create", "tuned", "-p", "1", "-c", "retention.ms=60000", "-c", "cleanup.policy=compact", *b
    )
    alter = ("topics", "alter", "tuned", "--set", "retention.ms=1000", "--set", "max.message.bytes=2048")
    done = schooner(*alter, "--delete", "cleanup.policy", "--partitions", "4", *b)
    assert done.returncode == 0, text(done.stderr)
    assert "retention.ms=1000" in text(done.stdout) and "4 partitions" in text(done.stdout)
    configs = _configs(broker.bootstrap, "tuned")
    assert configs["retention.ms"].value == "1000"
    assert configs["max.message.bytes"].value == "2048"
    assert configs["cleanup.policy"].is_default  # back to the default, the others untouched
    assert _partitions(broker.bootstrap, "tuned") == 4

    changed = json.loads(
        schooner("topics", "alter", "tuned", "--set", "retention.ms=5000", "-o", "json", *b).stdout
    )
    assert changed == {"topic": "tuned", "changed": ["retention.ms=5000"]}
    assert _configs(broker.bootstrap, "tuned")["max.message.bytes"].value == "2048"  # incremental


def test_create_and_delete_idempotently(broker: Any) -> None:
    b = ("-b", broker.bootstrap)
    assert schooner("topics", "create", "twice", *b).returncode == 0
    refused(schooner("topics", "create", "twice", *b), "twice", "already exists")
    again = schooner("topics", "create", "twice", "--if-not-exists", "-o", "json", *b)
    assert again.returncode == 0 and json.loads(again.stdout) == {"topic": "twice", "created": False}

    done = schooner("topics", "delete", "twice", *b)
    assert done.returncode == 0 and text(done.stdout).strip() == "deleted twice"
    assert "twice" not in AdminClient({"bootstrap.servers": broker.bootstrap}).list_topics(timeout=10).topics
    refused(schooner("topics", "delete", "twice", *b), "no topic 'twice'")
    gone = schooner("topics", "delete", "twice", "--if-exists", "-o", "json", *b)
    assert gone.returncode == 0 and json.loads(gone.stdout) == {"topic": "twice", "deleted": False}


def test_bad_input_is_one_line(broker: Any) -> None:
    b = ("-b", broker.bootstrap)
    schooner("topics", "create", "small", "-p", "2", *b)
    refused(schooner("topics", "describe", "nosuch", *b), "no topic 'nosuch'")
    refused(schooner("topics", "alter", "nosuch", "--set", "retention.ms=1", *b), "no topic 'nosuch'")
    refused(
        schooner("topics", "create", "bad", "-c", "retention.ms=soon", *b), "INVALID_CONFIG", "retention.ms"
    )
    refused(
        schooner("topics", "create", "bad", "-c", "no.such.config=1", *b), "INVALID_CONFIG", "no.such.config"
    )
    refused(schooner("topics", "create", "bad", "-c", "retention.ms", *b), "--config", "not key=value")
    refused(schooner("topics", "alter", "small", "--set", "retention.ms=soon", *b), "INVALID_CONFIG")
    refused(schooner("topics", "alter", "small", "--partitions", "1", *b), "INVALID_PARTITIONS")
    refused(schooner("topics", "alter", "small", *b), "nothing to change")
    refused(schooner("topics", "list", "-X", "linger.ms", *b), "-X", "not key=value")
    refused(
        schooner("topics", "list", "-X", "no.such.property=1", *b), "bad client setting", "no.such.property"
    )
    assert "bad" not in AdminClient({"bootstrap.servers": broker.bootstrap}).list_topics(timeout=10).topics


def test_unreachable_broker_is_one_line() -> None:
    address = unreachable()
    refused(schooner("topics", "list", "-b", address, *QUICK), f"no broker answered at {address}")
