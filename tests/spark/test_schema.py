"""Stream entries to Arrow: the schema Spark expects exactly, offsets from IDs, both entry layouts."""

from __future__ import annotations

import datetime

import pyarrow as pa
from pyspark.sql.pandas.types import to_arrow_schema

from schooner.spark.schema import arrow_schema, entries_to_batch, kafka_schema
from schooner.storage.log.entry import encode_headers
from schooner.storage.offsets import DENSE_OFFSETS, timestamp_offsets


def test_arrow_schema_is_sparks_conversion_of_the_kafka_schema() -> None:
    for headers in (False, True):
        assert arrow_schema(headers).equals(to_arrow_schema(kafka_schema(headers), timezone="UTC"))
    assert kafka_schema(True).simpleString() == (
        "struct<key:binary,value:binary,topic:string,partition:int,offset:bigint,timestamp:timestamp,"
        "timestampType:int,headers:array<struct<key:string,value:binary>>>"
    )


def test_uniform_and_mixed_layouts_give_the_same_rows() -> None:
    uniform = [
        [b"1700000000000-0", [b"timestamp", b"1700000000001", b"key", b"k0", b"value", b"v0"]],
        [b"1700000000000-1", [b"timestamp", b"1700000000002", b"key", b"value", b"value", b"key"]],
    ]
    mixed = [
        *uniform,
        [b"1700000000005-3", [b"value", b"plain"]],
        [b"1700000000006-0", [b"timestamp", b"7", b"headers", encode_headers([("h", None)]), b"extra", b"x"]],
    ]
    first = entries_to_batch(uniform, "t", 2, timestamp_offsets(10), 0, True).to_pylist()
    both = entries_to_batch(mixed, "t", 2, timestamp_offsets(10), 1, True).to_pylist()
    assert [r["offset"] for r in both] == [
        1700000000000 << 10,
        (1700000000000 << 10) | 1,
        (1700000000005 << 10) | 3,
        1700000000006 << 10,
    ]
    assert [(r["key"], r["value"]) for r in both] == [
        (b"k0", b"v0"),
        (b"value", b"key"),
        (None, b"plain"),
        (None, None),
    ]
    stamps = [r["timestamp"] for r in both]
    assert stamps[2] == datetime.datetime(2023, 11, 14, 22, 13, 20, 5000, tzinfo=datetime.UTC)
    assert stamps[3] == datetime.datetime(1970, 1, 1, 0, 0, 0, 7000, tzinfo=datetime.UTC)
    assert [r["headers"] for r in both] == [None, None, None, [{"key": "h", "value": None}]]
    assert [{k: v for k, v in r.items() if k != "timestampType"} for r in both[:2]] == [
        {k: v for k, v in r.items() if k != "timestampType"} for r in first
    ]
    assert {r["topic"] for r in both} == {"t"} and {r["partition"] for r in both} == {2}
    assert {r["timestampType"] for r in both} == {1}


def test_dense_offsets_are_the_sequence_less_one() -> None:
    entries = [
        [b"0-1", [b"timestamp", b"1700000000001", b"key", b"k0", b"value", b"v0"]],
        [b"0-2", [b"value", b"plain"]],
        [b"0-9", [b"timestamp", b"5", b"value", b"after a gap"]],
    ]
    rows = entries_to_batch(entries, "t", 0, DENSE_OFFSETS, 0, False).to_pylist()
    assert [r["offset"] for r in rows] == [0, 1, 8]
    assert [r["value"] for r in rows] == [b"v0", b"plain", b"after a gap"]
    epoch = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
    # The plain entry has no timestamp field, and a dense ID no time: its timestamp is 0.
    assert [r["timestamp"] for r in rows][1:] == [epoch, epoch + datetime.timedelta(milliseconds=5)]


def test_an_empty_page_is_an_empty_batch() -> None:
    batch = entries_to_batch([], "t", 0, DENSE_OFFSETS, 0, False)
    assert batch.num_rows == 0 and batch.schema.equals(arrow_schema(False))
    assert isinstance(batch, pa.RecordBatch)
