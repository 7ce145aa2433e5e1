"""Typed tables' fixtures: schemas registered through the storage Calls, Avro records in Confluent's wire
format, and DuckDB with its Delta extension."""

from __future__ import annotations

import io
import json
from typing import Any

import duckdb
import fastavro
import pytest

from schooner.schemas import wire
from schooner.storage.schemas import registry
from schooner.storage.schemas.registry import StoredSchema

USER_V1 = {
    "type": "record",
    "name": "User",
    "namespace": "test",
    "fields": [{"name": "id", "type": "long"}, {"name": "name", "type": "string"}],
}
USER_V2 = {
    "type": "record",
    "name": "User",
    "namespace": "test",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "name", "type": "string"},
        {"name": "email", "type": ["null", "string"], "default": None},
    ],
}


def register(log: Any, subject: str, schema: Any, schema_type: str = "AVRO") -> int:
    """Registers the schema as the subject's next version; its id."""
    text = schema if isinstance(schema, str) else json.dumps(schema)
    held = log.call(registry.versions(log.ks, subject))
    latest = held[-1].version if held else 0
    call = registry.register(log.ks, subject, f"fp-{subject}-{text}", StoredSchema(schema_type, text), latest)
    done = log.call(call)
    assert done.outcome in ("new", "exists"), done
    return int(done.schema_id)


def avro(schema: Any, datum: Any, schema_id: int | None = None) -> bytes:
    """The datum's Avro binary encoding, after the wire header when given an id."""
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, fastavro.parse_schema(schema), datum)
    return (b"" if schema_id is None else wire.header(schema_id)) + buf.getvalue()


@pytest.fixture
def duck() -> duckdb.DuckDBPyConnection:
    from duckdb_extensions import import_extension

    import_extension("delta")
    con = duckdb.connect()
    con.execute("LOAD delta")
    return con
