"""Schemas as Arrow types (cold/typed/): each format's mapping, and payloads decoded into it."""

from __future__ import annotations

import datetime
import decimal
import json
import uuid

import pyarrow as pa

from schooner.schemas import wire
from schooner.storage.cold.typed import decode_column
from schooner.storage.cold.typed.codecs import codec
from schooner.storage.cold.typed.fits import merge
from schooner.storage.schemas.registry import StoredSchema
from schooner.storage.topics.config import SCHEMA_ID_PREFIX

from .conftest import avro

EVERYTHING = {
    "type": "record",
    "name": "All",
    "fields": [
        {"name": "flag", "type": "boolean"},
        {"name": "small", "type": "int"},
        {"name": "ratio", "type": "float"},
        {"name": "blob", "type": "bytes"},
        {"name": "colour", "type": {"type": "enum", "name": "Colour", "symbols": ["RED", "BLUE"]}},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "counts", "type": {"type": "map", "values": "long"}},
        {"name": "maybe", "type": ["null", "string"]},
        {"name": "either", "type": ["null", "long", "string"]},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "at_us", "type": {"type": "long", "logicalType": "timestamp-micros"}},
        {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2}},
        {"name": "uid", "type": {"type": "string", "logicalType": "uuid"}},
        {"name": "hash", "type": {"type": "fixed", "name": "Hash", "size": 2}},
        {"name": "next", "type": ["null", "All"], "default": None},
    ],
}


def test_avro_types_map_as_documented() -> None:
    c = codec(StoredSchema("AVRO", json.dumps(EVERYTHING)))
    assert c.error is None
    t = c.arrow_type
    assert isinstance(t, pa.StructType)
    got = {f.name: f.type for f in t}
    assert got == {
        "flag": pa.bool_(),
        "small": pa.int32(),
        "ratio": pa.float32(),
        "blob": pa.binary(),
        "colour": pa.string(),
        "tags": pa.list_(pa.field("element", pa.string())),
        "counts": pa.map_(pa.string(), pa.field("value", pa.int64())),
        "maybe": pa.string(),
        "either": pa.struct([("long", pa.int64()), ("string", pa.string())]),
        "day": pa.date32(),
        "at": pa.timestamp("ms", tz="UTC"),
        "at_us": pa.timestamp("us", tz="UTC"),
        "price": pa.decimal128(9, 2),
        "uid": pa.string(),
        "hash": pa.binary(),
        "next": pa.string(),  # recursive: a JSON text
    }
    uid = uuid.uuid4()
    at = datetime.datetime(2024, 1, 2, 3, 4, 5, 6000, tzinfo=datetime.UTC)
    datum = {
        "flag": True, "small": 7, "ratio": 0.5, "blob": b"\x01", "colour": "BLUE", "tags": ["a"],
        "counts": {"x": 1}, "maybe": None, "either": "s", "day": datetime.date(2024, 1, 2), "at": at,
        "at_us": at, "price": decimal.Decimal("12.34"), "uid": str(uid), "hash": b"ab",
        "next": {**dict.fromkeys(got), "flag": False, "next": None} | {"small": 1},
    }  # fmt: skip
    nested = dict(datum["next"])  # type: ignore[call-overload]
    nested.update({"ratio": 1.0, "blob": b"", "colour": "RED", "tags": [], "counts": {}, "either": 3})
    nested.update({"day": datum["day"], "at": at, "at_us": at, "price": decimal.Decimal("0.00")})
    nested.update({"uid": str(uid), "hash": b"zz", "maybe": None})
    datum["next"] = nested
    found = decode_column([avro(EVERYTHING, datum, 3)], SCHEMA_ID_PREFIX, {3: _stored(EVERYTHING)}, {})
    assert found.errors.to_pylist() == [None]
    row = found.typed.to_pylist()[0]  # type: ignore[union-attr]
    assert row["either"] == {"long": None, "string": "s"}
    assert row["counts"] == [("x", 1)] and row["uid"] == str(uid) and row["price"] == decimal.Decimal("12.34")
    assert json.loads(row["next"])["either"] == 3


def _stored(schema: object, schema_type: str = "AVRO") -> StoredSchema:
    return StoredSchema(schema_type, json.dumps(schema))


