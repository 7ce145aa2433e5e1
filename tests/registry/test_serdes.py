"""confluent-kafka's schema-registry serializers and deserializers (Avro, JSON Schema, Protobuf) against the
broker's registry, records produced to and consumed from the broker itself: the round trips users run."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from confluent_kafka.schema_registry import Schema, SchemaReference, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from tests.clients import Rec, confluent_consume, confluent_produce
from tests.registry.conftest import Registry
from tests.wire import create_topics

USER = json.dumps({"type": "record", "name": "User", "namespace": "acme", "fields": [
    {"name": "name", "type": "string"}, {"name": "age", "type": "int"}]})  # fmt: skip
USER_V2 = json.dumps({"type": "record", "name": "User", "namespace": "acme", "fields": [
    {"name": "name", "type": "string"}, {"name": "age", "type": "int"},
    {"name": "email", "type": ["null", "string"], "default": None}]})  # fmt: skip


def client(registry: Registry) -> SchemaRegistryClient:
    return SchemaRegistryClient({"url": registry.url})


def round_trip(
    registry: Registry, topic: str, serialize: Any, deserialize: Any, values: list[Any]
) -> list[Any]:
    """Values serialized, produced, consumed and deserialized."""
    port = registry.broker.port
    create_topics(port, topic)
    context = SerializationContext(topic, MessageField.VALUE)
    confluent_produce(registry.broker.bootstrap, topic, [Rec(None, serialize(v, context)) for v in values])
    got = confluent_consume(registry.broker.bootstrap, topic, len(values))
    return [deserialize(m.value(), context) for m in got]


def test_avro_round_trip_and_evolution(registry: Registry) -> None:
    sr = client(registry)
    values = [{"name": f"u{i}", "age": i} for i in range(10)]
    got = round_trip(registry, "users", AvroSerializer(sr, USER), AvroDeserializer(sr), values)
    assert got == values
    # A newer writer (a field with a default) is backward compatible; an old reader schema reads it.
    newer = AvroSerializer(sr, USER_V2)
    context = SerializationContext("users", MessageField.VALUE)
    encoded = newer({"name": "x", "age": 1, "email": "x@acme"}, context)
    assert AvroDeserializer(sr)(encoded, context) == {"name": "x", "age": 1, "email": "x@acme"}
    assert AvroDeserializer(sr, USER)(encoded, context) == {"name": "x", "age": 1}
    assert sr.get_versions("users-value") == [1, 2]
    assert sr.get_latest_version("users-value").schema.schema_str is not None
    # Dropping the required age without a default is not backward compatible: refused with 409.
    dropped = json.dumps({"type": "record", "name": "User", "namespace": "acme", "fields": [
        {"name": "name", "type": "string"}, {"name": "nick", "type": "string"}]})  # fmt: skip
    with pytest.raises(SchemaRegistryError) as refused:
        AvroSerializer(sr, dropped)({"name": "y", "nick": "z"}, context)
    assert refused.value.http_status_code == 409 and refused.value.error_code == 409
    assert not sr.test_compatibility("users-value", Schema(dropped, "AVRO"))
    assert sr.test_compatibility("users-value", Schema(USER_V2, "AVRO"))


def test_avro_references_to_another_subject(registry: Registry) -> None:
    sr = client(registry)
    address = json.dumps({"type": "record", "name": "Address", "namespace": "acme", "fields": [
        {"name": "city", "type": "string"}]})  # fmt: skip
    version = sr.register_schema_full_response("acme.Address", Schema(address, "AVRO"))
    customer = json.dumps({"type": "record", "name": "Customer", "namespace": "acme", "fields": [
        {"name": "name", "type": "string"}, {"name": "home", "type": "acme.Address"}]})  # fmt: skip
    ref = SchemaReference("acme.Address", "acme.Address", version.version or 1)
    sr.register_schema("customers-value", Schema(customer, "AVRO", [ref]))
    conf = {"auto.register.schemas": False, "use.latest.version": True}
    serializer = AvroSerializer(sr, Schema(customer, "AVRO", [ref]), conf=conf)
    values = [{"name": "ann", "home": {"city": "Oslo"}}, {"name": "bo", "home": {"city": "Lima"}}]
    assert round_trip(registry, "customers", serializer, AvroDeserializer(sr), values) == values


def test_json_schema_round_trip_and_refusal(registry: Registry) -> None:
    sr = client(registry)
    properties = {"id": {"type": "integer"}, "item": {"type": "string"}}
    schema = json.dumps({"$schema": "http://json-schema.org/draft-07/schema#", "title": "Order",
                         "type": "object", "properties": properties, "required": ["id"]})  # fmt: skip
    values = [{"id": i, "item": f"thing {i}"} for i in range(5)]
    got = round_trip(
        registry,
        "orders",
        JSONSerializer(schema, sr),
        JSONDeserializer(None, schema_registry_client=sr),
        values,
    )
    assert got == values
    assert sr.get_latest_version("orders-value").schema.schema_type == "JSON"


def compile_proto(tmp_path: Path, name: str, text: str, *others: tuple[str, str]) -> ModuleType:
    """The module protoc generates for the file (and its imports), imported."""
    for path, source in ((name, text), *others):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(source)
    files = [name, *(path for path, _ in others)]
    protoc = [sys.executable, "-m", "grpc_tools.protoc", f"-I{tmp_path}", f"--python_out={tmp_path}"]
    subprocess.run([*protoc, *files], check=True, cwd=tmp_path)
    sys.path.insert(0, str(tmp_path))
    try:
        return importlib.import_module(name.removesuffix(".proto").replace("/", ".") + "_pb2")
    finally:
        sys.path.remove(str(tmp_path))


def test_protobuf_round_trip_with_an_import(registry: Registry, tmp_path: Path) -> None:
    common = (
        'syntax = "proto3";\npackage acme.common;\nmessage Money { string currency = 1; int64 cents = 2; }\n'
    )
    order = (
        'syntax = "proto3";\npackage acme;\nimport "acme_common.proto";\n'
        'import "google/protobuf/timestamp.proto";\n'
        "message Order {\n  int64 id = 1;\n  acme.common.Money total = 2;\n"
        "  google.protobuf.Timestamp at = 3;\n"
        "  message Line { string item = 1; int32 count = 2; }\n  repeated Line lines = 4;\n}\n"
    )
    module = compile_proto(tmp_path, "acme_order.proto", order, ("acme_common.proto", common))
    sr = client(registry)
    serializer = ProtobufSerializer(module.Order, sr, {"use.deprecated.format": False})
    deserializer = ProtobufDeserializer(module.Order, {"use.deprecated.format": False})
    values = [module.Order(id=i, lines=[module.Order.Line(item="x", count=i)]) for i in range(1, 4)]
    for v in values:
        v.total.currency, v.total.cents = "EUR", 100 * v.id
        v.at.seconds = 1_700_000_000 + v.id
    got = round_trip(registry, "proto-orders", serializer, deserializer, values)
    assert got == values
    # The import was registered as a subject of its own and is a reference of the value's schema.
    assert "acme_common.proto" in sr.get_subjects()
    latest = sr.get_latest_version("proto-orders-value")
    assert [r.name for r in latest.schema.references] == ["acme_common.proto"]
    # A reader fetching the schema itself (not the generated class) decodes the records too.
    context = SerializationContext("proto-orders", MessageField.VALUE)
    encoded = serializer(values[0], context)
    assert ProtobufDeserializer(module.Order, {"use.deprecated.format": False})(encoded, context) == values[0]


def test_protobuf_evolution_refused_when_a_field_changes_kind(registry: Registry, tmp_path: Path) -> None:
    sr = client(registry)
    first = 'syntax = "proto3";\npackage acme;\nmessage Item { int64 id = 1; string name = 2; }\n'
    changed = (
        'syntax = "proto3";\npackage acme;\nmessage Item { int64 id = 1; Inner name = 2; }\n'
        "message Inner { int32 x = 1; }\n"
    )
    added = (
        'syntax = "proto3";\npackage acme;\nmessage Item { int64 id = 1; string name = 2; int32 size = 3; }\n'
    )
    sr.register_schema("items-value", Schema(first, "PROTOBUF"))
    assert not sr.test_compatibility("items-value", Schema(changed, "PROTOBUF"))
    with pytest.raises(SchemaRegistryError) as refused:
        sr.register_schema("items-value", Schema(changed, "PROTOBUF"))
    assert refused.value.http_status_code == 409
    assert sr.register_schema("items-value", Schema(added, "PROTOBUF")) > 0
    assert sr.get_versions("items-value") == [1, 2]
