"""Fixtures of the Iceberg cold store: a table folder per test, its catalog in the test redis-server (the
Redis catalog, in the test's keyspace) unless a test opens another."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pytest

from schooner.storage.cold.iceberg.clients import from_url
from schooner.storage.cold.iceberg.store import IcebergColdStore
from schooner.storage.cold.location import ColdLocation


def parquet_files(root: Path) -> list[Path]:
    return sorted(root.rglob("*.parquet"))


@pytest.fixture
def open_iceberg(tmp_path: Path, keyspace: str, redis_server: Any) -> Any:
    def make(catalog_url: str | None = None) -> IcebergColdStore:
        location = ColdLocation.from_url(f"file://{tmp_path}/cold")
        return IcebergColdStore(
            location, keyspace, catalog_url, functools.partial(from_url, redis_server.url)
        )

    return make


@pytest.fixture
def iceberg(open_iceberg: Any) -> IcebergColdStore:
    return open_iceberg()


@pytest.fixture
def make_iceberg_log(make_log: Any) -> Any:
    """A topic whose table format is Iceberg (the store itself does not look, the façade does)."""
    return functools.partial(make_log, **{"schooner.table.format": "iceberg"})