def test_json_schema_types_and_untyped_parts() -> None:
    schema = {
        "type": "object",
        "properties": {
            "id": {"type": "integer"},
            "score": {"type": "number"},
            "ok": {"type": "boolean"},
            "name": {"type": ["string", "null"]},
            "tags": {"type": "array", "items": {"type": "string"}},
            "where": {"$ref": "#/definitions/place"},
            "anything": {},
        },
        "definitions": {"place": {"type": "object", "properties": {"city": {"type": "string"}}}},
    }
    c = codec(_stored(schema, "JSON"))
    assert {f.name: f.type for f in c.arrow_type} == {  # type: ignore[union-attr]
        "id": pa.int64(),
        "score": pa.float64(),
        "ok": pa.bool_(),
        "name": pa.string(),
        "tags": pa.list_(pa.field("element", pa.string())),
        "where": pa.struct([("city", pa.string())]),
        "anything": pa.string(),
    }
    doc = {"id": 3, "score": 2, "ok": True, "tags": ["t"], "where": {"city": "Oslo"}, "anything": [1, {}]}
    values = [wire.header(9) + json.dumps(doc).encode(), wire.header(9) + b'{"id": "x"}']
    found = decode_column(values, SCHEMA_ID_PREFIX, {9: _stored(schema, "JSON")}, {})
    rows = found.typed.to_pylist()  # type: ignore[union-attr]
    assert rows[0] == {**doc, "score": 2.0, "name": None, "anything": "[1,{}]"}
    assert rows[1] is None and found.errors.to_pylist()[1].startswith("not a record of schema id 9")


PROTO = """
syntax = "proto3";
package shop;
message Order {
  int64 id = 1;
  string name = 2;
  repeated int32 lines = 3;
  Status status = 4;
  bytes blob = 5;
  map<string, double> prices = 6;
  Item item = 7;
  uint32 qty = 8;
  enum Status { NEW = 0; SHIPPED = 1; }
}
message Item { string sku = 1; }
"""


def test_protobuf_messages_become_structs_with_their_defaults() -> None:
    stored = StoredSchema("PROTOBUF", PROTO)
    c = codec(stored)
    assert c.error is None, c.error
    assert {f.name: f.type for f in c.arrow_type} == {  # type: ignore[union-attr]
        "id": pa.int64(),
        "name": pa.string(),
        "lines": pa.list_(pa.field("element", pa.int32())),
        "status": pa.string(),
        "blob": pa.binary(),
        "prices": pa.map_(pa.string(), pa.field("value", pa.float64())),
        "item": pa.struct([("sku", pa.string())]),
        "qty": pa.uint32(),
    }
    message = c.parsed.pool.FindMessageTypeByName("shop.Order")  # type: ignore[attr-defined]
    from google.protobuf import message_factory

    order = message_factory.GetMessageClass(message)(id=2**40, name="n", lines=[1, 2], status=1, blob=b"\x00")
    order.prices["p"] = 1.5
    order.item.sku = "s"
    payload = wire.header(4) + b"\x00" + order.SerializeToString()
    empty = wire.header(4) + b"\x00"
    found = decode_column([payload, empty], SCHEMA_ID_PREFIX, {4: stored}, {})
    rows = found.typed.to_pylist()  # type: ignore[union-attr]
    assert found.errors.to_pylist() == [None, None]
    assert rows[0] == {
        "id": 2**40, "name": "n", "lines": [1, 2], "status": "SHIPPED", "blob": b"\x00",
        "prices": [("p", 1.5)], "item": {"sku": "s"}, "qty": 0,
    }  # fmt: skip
    assert rows[1] == {
        "id": 0, "name": "", "lines": [], "status": "NEW", "blob": b"", "prices": [], "item": None, "qty": 0,
    }  # fmt: skip


def test_merged_versions_add_fields_and_widen_numbers() -> None:
    v1 = pa.struct([("id", pa.int32()), ("name", pa.string())])
    v2 = pa.struct([("id", pa.int64()), ("email", pa.string())])
    assert merge(v1, v2) == pa.struct([("id", pa.int64()), ("name", pa.string()), ("email", pa.string())])


def test_a_schema_that_does_not_parse_is_every_record_s_error() -> None:
    stored = StoredSchema("AVRO", '{"type": "record"}')
    found = decode_column([wire.header(5) + b"\x02"], SCHEMA_ID_PREFIX, {5: stored}, {})
    assert found.typed is None
    assert "the schema does not parse" in found.errors.to_pylist()[0]
