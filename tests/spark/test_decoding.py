"""Avro and JSON Schema keys and values decoded into columns with the schema registry (keyFormat,
valueFormat): the type mapping and the fitting of decoded values without Spark, then records that
confluent-kafka's serializers produced through a broker with its registry, read with Spark."""

from __future__ import annotations

import datetime
import decimal
import io
import json
import uuid
from collections.abc import Callable
from typing import Any

import fastavro
import pyarrow as pa
import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from pyspark.sql.pandas.types import to_arrow_type

from schooner.schemas import parse
from schooner.spark.decoding import Column, FitError, column_for, json_column
from schooner.spark.options import Decode, OptionError, parse_decodes, parse_source
from schooner.storage.redis.embedded import free_port
from tests.clients import Rec, confluent_produce
from tests.spark.conftest import Log


def avro(schema: Any) -> Column:
    return column_for(parse("AVRO", json.dumps(schema)))


def fitted(column: Column, values: list[Any]) -> list[Any]:
    """Values as Spark gets them: fitted, through Arrow of the column's type."""
    ready = values if column.fit is None else [column.fit(v) for v in values]
    return pa.array(ready, to_arrow_type(column.type, timezone="UTC")).to_pylist()  # type: ignore[no-any-return]


def record(name: str, *fields: tuple[str, Any]) -> dict[str, Any]:
    return {"type": "record", "name": name, "fields": [{"name": n, "type": t} for n, t in fields]}


def encode(schema: Any, value: Any) -> bytes:
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, fastavro.parse_schema(schema), value)
    return buf.getvalue()


# -- the mapping, no Spark ---------------------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore::avro.errors.IgnoredLogicalType")  # the avro library's, on types it lacks
def test_avro_types_map_as_spark_from_avro_maps_them() -> None:
    schema = record(
        "All",
        ("n", "null"), ("b", "boolean"), ("i", "int"), ("l", "long"), ("f", "float"), ("d", "double"),
        ("raw", "bytes"), ("s", "string"), ("e", {"type": "enum", "name": "E", "symbols": ["A", "B"]}),
        ("fx", {"type": "fixed", "name": "F", "size": 4}), ("arr", {"type": "array", "items": "int"}),
        ("m", {"type": "map", "values": ["null", "long"]}), ("opt", ["null", "string"]),
        ("num", ["int", "long"]), ("real", ["null", "float", "double"]),
        ("either", ["null", "int", "string"]),
        ("day", {"type": "int", "logicalType": "date"}),
        ("ms", {"type": "long", "logicalType": "timestamp-millis"}),
        ("us", {"type": "long", "logicalType": "timestamp-micros"}),
        ("local", {"type": "long", "logicalType": "local-timestamp-millis"}),
        ("money", {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2}),
        ("id", {"type": "string", "logicalType": "uuid"}),
        ("inner", record("Inner", ("x", "int"))),
    )  # fmt: skip
    assert avro(schema).type.simpleString() == (
        "struct<n:void,b:boolean,i:int,l:bigint,f:float,d:double,raw:binary,s:string,e:string,fx:binary,"
        "arr:array<int>,m:map<string,bigint>,opt:string,num:bigint,real:double,"
        "either:struct<member0:int,member1:string>,day:date,ms:timestamp,us:timestamp,local:timestamp_ntz,"
        "money:decimal(9,2),id:string,inner:struct<x:int>>"
    )
    assert avro("string").type.simpleString() == "string"
    # A recursive record is JSON text where it recurs; an unknown logical type is its plain type.
    node = record("Node", ("v", "int"), ("next", ["null", "Node"]))
    assert avro(node).type.simpleString() == "struct<v:int,next:string>"
    assert avro({"type": "bytes", "logicalType": "made-up"}).type.simpleString() == "binary"


