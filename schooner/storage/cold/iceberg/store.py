"""IcebergColdStore: the cold tier's blocking operations on one Iceberg table per topic (pyiceberg), with
ColdStore's methods and answers, so the broker and Spark use either through formats.ColdTables.

Exactly once between the tiers: an archive step is one Iceberg transaction that appends the rows and
sets the table property "schooner.end.<partition>" to the offset after them. The table's own metadata is
the record of what it holds: a step retried after a crash at any point reads the property and adds
nothing twice. Two writers at once: the catalog swaps the table pointer only from the metadata file the
commit was built on (RedisCatalog; a standard catalog checks the snapshot it was built on), so one of
them fails and, on its next attempt, finds what the other committed.

Reads never plan a scan: the file index (files.py, from the manifests) is kept per metadata file (and at
most INDEX_MAX_AGE_SECONDS), and the Parquet files are read with pyarrow through FileCache, as ColdStore
reads Delta's. Trims delete the rows below an offset (files dropped, a straddling one rewritten), set
"schooner.start.<partition>", then expire the older snapshots and remove the files only those named.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from functools import partial
from typing import Any, TypeVar

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
from pyiceberg.catalog import Catalog
from pyiceberg.exceptions import CommitFailedException, NoSuchTableError, TableAlreadyExistsError
from pyiceberg.expressions import And, EqualTo, LessThan
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import assign_fresh_schema_ids
from pyiceberg.table import Table
from pyiceberg.table.update import AssertRefSnapshotId
from pyiceberg.transforms import IdentityTransform
from redis.exceptions import RedisError

from ...topics.metadata import Topic
from .. import layout
from ..errors import ArchiveConflict, ColdDataCorrupt, ColdStoreError, ColdStoreUnavailable
from ..file_cache import FileCache
from ..index import FileIndex
from ..location import ColdLocation
from ..source import ArchiveSlice
from ..table import (
    COMMIT_ATTEMPTS,
    INDEX_MAX_AGE_SECONDS,
    ROW_GROUP_ROWS,
    Archived,
    ColdRead,
    earliest_in_index,
    read_index,
)
from . import files
from .catalog import RedisCatalog, open_catalog
from .files import END, START, Listed, ManifestCache
from .naming import NO_RETRIES, iceberg_name, io_properties, table_properties
from .vacuum import MAX_SNAPSHOTS, expire_and_remove

T = TypeVar("T")


@dataclass
class _TopicTable:
    identifier: tuple[str, str]
    location: str
    lock: threading.Lock = field(default_factory=threading.Lock)
    table: Table | None = None
    index: FileIndex | None = None
    listed: dict[str, Listed] = field(default_factory=dict)  # path -> its manifest entry (the index's)
    indexed_at: str | None = None  # the metadata file the index is of
    loaded_at: float = 0.0
    manifests: ManifestCache = field(default_factory=ManifestCache)
    schemas: set[pa.Schema] = field(default_factory=set)  # row schemas the table's schema holds


class IcebergColdStore:
    def __init__(
        self,
        location: ColdLocation,
        namespace: str,
        catalog_url: str | None = None,
        redis: Callable[[], Any] | None = None,
        row_group_rows: int = ROW_GROUP_ROWS,
        files: FileCache | None = None,
    ) -> None:
        """catalog_url: a standard catalog (catalog.open_catalog); None: the Redis catalog, on a blocking
        client that redis() makes (once, at the first call that needs the catalog). files: as ColdStore's."""
        self.location = location
        self.namespace = namespace
        self.row_group_rows = row_group_rows
        self._catalog_url, self._redis = catalog_url, redis
        self._catalog: Catalog | None = None
        self._tables: dict[tuple[str, str], _TopicTable] = {}
        self._tables_lock = threading.Lock()
        self._files = FileCache() if files is None else files
        self.fs, _ = location.filesystem()

    @property
    def catalog(self) -> Catalog:
        with self._tables_lock:
            if self._catalog is None:
                self._catalog = open_catalog(
                    self._catalog_url, self.namespace, self._redis, io_properties(self.location)
                )
                self._catalog.create_namespace_if_not_exists(self.iceberg_namespace)
            return self._catalog

    @property
    def iceberg_namespace(self) -> str:
        return iceberg_name(self.namespace)

    def identifier(self, topic: Topic) -> tuple[str, str]:
        """The topic's table: a topic created again after a delete (a new id) never sees the old one's."""
        return self.iceberg_namespace, iceberg_name(f"{topic.name}_{topic.id.hex}")

    def table_uri(self, topic: Topic) -> str:
        return self.location.table_uri(self.namespace, topic.name, topic.id)

    # -- archive ------------------------------------------------------------------------------------
    def archived_end(self, topic: Topic, partition: int) -> int | None:
        """The offset after the partition's last archived record; None when nothing was archived."""
        state = self._state(topic)
        with state.lock, _errors():
            table = self._load(state)
            return None if table is None else _prop(table, END, partition)

    def archive(self, topic: Topic, partition: int, piece: ArchiveSlice) -> Archived:
        """Appends the slice's records, once: what the table already holds of it is left out."""
        state = self._state(topic)
        with state.lock, _errors():
            for attempt in range(COMMIT_ATTEMPTS):
                table = self._load(state) or self._create(state, topic)
                done = _prop(table, END, partition)
                if done is not None and done >= piece.end:
                    return Archived(0, done)
                if done is not None and done < piece.start:
                    raise ArchiveConflict(
                        f"{topic.name}/{partition}: slice starts at {piece.start}, table ends at {done}"
                    )
                rows = layout.archive_rows(topic, partition, piece, from_offset=done or 0)
                try:
                    self._commit(state, table, rows, {END + str(partition): str(piece.end)})
                except CommitFailedException:
                    # Another writer committed first: the next attempt sees what it holds.
                    state.table = None
                    if attempt == COMMIT_ATTEMPTS - 1:
                        raise ArchiveConflict(
                            f"{topic.name}/{partition}: {COMMIT_ATTEMPTS} commits conflicted"
                        ) from None
                    continue
                if len(table.snapshots()) > MAX_SNAPSHOTS:
                    self._vacuum(table)  # appends remove no file: this bounds the metadata file
                return Archived(rows.num_rows, piece.end, layout.payload_bytes(rows))
        raise AssertionError("unreachable")

    def _commit(self, state: _TopicTable, table: Table, rows: pa.Table, props: dict[str, str]) -> None:
        """The rows and properties in one transaction; the table's schema grows first (same commit) when
        the rows carry columns it lacks."""
        if any(table.properties.get(k) != v for k, v in NO_RETRIES.items()):  # a table made elsewhere
            with table.transaction() as tx:
                tx.set_properties(NO_RETRIES)
        known = rows.schema in state.schemas
        with table.transaction() as tx:
            if not known:
                with tx.update_schema() as update:
                    update.union_by_name(rows.schema)
            if rows.num_rows:
                tx.append(rows)  # asserts the snapshot it was built on
            else:  # the same check without a snapshot, for catalogs that apply only the requirements
                current = table.current_snapshot()
                ref = AssertRefSnapshotId(snapshot_id=current and current.snapshot_id, ref="main")  # type: ignore[call-arg]
                tx._apply((), (ref,))
            tx.set_properties(props)
        state.schemas.add(rows.schema)
        state.loaded_at = time.monotonic()

    def _create(self, state: _TopicTable, topic: Topic) -> Table:
        """The topic's table, made empty (a writer that loses the race to make it loads the winner's), with
        the topic's columns (typed columns' structs join with the first rows that have them)."""
        schema = assign_fresh_schema_ids(self.catalog._convert_schema_if_needed(layout.table_schema(topic)))
        source = schema.find_field(layout.PARTITION).field_id
        spec = PartitionSpec(PartitionField(source, 1000, IdentityTransform(), layout.PARTITION))
        with suppress(TableAlreadyExistsError):
            self.catalog.create_table(
                state.identifier, schema, location=state.location, partition_spec=spec,
                properties=table_properties(self.row_group_rows),
            )  # fmt: skip
        table = self._load(state)
        if table is None:
            raise ColdStoreUnavailable(f"{state.location}: the table could not be made")
        return table

    # -- reads --------------------------------------------------------------------------------------
    def read(
        self,
        topic: Topic,
        partition: int,
        offset: int,
        max_bytes: int,
        max_records: int = 100_000,
        committed: bool = False,
        start: int | None = None,
    ) -> ColdRead:
        """ColdStore.read: records from `offset` (never below `start`) up to max_bytes and max_records."""
        if start is not None:
            offset = max(offset, start)

        columns = layout.read_columns(topic)

        def from_index(index: FileIndex) -> ColdRead:
            load = partial(_decode, columns=columns)
            return read_index(
                index, self._files, topic, partition, offset, max_bytes, max_records, committed, load
            )

        return self._with_index(topic, partition, offset, from_index)

    def start_offset(self, topic: Topic, partition: int, archived_end: int | None = None) -> int | None:
        known = None if archived_end is None or archived_end <= 0 else archived_end - 1
        return self._with_index(topic, partition, known, lambda index: index.start(partition))

    def offset_for_timestamp(
        self,
        topic: Topic,
        partition: int,
        timestamp: int,
        archived_end: int | None = None,
        start: int | None = None,
    ) -> tuple[int, int] | None:
        """ColdStore.offset_for_timestamp: the earliest cold offset at or after the timestamp."""

        def lookup(index: FileIndex) -> tuple[int, int] | None:
            return earliest_in_index(index, partition, timestamp, start)

        known = None if archived_end is None or archived_end <= 0 else archived_end - 1
        return self._with_index(topic, partition, known, lookup)

    def _with_index(
        self, topic: Topic, partition: int, offset: int | None, use: Callable[[FileIndex], T]
    ) -> T:
        state = self._state(topic)
        for attempt in range(2):
            with state.lock, _errors():
                index = self._index(state, force=attempt > 0, beyond=(partition, offset))
            try:
                return use(index)
            except (FileNotFoundError, OSError, pa.ArrowInvalid) as exc:
                if attempt:
                    raise ColdDataCorrupt(f"{state.location}: {exc}") from exc
        raise AssertionError("unreachable")

    # -- retention ----------------------------------------------------------------------------------
    def trim(self, topic: Topic, partition: int, below: int, vacuum: bool = True) -> int:
        """Deletes the partition's rows below the offset and records the new start, in one commit; then,
        with vacuum, expires the older snapshots and removes the files they alone named."""
        state = self._state(topic)
        with state.lock, _errors():
            for attempt in range(COMMIT_ATTEMPTS):
                table = self._load(state)
                if table is None:
                    return 0
                index = self._index(state, force=True, beyond=(partition, None))
                deleted = self._rows_below(state, index, partition, below)
                start = max(below, _prop(table, START, partition) or 0)
                try:
                    with table.transaction() as tx:
                        if deleted:
                            tx.delete(_below(partition, below))
                        tx.set_properties({START + str(partition): str(start)})
                except CommitFailedException:
                    state.table = None
                    if attempt == COMMIT_ATTEMPTS - 1:
                        raise ColdStoreUnavailable(f"{topic.name}/{partition}: trim conflicted") from None
                    continue
                state.index = None
                if vacuum:
                    self._vacuum(table)
                return deleted
        raise AssertionError("unreachable")

    def _rows_below(self, state: _TopicTable, index: FileIndex, partition: int, below: int) -> int:
        count = 0
        for f in index.files.get(partition, []):
            if f.min_offset >= below:
                break
            if f.max_offset < below:
                count += state.listed[f.path].records
            else:
                offsets = index.fragments[f.path].to_table(columns=[layout.OFFSET]).column(layout.OFFSET)
                count += int(pc.sum(pc.less(offsets, below)).as_py() or 0)
        return count

    def vacuum(self, topic: Topic) -> list[str]:
        """Removes the data files no current snapshot names (those deletes took out); returns them."""
        state = self._state(topic)
        with state.lock, _errors():
            table = self._load(state)
            return [] if table is None else self._vacuum(table)

    def _vacuum(self, table: Table) -> list[str]:
        try:
            return expire_and_remove(table, self.fs)
        except CommitFailedException:
            return []  # another writer committed meanwhile: the next trim or vacuum expires them

    def drop(self, topic: Topic) -> None:
        """Removes the topic's table (DeleteTopics): from the catalog, then its files."""
        key = (topic.name, str(topic.id))
        with self._tables_lock:
            state = self._tables.pop(key, None)
        with _errors():
            lock = state.lock if state is not None else threading.Lock()
            with lock:
                with suppress(NoSuchTableError):
                    self.catalog.drop_table(self.identifier(topic))
                path = files.fs_path(self.table_uri(topic))
                if self.fs.get_file_info(path).type != pafs.FileType.NotFound:
                    self.fs.delete_dir(path)

    # -- the tables ---------------------------------------------------------------------------------
    def _state(self, topic: Topic) -> _TopicTable:
        key = (topic.name, str(topic.id))
        with self._tables_lock:
            state = self._tables.get(key)
            if state is None:
                state = self._tables[key] = _TopicTable(self.identifier(topic), self.table_uri(topic))
            return state

    def _load(self, state: _TopicTable) -> Table | None:
        """The table at its current metadata (None while it has none). Caller holds state.lock. With the
        Redis catalog, one HGET when nothing changed."""
        catalog = self.catalog
        if (
            state.table is not None
            and isinstance(catalog, RedisCatalog)
            and catalog._location(catalog._field(state.identifier)[2]) == state.table.metadata_location
        ):
            state.loaded_at = time.monotonic()
            return state.table
        try:
            state.table = catalog.load_table(state.identifier)
        except NoSuchTableError:
            state.table = None
        state.loaded_at = time.monotonic()
        return state.table

    def _index(self, state: _TopicTable, force: bool, beyond: tuple[int, int | None]) -> FileIndex:
        partition, offset = beyond
        index = state.index
        stale = (
            force
            or index is None
            or time.monotonic() - state.loaded_at > INDEX_MAX_AGE_SECONDS
            or (offset is not None and offset >= index.bounds(partition)[1])
        )
        if not stale and index is not None:
            return index
        table = self._load(state)
        if table is None:
            return FileIndex.empty()
        if index is None or state.indexed_at != table.metadata_location:
            listed = state.manifests.files(table)
            state.listed = {f.path: f for f in listed}
            index = state.index = files.index_of(
                table, listed, self.fs, getattr(table.metadata, "last_sequence_number", 0)
            )
            state.indexed_at = table.metadata_location
        return index


def _decode(fragment: Any, columns: list[str]) -> pa.Table:
    """A data file's rows in the read columns: the Kafka record's, a decoded side's raw bytes under its
    name (its typed columns are not read)."""
    return layout.kafka_rows(fragment.to_table(columns=columns)).select(layout.READ_COLUMNS)


def _below(partition: int, offset: int) -> Any:
    """The rows of the partition below the offset, as an Iceberg filter."""
    return And(EqualTo(layout.PARTITION, partition), LessThan(layout.OFFSET, offset))  # type: ignore[call-arg, arg-type]


def _prop(table: Table, prefix: str, partition: int) -> int | None:
    value = table.properties.get(prefix + str(partition))
    return None if value is None else int(value)


@contextmanager
def _errors() -> Iterator[None]:
    """pyiceberg, Redis and pyarrow failures as the cold tier's errors (ours pass through)."""
    try:
        yield
    except ColdStoreError:
        raise
    except (OSError, pa.ArrowException, RedisError, ValueError, NoSuchTableError) as exc:
        raise ColdStoreUnavailable(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from exc
