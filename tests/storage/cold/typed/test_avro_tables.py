"""Avro topics archived with typed value columns: queried by DuckDB as the issue's example does, schema
versions merged into one struct, undecodable records kept, and reads still byte for byte the hot tier's."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from deltalake import DeltaTable

from schooner.broker.partitions.fetch_codec import encode_entries
from schooner.storage.cold.layout import SCHEMA
from schooner.storage.log.entry import Record

from .conftest import USER_V1, USER_V2, avro, register

OLD = 1_700_000_000_000
PREFIX = {"schooner.table.value.mode": "schema_id_prefix"}
LATEST = {"schooner.table.value.mode": "schema_latest"}


def users(schema: Any, ids: range, schema_id: int | None, **extra: Any) -> list[Record]:
    return [
        Record(OLD + i, b"k%d" % i, avro(schema, {"id": i, "name": f"user-{i}", **extra}, schema_id))
        for i in ids
    ]


def archive(log: Any, cold: Any) -> Any:
    piece = log.slice(0, 10_000)
    done = cold.archive(log.topic, 0, piece)
    assert done.records == len(piece.entries)
    return piece


def names_over_5(duck: Any, cold: Any, log: Any) -> list[Any]:
    uri = cold.table_uri(log.topic)
    query = f"SELECT value.name FROM delta_scan('{uri}') WHERE value.id > 5 ORDER BY value.id"
    return [row[0] for row in duck.execute(query).fetchall()]


def test_schema_id_prefix_values_are_queried_by_field(make_log, cold, duck) -> None:
    log = make_log("users", **PREFIX)
    v1 = register(log, "users-value", USER_V1)
    log.append(users(USER_V1, range(10), v1))
    archive(log, cold)
    assert names_over_5(duck, cold, log) == [f"user-{i}" for i in range(6, 10)]
    rows = DeltaTable(cold.table_uri(log.topic)).to_pyarrow_table().sort_by("offset")
    assert rows.schema.field("value").type == pa.struct([("id", pa.int64()), ("name", pa.string())])
    assert rows.schema.field("value_raw").type == pa.binary()
    assert rows.column("value_schema_id").to_pylist() == [v1] * 10
    assert rows.column("value_error").to_pylist() == [None] * 10
    assert rows.column("key").to_pylist() == [b"k%d" % i for i in range(10)]  # the key stays raw


def test_schema_latest_reads_records_with_and_without_the_wire_header(make_log, cold, duck) -> None:
    log = make_log("people", **LATEST)
    v1 = register(log, "people-value", USER_V1)
    v2 = register(log, "people-value", USER_V2)
    log.append(users(USER_V1, range(0, 4), None))  # bare Avro: read by the latest (a v1 writer reads
    log.append(users(USER_V2, range(4, 8), None, email="e"))  # as v2 only when it names itself)
    log.append(users(USER_V1, range(8, 12), v1))  # a v1 writer named by its header, read into v2
    archive(log, cold)
    assert names_over_5(duck, cold, log)[:2] == ["user-6", "user-7"]
    rows = DeltaTable(cold.table_uri(log.topic)).to_pyarrow_table().sort_by("offset").to_pylist()
    assert [r["value_schema_id"] for r in rows[4:]] == [v2] * 4 + [v1] * 4
    assert rows[5]["value"] == {"id": 5, "name": "user-5", "email": "e"}
    assert rows[9]["value"] == {"id": 9, "name": "user-9", "email": None}
    assert all(r["value_error"] is None for r in rows[4:])


def test_a_new_version_adds_a_column_that_older_rows_read_as_null(make_log, cold, duck) -> None:
    log = make_log("evolving", **PREFIX)
    v1 = register(log, "evolving-value", USER_V1)
    log.append(users(USER_V1, range(0, 8), v1))
    piece = archive(log, cold)
    v2 = register(log, "evolving-value", USER_V2)
    log.append(users(USER_V2, range(8, 12), v2, email="x@y"))
    done = cold.archive(log.topic, 0, log.slice(piece.end, 10_000))
    assert done.records == 4
    uri = cold.table_uri(log.topic)
    got = duck.execute(
        f"SELECT value.id, value.email, value_schema_id FROM delta_scan('{uri}') WHERE value.id > 5 "
        "ORDER BY value.id"
    ).fetchall()
    assert got == [(6, None, v1), (7, None, v1)] + [(i, "x@y", v2) for i in range(8, 12)]


def test_versions_in_one_slice_merge_into_one_struct(make_log, cold) -> None:
    log = make_log("mixed", **PREFIX)
    v1 = register(log, "mixed-value", USER_V1)
    v2 = register(log, "mixed-value", USER_V2)
    log.append(users(USER_V1, range(0, 2), v1) + users(USER_V2, range(2, 4), v2, email="m"))
    archive(log, cold)
    rows = DeltaTable(cold.table_uri(log.topic)).to_pyarrow_table().sort_by("offset")
    assert [f.name for f in rows.schema.field("value").type] == ["id", "name", "email"]
    assert [v["email"] for v in rows.column("value").to_pylist()] == [None, None, "m", "m"]


def test_undecodable_records_keep_their_bytes_and_say_why(make_log, cold) -> None:
    log = make_log("odd", **PREFIX)
    v1 = register(log, "odd-value", USER_V1)
    good = avro(USER_V1, {"id": 1, "name": "fine"}, v1)
    values = [b"plain text", good[:-3], b"\x00\x00\x01\x86\xa0" + good[5:], good + b"extra", None, good]
    log.append([Record(OLD + i, None, v) for i, v in enumerate(values)])
    piece = archive(log, cold)
    rows = DeltaTable(cold.table_uri(log.topic)).to_pyarrow_table().sort_by("offset").to_pylist()
    assert [r["value_raw"] for r in rows] == values
    assert [r["value"] for r in rows] == [None] * 5 + [{"id": 1, "name": "fine"}]
    errors = [r["value_error"] for r in rows]
    assert "magic byte" in errors[0]
    assert errors[1].startswith(f"not a record of schema id {v1}")
    assert errors[2] == "schema id 100000 is not registered"
    assert "bytes left after the datum" in errors[3]
    assert errors[4:] == [None, None]  # a tombstone is no error
    assert [r["value_schema_id"] for r in rows] == [None, v1, None, v1, None, v1]
    hot = log.read(0, 1000)
    assert cold.read(log.topic, 0, 0, max_bytes=1 << 20).entries == hot.entries
    assert piece.end == len(values)


def test_a_slice_of_no_registered_schema_writes_no_struct_yet(make_log, cold, duck) -> None:
    log = make_log("early", **PREFIX)
    log.append([Record(OLD, None, b"\x00\x00\x00\x00\x07abc")])
    piece = archive(log, cold)
    table = DeltaTable(cold.table_uri(log.topic))
    assert "value" not in [f.name for f in table.schema().fields]
    v1 = register(log, "early-value", USER_V1)
    log.append(users(USER_V1, range(5, 8), v1))
    cold.archive(log.topic, 0, log.slice(piece.end, 1000))
    assert names_over_5(duck, cold, log) == ["user-6", "user-7"]


def test_cold_reads_of_a_typed_table_are_the_hot_tier_s_bytes(make_log, cold) -> None:
    log = make_log("both", **{"schooner.table.key.mode": "schema_id_prefix", **LATEST})
    key_id = register(log, "both-key", '"long"')
    v1 = register(log, "both-value", USER_V1)
    records = [
        Record(OLD + i, avro("long", i, key_id), avro(USER_V1, {"id": i, "name": "n"}, v1), [("h", b"1")])
        for i in range(20)
    ]
    records += [Record(OLD + 30, None, None), Record(OLD + 31, b"not avro", b"")]
    log.append(records)
    archive(log, cold)
    rows = DeltaTable(cold.table_uri(log.topic)).to_pyarrow_table().sort_by("offset")
    assert rows.column("key").to_pylist()[:3] == [0, 1, 2]
    assert rows.column("key_schema_id").to_pylist()[:1] == [key_id]
    hot = log.read(0, 1000)
    back = cold.read(log.topic, 0, 0, max_bytes=1 << 20)
    assert back.entries == hot.entries
    codec = log.topic.offsets
    assert encode_entries(back.entries, codec, 0, False, 1 << 20) == encode_entries(
        hot.entries, codec, 0, False, 1 << 20
    )
    middle = cold.read(log.topic, 0, 7, max_bytes=300)  # from the middle, within a byte budget
    assert middle.entries == hot.entries[7 : 7 + len(middle.entries)] and middle.entries


def test_a_raw_topic_s_table_is_unchanged(make_log, cold) -> None:
    log = make_log("plain")
    v1 = register(log, "plain-value", USER_V1)
    log.append(users(USER_V1, range(3), v1))
    piece = archive(log, cold)
    assert not piece.schemas.by_id  # no registry round trip for a raw table
    rows = DeltaTable(cold.table_uri(log.topic)).to_pyarrow_table()
    assert rows.schema.names == SCHEMA.names