def test_avro_values_fit_the_readers_type() -> None:
    schema = record(
        "R", ("either", ["null", "int", "string", record("P", ("q", "int"))]),
        ("when", {"type": "long", "logicalType": "timestamp-micros"}),
        ("id", {"type": "string", "logicalType": "uuid"}),
        ("tm", {"type": "int", "logicalType": "time-millis"}),
        ("m", {"type": "map", "values": "int"}),
    )  # fmt: skip
    parsed = parse("AVRO", json.dumps(schema))
    key = uuid.uuid4()
    when = datetime.datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=datetime.UTC)
    values = [
        {"either": e, "when": when, "id": str(key), "tm": datetime.time(1, 0, 0, 5000), "m": {"a": 1}}
        for e in (None, 7, "seven", {"q": 3})
    ]
    decoded = [parsed.decode(encode(schema, v)) for v in values]
    rows = fitted(column_for(parsed), decoded)
    assert [r["either"] for r in rows] == [
        None,
        {"member0": 7, "member1": None, "member2": None},
        {"member0": None, "member1": "seven", "member2": None},
        {"member0": None, "member1": None, "member2": {"q": 3}},
    ]
    assert {(r["when"], r["id"], r["tm"]) for r in rows} == {(when, str(key), 3_600_005)}
    assert rows[0]["m"] == [("a", 1)]
    # The writer of another version: fields the reader lacks are dropped, those the writer lacks are null.
    reader = avro(record("R", ("name", "string"), ("email", ["null", "string"])))
    assert fitted(reader, [{"name": "a", "age": 3}]) == [{"name": "a", "email": None}]
    money = avro({"type": "bytes", "logicalType": "decimal", "precision": 5, "scale": 2})
    assert fitted(money, [decimal.Decimal("1.5")]) == [decimal.Decimal("1.50")]


