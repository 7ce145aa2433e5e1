"""Typed columns in Iceberg tables: an Avro topic archived in each decoding mode to an Iceberg table (its
catalog in the test Redis) and queried by DuckDB's iceberg extension on the typed columns; a new schema
version adds a column that older rows read as null; an undecodable record keeps its bytes and its reason;
and a cold read gives back the hot tier's entries byte for byte."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import duckdb
import pytest

from schooner.storage.cold.formats import ColdTables
from schooner.storage.cold.iceberg.clients import from_url
from schooner.storage.cold.location import ColdLocation
from schooner.storage.log.entry import Record

from .conftest import USER_V1, USER_V2, avro, register

OLD = 1_700_000_000_000
ICEBERG = {"schooner.table.format": "iceberg"}


@pytest.fixture
def tables(tmp_path: Path, keyspace: str, redis_server: Any) -> ColdTables:
    location = ColdLocation.from_url(f"file://{tmp_path}/cold")
    return ColdTables(location, keyspace, None, functools.partial(from_url, redis_server.url))


@pytest.fixture
def iceberg_duck() -> duckdb.DuckDBPyConnection:
    from duckdb_extensions import import_extension

    import_extension("iceberg")
    con = duckdb.connect()
    con.execute("LOAD iceberg")
    return con


def _users(schema: Any, ids: range, schema_id: int | None, **extra: Any) -> list[Record]:
    return [
        Record(OLD + i, b"k%d" % i, avro(schema, {"id": i, "name": f"user-{i}", **extra}, schema_id))
        for i in ids
    ]


def _scan(tables: ColdTables, log: Any) -> str:
    store = tables.iceberg
    table = store.catalog.load_table(store.identifier(log.topic))
    return f"iceberg_scan('{table.metadata_location}')"


@pytest.mark.parametrize("mode", ["schema_id_prefix", "schema_latest"])
def test_an_avro_topic_is_queried_on_its_typed_columns(make_log, tables, iceberg_duck, mode) -> None:
    log = make_log("users", **ICEBERG, **{"schooner.table.value.mode": mode})
    v1 = register(log, "users-value", USER_V1)
    log.append(_users(USER_V1, range(10), v1))
    piece = log.slice(0, 10_000)
    assert tables.archive(log.topic, 0, piece).records == 10
    got = iceberg_duck.execute(
        f"SELECT value.name, value_schema_id FROM {_scan(tables, log)} WHERE value.id > 5 ORDER BY value.id"
    ).fetchall()
    assert got == [(f"user-{i}", v1) for i in range(6, 10)]
    assert tables.read(log.topic, 0, 0, max_bytes=1 << 20).entries == log.read(0, 1000).entries


def test_evolution_adds_a_column_and_undecodable_records_say_why(make_log, tables, iceberg_duck) -> None:
    log = make_log("evolving", **ICEBERG, **{"schooner.table.value.mode": "schema_id_prefix"})
    v1 = register(log, "evolving-value", USER_V1)
    log.append(_users(USER_V1, range(0, 8), v1))
    first = tables.archive(log.topic, 0, log.slice(0, 10_000))
    v2 = register(log, "evolving-value", USER_V2)
    log.append(_users(USER_V2, range(8, 12), v2, email="x@y"))
    log.append([Record(OLD + 12, None, b"not avro")])
    assert tables.archive(log.topic, 0, log.slice(first.end, 10_000)).records == 5
    scan = _scan(tables, log)
    got = iceberg_duck.execute(
        f"SELECT value.id, value.email, value_schema_id FROM {scan} WHERE value.id > 5 ORDER BY value.id"
    ).fetchall()
    assert got == [(6, None, v1), (7, None, v1)] + [(i, "x@y", v2) for i in range(8, 12)]
    (odd,) = iceberg_duck.execute(
        f"SELECT value_raw, value IS NULL, value_error FROM {scan} WHERE value_error IS NOT NULL"
    ).fetchall()
    assert odd[0] == b"not avro" and odd[1] is True and "magic byte" in odd[2]
    assert tables.read(log.topic, 0, 0, max_bytes=1 << 20).entries == log.read(0, 1000).entries
