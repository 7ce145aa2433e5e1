"""The Iceberg catalog of the cold tier: RedisCatalog, kept in the keyspace's Redis, so that every broker
(and a Spark job) shares it without another server; or a standard one (SQL, REST) by URL.

An Iceberg catalog holds one fact per table: where its current metadata file is. RedisCatalog keeps it
in a hash (Keyspace.iceberg_tables, pointers.py) and moves it by compare-and-swap (scripts/iceberg_swap.lua,
run on a blocking client: the cold store's calls run in threads): a commit names the
metadata file it was built on, and a commit built on any other (another writer committed first) fails
with CommitFailedException, which the writer answers by loading the table again. Everything else
(schemas, snapshots, properties) is in the metadata files, which every Iceberg reader reads.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pyiceberg.catalog import Catalog, MetastoreCatalog, PropertiesUpdateSummary
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.exceptions import (
    CommitFailedException,
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NoSuchNamespaceError,
    NoSuchTableError,
    NoSuchViewError,
    TableAlreadyExistsError,
)
from pyiceberg.io import load_file_io
from pyiceberg.partitioning import UNPARTITIONED_PARTITION_SPEC, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.serializers import FromInputFile
from pyiceberg.table import CommitTableResponse, Table
from pyiceberg.table.sorting import UNSORTED_SORT_ORDER, SortOrder
from pyiceberg.table.update import TableRequirement, TableUpdate
from pyiceberg.typedef import EMPTY_DICT, Identifier, Properties
from pyiceberg.view import View

from ...keys import Keyspace
from ...redis.calls import Call, run_sync
from . import pointers


class RedisCatalog(MetastoreCatalog):
    """An Iceberg catalog in Redis: the keyspace's table pointers, swapped atomically."""

    def __init__(self, name: str, redis: Any, keyspace: Keyspace, **properties: str) -> None:
        super().__init__(name, **properties)
        self.redis = redis
        self.ks = keyspace

    def _run(self, call: Call[Any]) -> Any:
        return run_sync(self.redis, call)

    # -- tables -------------------------------------------------------------------------------------
    def _field(self, identifier: str | Identifier) -> tuple[str, str, str]:
        """(namespace, table name, hash field) of an identifier."""
        namespace = Catalog.namespace_to_string(Catalog.namespace_from(identifier))
        table = Catalog.table_name_from(identifier)
        return namespace, table, pointers.table_field(namespace, table)

    def _swapped(self, field: str, expected: str | None, new: str | None) -> bool:
        return bool(self._run(pointers.swap(self.ks, field, expected, new)))

    def _location(self, field: str) -> str | None:
        found: str | None = self._run(pointers.location(self.ks, field))
        return found

    def create_table(
        self,
        identifier: str | Identifier,
        schema: Schema | Any,
        location: str | None = None,
        partition_spec: PartitionSpec = UNPARTITIONED_PARTITION_SPEC,
        sort_order: SortOrder = UNSORTED_SORT_ORDER,
        properties: Properties = EMPTY_DICT,
    ) -> Table:
        namespace, table_name, field = self._field(identifier)
        if not self.namespace_exists(namespace):
            raise NoSuchNamespaceError(f"Namespace does not exist: {namespace}")
        staged = self._create_staged_table(
            identifier, schema, location, partition_spec, sort_order, properties
        )
        self._write_metadata(staged.metadata, staged.io, staged.metadata_location)
        if not self._swapped(field, None, staged.metadata_location):
            raise TableAlreadyExistsError(f"Table {namespace}.{table_name} already exists")
        return self.load_table(identifier)

    def register_table(
        self, identifier: str | Identifier, metadata_location: str, overwrite: bool = False
    ) -> Table:
        namespace, table_name, field = self._field(identifier)
        if not self.namespace_exists(namespace):
            raise NoSuchNamespaceError(f"Namespace does not exist: {namespace}")
        current = self._location(field)
        if (current is not None and not overwrite) or not self._swapped(field, current, metadata_location):
            raise TableAlreadyExistsError(f"Table {namespace}.{table_name} already exists")
        return self.load_table(identifier)

    def load_table(self, identifier: str | Identifier) -> Table:
        namespace, table_name, field = self._field(identifier)
        location = self._location(field)
        if location is None:
            raise NoSuchTableError(f"Table does not exist: {namespace}.{table_name}")
        io = load_file_io(properties=self.properties, location=location)
        metadata = FromInputFile.table_metadata(io.new_input(location))
        return Table(
            identifier=Catalog.identifier_to_tuple(identifier),
            metadata=metadata,
            metadata_location=location,
            io=self._load_file_io(metadata.properties, location),
            catalog=self,
        )

    def drop_table(self, identifier: str | Identifier) -> None:
        namespace, table_name, field = self._field(identifier)
        if not self._run(pointers.drop(self.ks, field)):
            raise NoSuchTableError(f"Table does not exist: {namespace}.{table_name}")

    def rename_table(self, from_identifier: str | Identifier, to_identifier: str | Identifier) -> Table:
        raise NotImplementedError("the cold tier's tables are named after their topic's id")

    def commit_table(
        self, table: Table, requirements: tuple[TableRequirement, ...], updates: tuple[TableUpdate, ...]
    ) -> CommitTableResponse:
        """The updates on the table as the commit found it, swapped in only if that is the table's
        current metadata file still: a commit against a table another writer moved on fails (stricter
        than the requirements alone, so an update without requirements never overwrites a newer one)."""
        _, _, field = self._field(table.name())
        current_location = self._location(field)
        if current_location is None:
            current = None
        elif current_location == table.metadata_location:
            current = table  # the writer's copy: its base is the current metadata (no read needed)
        else:
            raise CommitFailedException(f"{'.'.join(table.name())}: another writer committed first")
        staged = self._update_and_stage_table(current, table.name(), requirements, updates)
        if current is not None and staged.metadata == current.metadata:
            return _response(current.metadata, current.metadata_location)
        self._write_metadata(staged.metadata, staged.io, staged.metadata_location)
        if not self._swapped(field, current_location, staged.metadata_location):
            staged.io.delete(staged.metadata_location)  # nothing names it
            raise CommitFailedException(f"{'.'.join(table.name())}: another writer committed first")
        return _response(staged.metadata, staged.metadata_location)

    def list_tables(self, namespace: str | Identifier) -> list[Identifier]:
        name = Catalog.namespace_to_string(Catalog.identifier_to_tuple(namespace))
        if not self.namespace_exists(name):
            raise NoSuchNamespaceError(f"Namespace does not exist: {name}")
        found = [
            (*Catalog.identifier_to_tuple(ns), t)
            for ns, t in self._run(pointers.tables(self.ks))
            if ns == name
        ]
        return sorted(found)

    # -- namespaces ---------------------------------------------------------------------------------
    def _namespaces(self) -> dict[str, Properties]:
        found: dict[str, Properties] = self._run(pointers.namespaces(self.ks))
        return found

    def create_namespace(self, namespace: str | Identifier, properties: Properties = EMPTY_DICT) -> None:
        name = Catalog.namespace_to_string(Catalog.identifier_to_tuple(namespace))
        if not self._run(pointers.create_namespace(self.ks, name, dict(properties))):
            raise NamespaceAlreadyExistsError(f"Namespace {name} already exists")

    def namespace_exists(self, namespace: str | Identifier) -> bool:
        name = Catalog.namespace_to_string(Catalog.identifier_to_tuple(namespace))
        return self._run(pointers.namespace(self.ks, name)) is not None

    def drop_namespace(self, namespace: str | Identifier) -> None:
        if self.list_tables(namespace):
            raise NamespaceNotEmptyError(f"Namespace {namespace} is not empty")
        name = Catalog.namespace_to_string(Catalog.identifier_to_tuple(namespace))
        self._run(pointers.drop_namespace(self.ks, name))

    def list_namespaces(self, namespace: str | Identifier = ()) -> list[Identifier]:
        parent = Catalog.identifier_to_tuple(namespace)
        found = {Catalog.identifier_to_tuple(n) for n in self._namespaces()}
        return sorted(
            {n[: len(parent) + 1] for n in found if len(n) > len(parent) and n[: len(parent)] == parent}
        )

    def load_namespace_properties(self, namespace: str | Identifier) -> Properties:
        name = Catalog.namespace_to_string(Catalog.identifier_to_tuple(namespace))
        found = self._run(pointers.namespace(self.ks, name))
        if found is None:
            raise NoSuchNamespaceError(f"Namespace does not exist: {name}")
        return dict(found)

    def update_namespace_properties(
        self, namespace: str | Identifier, removals: set[str] | None = None, updates: Properties = EMPTY_DICT
    ) -> PropertiesUpdateSummary:
        name = Catalog.namespace_to_string(Catalog.identifier_to_tuple(namespace))
        current = self.load_namespace_properties(name)
        summary, updated = self._get_updated_props_and_update_summary(current, removals, updates)
        self._run(pointers.put_namespace(self.ks, name, dict(updated)))
        return summary

    # -- views: none --------------------------------------------------------------------------------
    def list_views(self, namespace: str | Identifier) -> list[Identifier]:
        return []

    def view_exists(self, identifier: str | Identifier) -> bool:
        return False

    def load_view(self, identifier: str | Identifier) -> View:
        raise NoSuchViewError(f"View does not exist: {identifier}")

    def register_view(self, identifier: str | Identifier, metadata_location: str) -> View:
        raise NotImplementedError("the cold tier's catalog holds no views")

    def drop_view(self, identifier: str | Identifier) -> None:
        raise NoSuchViewError(f"View does not exist: {identifier}")


def _response(metadata: Any, location: str) -> CommitTableResponse:
    return CommitTableResponse(metadata=metadata, metadata_location=location)  # type: ignore[call-arg]


def open_catalog(
    url: str | None, keyspace: str, redis: Callable[[], Any] | None, io_properties: Mapping[str, str]
) -> Catalog:
    """The catalog a URL names (sql+sqlite:///..., postgresql://..., http(s)://...); None: the Redis
    catalog of the keyspace, on a client redis() makes."""
    props = dict(io_properties)
    if url is None:
        if redis is None:
            raise ValueError("an Iceberg topic's catalog is kept in Redis: the cold store needs a client")
        return RedisCatalog("schooner", redis(), Keyspace(keyspace), **props)
    if url.startswith(("http://", "https://")):
        return RestCatalog("schooner", uri=url, **props)
    sql = url.removeprefix("sql+")
    if sql.split("://", 1)[0].split("+", 1)[0] in ("sqlite", "postgresql", "mysql"):
        return SqlCatalog("schooner", uri=sql, **props)
    raise ValueError(f"cold_store_catalog must be sql+sqlite://, postgresql:// or http(s)://: {url!r}")
