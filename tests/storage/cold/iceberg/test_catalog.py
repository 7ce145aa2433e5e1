"""The tables are plain Iceberg: pyiceberg and DuckDB read them without Schooner. The Redis catalog keeps
each table's metadata pointer under one hash tag and refuses a commit built on a stale one; a standard
catalog (SQL) works in its place."""

from __future__ import annotations

import tempfile

import pyarrow as pa
import pytest
from pyiceberg.exceptions import CommitFailedException, TableAlreadyExistsError
from redis.cluster import key_slot

from schooner.storage.cold.iceberg.catalog import RedisCatalog, open_catalog
from schooner.storage.cold.iceberg.clients import from_url
from schooner.storage.keys import Keyspace
from schooner.storage.log.entry import Record

OLD = 1_700_000_000_000


def _archived(log, cold) -> int:
    base = log.append([Record(OLD + i, b"k%d" % i, b"v%d" % i) for i in range(30)])
    cold.archive(log.topic, 0, log.slice(base, 20))
    cold.archive(log.topic, 0, log.slice(base + 20, 20))
    return base


def test_pyiceberg_and_duckdb_read_the_table(make_iceberg_log, iceberg) -> None:
    import duckdb
    from duckdb_extensions import import_extension

    log = make_iceberg_log()
    base = _archived(log, iceberg)
    table = iceberg.catalog.load_table(iceberg.identifier(log.topic))
    rows = table.scan(row_filter="partition = 0").to_arrow().sort_by("offset")
    assert rows.num_rows == 30 and rows.column("value")[0].as_py() == b"v0"
    assert [f.name for f in table.spec().fields] == ["partition"]
    import_extension("iceberg")
    con = duckdb.connect()
    con.execute("LOAD iceberg")
    got = con.execute(
        f"SELECT count(*), min(\"offset\"), max(value) FROM iceberg_scan('{table.metadata_location}')"
    ).fetchone()
    assert got is not None and got[0] == 30 and got[1] == base and got[2] == b"v9"


def test_the_redis_catalog_refuses_a_stale_commit(redis_server, keyspace) -> None:
    ks = Keyspace(keyspace)
    assert key_slot(ks.iceberg_tables.encode()) == key_slot(ks.iceberg_namespaces.encode())
    catalog = RedisCatalog("t", from_url(redis_server.url), ks)
    catalog.create_namespace_if_not_exists("cas")
    schema = pa.schema([pa.field("x", pa.int64())])
    with tempfile.TemporaryDirectory() as folder:
        first = catalog.create_table(("cas", "t"), schema, location=folder)
        with pytest.raises(TableAlreadyExistsError):
            catalog.create_table(("cas", "t"), schema, location=folder)
        stale = catalog.load_table(("cas", "t"))
        with first.transaction() as tx:  # moves the pointer on
            tx.set_properties(a="1")
        with pytest.raises(CommitFailedException), stale.transaction() as tx:
            tx.set_properties(b="2")  # built on the old metadata file
        fresh = catalog.load_table(("cas", "t"))
        assert fresh.properties.get("a") == "1" and "b" not in fresh.properties
        assert catalog.list_tables("cas") == [("cas", "t")]
        assert ("cas",) in catalog.list_namespaces()
        catalog.drop_table(("cas", "t"))
        assert not catalog.table_exists(("cas", "t"))


def test_an_sql_catalog_instead(make_iceberg_log, open_iceberg, tmp_path) -> None:
    url = f"sql+sqlite:///{tmp_path}/catalog.db"
    cold = open_iceberg(url)
    log = make_iceberg_log()
    base = _archived(log, cold)
    assert cold.archived_end(log.topic, 0) == cold.read(log.topic, 0, base, 1 << 20).next_offset
    other = open_catalog(url, "x", None, {})
    assert other.load_table(cold.identifier(log.topic)).scan().to_arrow().num_rows == 30
