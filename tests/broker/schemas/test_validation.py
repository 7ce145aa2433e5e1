"""Records checked against the schema registry on produce (confluent.*.schema.validation): a record without
the wire format's schema id, or with an id that is no version of its subject, is refused with INVALID_RECORD,
named in record_errors, and nothing of its batch is stored."""

from __future__ import annotations

import json
import struct
import time
from typing import Any

import httpx
import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from confluent_kafka.schema_registry import SchemaRegistryClient, record_subject_name_strategy
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from kio.schema.errors import ErrorCode

from schooner.broker.schemas.validation import KEPT_SECONDS
from schooner.storage.redis.embedded import free_port
from tests import wire
from tests.clients import Rec, confluent_consume, confluent_produce

USER = json.dumps({"type": "record", "name": "User", "namespace": "acme",
                   "fields": [{"name": "name", "type": "string"}]})  # fmt: skip
ITEM = json.dumps({"type": "record", "name": "Item", "namespace": "acme",
                   "fields": [{"name": "sku", "type": "string"}]})  # fmt: skip


def framed(schema_id: int, payload: bytes = b"\x02a") -> bytes:
    return b"\x00" + struct.pack(">I", schema_id) + payload


def start(broker_factory: Any) -> tuple[Any, str]:
    port = free_port()
    broker = broker_factory(schema_registry_port=port)
    return broker, f"http://127.0.0.1:{port}"


def register(url: str, subject: str, schema: str) -> int:
    answer = httpx.post(f"{url}/subjects/{subject}/versions", json={"schema": schema}, timeout=30)
    assert answer.status_code == 200, answer.text
    return int(answer.json()["id"])


def end_offset(broker: Any, topic: str) -> int:
    return len(confluent_consume(broker.bootstrap, topic, 10_000, timeout=2))


def test_values_need_an_id_of_their_subject(broker_factory: Any) -> None:
    broker, url = start(broker_factory)
    wire.create_topics(broker.port, "users", configs={"confluent.value.schema.validation": "true"})
    user = register(url, "users-value", USER)
    item = register(url, "items-value", ITEM)
    # A batch with one good record and two bad ones: refused whole, the bad ones named.
    batch = wire.record_batch([framed(user), b"plain bytes", framed(item)])
    response = wire.call(broker.port, wire.produce_request("users", batch))
    (partition,) = response.responses[0].partition_responses
    assert partition.error_code == ErrorCode.invalid_record
    assert {e.batch_index for e in partition.record_errors} == {1, 2}
    messages = {e.batch_index: e.batch_index_error_message for e in partition.record_errors}
    assert "no schema id" in messages[1] and "users-value" in messages[2]
    assert partition.error_message and "2 record(s)" in partition.error_message
    assert end_offset(broker, "users") == 0
    # The good record alone is stored.
    response = wire.call(broker.port, wire.produce_request("users", [framed(user)]))
    assert response.responses[0].partition_responses[0].error_code == ErrorCode.none
    assert end_offset(broker, "users") == 1


def test_a_schema_registered_just_now_is_accepted_at_once(broker_factory: Any) -> None:
    broker, url = start(broker_factory)
    wire.create_topics(broker.port, "users", configs={"confluent.value.schema.validation": "true"})
    first = register(url, "users-value", USER)
    assert (
        wire.call(broker.port, wire.produce_request("users", [framed(first)]))
        .responses[0]
        .partition_responses[0]
        .error_code
        == ErrorCode.none
    )
    newer = json.dumps({"type": "record", "name": "User", "namespace": "acme", "fields": [
        {"name": "name", "type": "string"}, {"name": "n", "type": "int", "default": 0}]})  # fmt: skip
    second = register(url, "users-value", newer)
    response = wire.call(broker.port, wire.produce_request("users", [framed(second, b"\x02a\x00")]))
    assert response.responses[0].partition_responses[0].error_code == ErrorCode.none
    # A soft-deleted version's id is refused again (within the second the ids are kept).
    httpx.delete(f"{url}/subjects/users-value/versions/1", timeout=30)
    time.sleep(KEPT_SECONDS + 0.1)
    response = wire.call(broker.port, wire.produce_request("users", [framed(first)]))
    assert response.responses[0].partition_responses[0].error_code == ErrorCode.invalid_record


def test_keys_and_record_name_strategy_with_confluent_serializers(broker_factory: Any) -> None:
    broker, url = start(broker_factory)
    configs = {
        "confluent.key.schema.validation": "true",
        "confluent.value.schema.validation": "true",
        "confluent.value.subject.name.strategy": "io.confluent.kafka.serializers.subject.RecordNameStrategy",
    }
    wire.create_topics(broker.port, "mixed", configs=configs)
    sr = SchemaRegistryClient({"url": url})
    key_serializer = AvroSerializer(sr, json.dumps("string"))
    value_serializer = AvroSerializer(sr, USER, conf={"subject.name.strategy": record_subject_name_strategy})
    keys = SerializationContext("mixed", MessageField.KEY)
    values = SerializationContext("mixed", MessageField.VALUE)
    records = [
        Rec(key_serializer(f"k{i}", keys), value_serializer({"name": f"n{i}"}, values)) for i in range(5)
    ]
    confluent_produce(broker.bootstrap, "mixed", records)
    assert sorted(sr.get_subjects()) == ["acme.User", "mixed-key"]
    assert end_offset(broker, "mixed") == 5
    # A plain key is refused; librdkafka reports INVALID_RECORD for it.
    producer = Producer({"bootstrap.servers": broker.bootstrap, "retries": 0})
    outcome: list[Any] = []
    producer.produce(
        "mixed", key=b"plain", value=records[0].value, on_delivery=lambda err, msg: outcome.append(err)
    )
    assert producer.flush(20) == 0
    assert outcome[0] is not None and outcome[0].code() == KafkaError.INVALID_RECORD
    assert end_offset(broker, "mixed") == 5


def test_an_unvalidated_topic_takes_any_bytes(broker_factory: Any) -> None:
    broker, _ = start(broker_factory)
    wire.create_topics(broker.port, "loose")
    response = wire.call(broker.port, wire.produce_request("loose", [b"plain", framed(12345)]))
    assert response.responses[0].partition_responses[0].error_code == ErrorCode.none


def test_validation_configs_are_checked(broker_factory: Any) -> None:
    broker, _ = start(broker_factory)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for i, (name, value) in enumerate(
        (("confluent.value.schema.validation", "maybe"), ("confluent.key.subject.name.strategy", "Other"))
    ):
        futures = admin.create_topics([NewTopic(f"bad{i}", 1, config={name: value})])
        with pytest.raises(KafkaException) as refused:
            futures[f"bad{i}"].result(30)
        assert refused.value.args[0].code() == KafkaError.INVALID_CONFIG, name