def test_json_schema_types_map_to_spark_types() -> None:
    schema = {
        "type": "object",
        "definitions": {"point": {"type": "object", "properties": {"x": {"type": "number"}}}},
        "properties": {
            "name": {"type": "string"},
            "count": {"type": "integer"},
            "ratio": {"type": "number"},
            "ok": {"type": "boolean"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "maybe": {"type": ["string", "null"]},
            "at": {"$ref": "#/definitions/point"},
            "choice": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
            "anything": {},
            "free": {"type": "object"},
        },
    }
    column = column_for(parse("JSON", json.dumps(schema)))
    assert column.type.simpleString() == (
        "struct<name:string,count:bigint,ratio:double,ok:boolean,tags:array<string>,maybe:string,"
        "at:struct<x:double>,choice:string,anything:string,free:string>"
    )
    value = {"name": "n", "count": 3.0, "ratio": 1, "ok": True, "tags": ["a"], "at": {"x": 2.5, "y": 0},
             "choice": 4, "anything": [1, {"a": None}], "free": {"k": "v"}, "extra": 1}  # fmt: skip
    assert fitted(column, [value]) == [
        {"name": "n", "count": 3, "ratio": 1.0, "ok": True, "tags": ["a"], "maybe": None, "at": {"x": 2.5},
         "choice": "4", "anything": '[1,{"a":null}]', "free": '{"k":"v"}'}
    ]  # fmt: skip
    with pytest.raises(FitError, match="not an integer"):
        fitted(column, [{"count": 3.5}])
    recursive = {"$ref": "#/definitions/t", "definitions": {"t": {"type": "object", "properties": {
        "v": {"type": "integer"}, "next": {"$ref": "#/definitions/t"}}}}}  # fmt: skip
    assert json_column(recursive).type.simpleString() == "struct<v:bigint,next:string>"
    assert json_column(True).type.simpleString() == "string"


def test_decode_options_name_a_subject_per_topic() -> None:
    assert parse_decodes({"subscribe": "users"}) == ()
    opts = parse_source({"subscribe": "users", "valueFormat": "AVRO", "keyFormat": "json"}, streaming=False)
    assert opts.decodes == (Decode("key", "json", "users-key"), Decode("value", "avro", "users-value"))
    assert parse_decodes({"assign": '{"t": [0, 1]}', "valueformat": "json"}) == (
        Decode("value", "json", "t-value"),
    )
    explicit = {"subscribepattern": "u.*", "valueformat": "avro", "valuesubject": "shared"}
    assert parse_decodes(explicit) == (Decode("value", "avro", "shared"),)
    with pytest.raises(OptionError, match="several topics .a, b.: set valueSubject"):
        parse_decodes({"subscribe": "a,b", "valueformat": "avro"})
    with pytest.raises(OptionError, match="on a pattern: set keySubject"):
        parse_decodes({"subscribepattern": "u.*", "keyformat": "avro"})
    with pytest.raises(OptionError, match="valueFormat must be one of raw, avro, json"):
        parse_decodes({"subscribe": "a", "valueformat": "protobuf"})
    with pytest.raises(OptionError, match="valueSubject needs valueFormat"):
        parse_decodes({"subscribe": "a", "valuesubject": "s"})


# -- Spark, records from confluent-kafka's serializers -------------------------------------------------------

USER = record("User", ("name", "string"), ("id", "int"))
USER_V2 = {
    **USER,
    "fields": [*USER["fields"], {"name": "email", "type": ["null", "string"], "default": None}],
}


def _registry(broker_factory: Callable[..., Any]) -> tuple[Any, SchemaRegistryClient]:
    port = free_port()
    broker = broker_factory(schema_registry_port=port)
    return broker, SchemaRegistryClient({"url": f"http://127.0.0.1:{port}"})


def _read(spark: Any, log: Log, topic: str, **options: str) -> Any:
    return (
        spark.read.format("schooner")
        .options(**log.options)
        .option("subscribe", topic)
        .options(**options)
        .load()
    )


def test_avro_values_and_keys_decode_with_the_registry_across_versions(
    spark: Any, broker_factory: Callable[..., Any], log: Log
) -> None:
    broker, sr = _registry(broker_factory)
    log.topic("users")
    value_ctx = SerializationContext("users", MessageField.VALUE)
    key_ctx = SerializationContext("users", MessageField.KEY)
    v1, keys = AvroSerializer(sr, json.dumps(USER)), AvroSerializer(sr, json.dumps("string"))
    first = [Rec(keys(f"k{i}", key_ctx), v1({"name": f"u{i}", "id": i}, value_ctx)) for i in range(4)]
    confluent_produce(broker.bootstrap, "users", first)
    planned = _read(spark, log, "users", valueFormat="avro")  # planned while v1 is the latest
    assert planned.schema["valueDecoded"].dataType.simpleString() == "struct<name:string,id:int>"

    v2 = AvroSerializer(sr, json.dumps(USER_V2))
    v1_id = sr.get_version("users-value", 1).schema_id
    assert v1_id is not None
    unknown_id = b"\x00" + (999).to_bytes(4, "big") + b"\x02a"
    broken = b"\x00" + v1_id.to_bytes(4, "big") + b"\xff"  # v1's id, and bytes that are no User
    later = [Rec(None, v2({"name": f"w{i}", "id": 10 + i, "email": f"w{i}@x"}, value_ctx)) for i in range(2)]
    later += [Rec(b"plain", b"plain bytes"), Rec(None, unknown_id), Rec(b"gone", None), Rec(None, broken)]
    confluent_produce(broker.bootstrap, "users", later)
    v2_id = sr.get_latest_version("users-value").schema_id

    # Planned with v1: v2's records are fitted to it (email dropped).
    assert sorted((r.name, r.id) for r in planned.selectExpr("valueDecoded.*").collect() if r.name) == [
        ("u0", 0), ("u1", 1), ("u2", 2), ("u3", 3), ("w0", 10), ("w1", 11),
    ]  # fmt: skip
    df = _read(spark, log, "users", valueFormat="avro", keyFormat="avro")
    df.createOrReplaceTempView("users")
    rows = spark.sql(
        "SELECT valueDecoded.name, valueDecoded.email, valueSchemaId, keyDecoded FROM users "
        "WHERE valueDecoded.id > 1 ORDER BY offset"
    ).collect()
    assert [tuple(r) for r in rows] == [
        ("u2", None, v1_id, "k2"), ("u3", None, v1_id, "k3"), ("w0", "w0@x", v2_id, None),
        ("w1", "w1@x", v2_id, None),
    ]  # fmt: skip
    bad = df.where("valueDecoded is null").orderBy("offset").collect()
    assert [(r.value, r.valueSchemaId, r.keyDecodeError is None) for r in bad] == [
        (b"plain bytes", None, False), (unknown_id, 999, True), (None, None, False), (broken, v1_id, True),
    ]  # fmt: skip
    assert "no magic byte" in bad[0].valueDecodeError and "no magic byte" in bad[0].keyDecodeError
    assert "schema id 999 is not in the schema registry" in bad[1].valueDecodeError
    assert bad[2].valueDecodeError is None  # a tombstone is null, not an error
    assert "Invalid payload" in bad[3].valueDecodeError
    assert df.where("valueDecodeError is null and value is not null").count() == 6


def test_json_schema_values_decode_in_batch_and_streaming_queries(
    spark: Any, broker_factory: Callable[..., Any], log: Log, tmp_path: Any
) -> None:
    broker, sr = _registry(broker_factory)
    log.topic("events")
    schema = {
        "type": "object",
        "properties": {
            "kind": {"type": "string"},
            "n": {"type": "integer"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "where": {"type": "object", "properties": {"lat": {"type": "number"}, "lon": {"type": "number"}}},
            "extra": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
        },
        "required": ["kind", "n"],
    }
    serialize = JSONSerializer(json.dumps(schema), sr)
    ctx = SerializationContext("events", MessageField.VALUE)
    events = [
        {"kind": "click" if i % 2 else "view", "n": i, "tags": [f"t{i}"], "where": {"lat": i / 2, "lon": 1},
         "extra": i if i % 3 else "s"}
        for i in range(6)
    ]  # fmt: skip
    records = [Rec(None, serialize(e, ctx)) for e in events]
    schema_id = sr.get_latest_version("events-value").schema_id
    assert schema_id is not None
    invalid = b"\x00" + schema_id.to_bytes(4, "big") + json.dumps({"kind": 1, "n": 1}).encode()
    confluent_produce(broker.bootstrap, "events", [*records, Rec(None, invalid)])

    df = _read(spark, log, "events", valueFormat="json")
    df.createOrReplaceTempView("events")
    rows = spark.sql(
        "SELECT valueDecoded.n, valueDecoded.tags[0] AS tag, valueDecoded.where.lat, valueDecoded.extra "
        "FROM events WHERE valueDecoded.kind = 'click' ORDER BY offset"
    ).collect()
    assert [tuple(r) for r in rows] == [(1, "t1", 0.5, "1"), (3, "t3", 1.5, '"s"'), (5, "t5", 2.5, "5")]
    (failed,) = df.where("valueDecodeError is not null").collect()
    assert failed.valueSchemaId == schema_id and "is not of type 'string'" in failed.valueDecodeError

    stream = (
        spark.readStream.format("schooner").options(**log.options).option("subscribe", "events")
        .option("startingOffsets", "earliest").option("valueFormat", "json").load()
        .selectExpr("valueDecoded.n AS n", "valueDecodeError")
        .writeStream.format("memory").queryName("decoded_events")
        .option("checkpointLocation", str(tmp_path / "checkpoint")).trigger(availableNow=True).start()
    )  # fmt: skip
    stream.awaitTermination(120)
    got = spark.sql("SELECT n, valueDecodeError IS NULL AS ok FROM decoded_events").collect()
    assert sorted((r.n, r.ok) for r in got if r.ok) == [(i, True) for i in range(6)] and len(got) == 7
