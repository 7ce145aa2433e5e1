"""ColdStore: the cold tier's blocking operations on one Delta table per topic (delta-rs, no JVM).

Exactly once between the tiers: each archive commit carries the Delta app transaction
("<topic>/<partition>", end), where end is the offset after the last record it adds. The table keeps the
latest version per app id, so archived_end() is read from the table itself: a step retried after a crash
at any point (before the commit, or after it but before the caller learned of it) finds what is
committed and adds nothing twice. Two writers committing the same partition at once conflict in Delta's
own check: one commit fails (ArchiveConflict or, when the other had the same end, a no-op).

Reads find a partition's files from the add actions' offset statistics (the file index, cached per
table version) and read only those from the start offset on, whole row groups skipped by Parquet
statistics. Trims are Delta deletes (files below the offset removed, a straddling file rewritten), with
("<topic>/<partition>/start", offset) in the commit, then a vacuum of the removed files.

Every method blocks: the broker calls them through aio.AsyncColdStore, in threads.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Any, TypeVar

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
from deltalake import CommitProperties, DeltaTable, Transaction, WriterProperties, write_deltalake
from deltalake.exceptions import CommitFailedError, DeltaError, TableNotFoundError

from ..log.read import PartitionRead
from ..log.transactions import AbortedTransaction
from ..topics.metadata import Topic
from . import layout
from .errors import ArchiveConflict, ColdDataCorrupt, ColdStoreUnavailable
from .file_cache import FileCache
from .index import FileIndex
from .location import ColdLocation
from .source import ArchiveSlice, decoded_sides

T = TypeVar("T")

ROW_GROUP_ROWS = 32768  # a read from the middle of a file reads about one row group more than it needs
INDEX_MAX_AGE_SECONDS = 5.0  # a cached file index is read again after this (trims by other brokers)
COMMIT_ATTEMPTS = 3


@dataclass(frozen=True, slots=True)
class Archived:
    records: int  # rows this call added (0: the slice was committed before)
    end: int  # the partition's archived end after the call
    bytes: int = 0  # the added rows' keys, values and headers


@dataclass(frozen=True, slots=True)
class ColdRead:
    """A read of the cold tier, in the hot tier's shape: entries as XRANGE gives them."""

    entries: list[Any]
    aborted: tuple[AbortedTransaction, ...]  # read_committed: as PartitionRead.aborted
    next_offset: int  # after the last entry (the start offset when there is none)
    start_offset: int  # the cold tier's first offset of the partition
    end_offset: int  # its archived end
    bytes: int = 0  # the entries' keys, values and headers (layout.payload_bytes: the remote fetch bytes)

    def as_partition_read(
        self, high_watermark: int, last_stable_offset: int, log_start_offset: int | None = None
    ) -> PartitionRead:
        """The read as the partition reader takes a Redis read: the bounds are the whole log's (the hot
        tier's high watermark and LSO; the log start, the cold start unless told)."""
        start = self.start_offset if log_start_offset is None else log_start_offset
        return PartitionRead(self.entries, start, high_watermark, start, last_stable_offset, self.aborted)


@dataclass
class _TopicTable:
    uri: str
    topic: str
    lock: threading.Lock = field(default_factory=threading.Lock)
    table: DeltaTable | None = None
    index: FileIndex | None = None
    loaded_at: float = 0.0


class ColdStore:
    def __init__(
        self,
        location: ColdLocation,
        namespace: str,
        row_group_rows: int = ROW_GROUP_ROWS,
        files: FileCache | None = None,
    ) -> None:
        """files: the decoded files' cache, which the stores of one deployment's keyspaces share."""
        self.location = location
        self.namespace = namespace
        self._options = dict(location.storage_options)
        self._writer = WriterProperties(compression="ZSTD", max_row_group_size=row_group_rows)
        self._tables: dict[tuple[str, str], _TopicTable] = {}
        self._tables_lock = threading.Lock()
        self._files = FileCache() if files is None else files

    @property
    def files(self) -> FileCache:
        return self._files

    def table_uri(self, topic: Topic) -> str:
        return self.location.table_uri(self.namespace, topic.name, topic.id)

    # -- archive ------------------------------------------------------------------------------------
    def archived_end(self, topic: Topic, partition: int) -> int | None:
        """The offset after the partition's last archived record; None when nothing was archived."""
        state = self._state(topic)
        with state.lock, _errors():
            table = self._load(state, refresh=True)
            return None if table is None else table.transaction_version(_app_id(topic, partition))

    def archive(self, topic: Topic, partition: int, piece: ArchiveSlice) -> Archived:
        """Appends the slice's records, once: what the table already holds of it is left out."""
        app_id = _app_id(topic, partition)
        state = self._state(topic)
        with state.lock, _errors():
            for attempt in range(COMMIT_ATTEMPTS):
                # The check and the write use one snapshot: Delta's conflict check then refuses the commit
                # if another writer committed this app id after it.
                table = self._load(state, refresh=True) or self._create(state, topic)
                done = table.transaction_version(app_id)
                if done is not None and done >= piece.end:
                    return Archived(0, done)
                if done is not None and done < piece.start:
                    raise ArchiveConflict(f"{app_id}: slice starts at {piece.start}, table ends at {done}")
                rows = layout.archive_rows(topic, partition, piece, from_offset=done or 0)
                commit = CommitProperties(app_transactions=[Transaction(app_id, piece.end)])
                try:
                    self._write(table, rows, commit, merge=bool(decoded_sides(topic)))
                except CommitFailedError:
                    # Another writer committed first: the next attempt sees what it holds.
                    if attempt == COMMIT_ATTEMPTS - 1:
                        raise ArchiveConflict(f"{app_id}: {COMMIT_ATTEMPTS} commits conflicted") from None
                    continue
                return Archived(rows.num_rows, piece.end, layout.payload_bytes(rows))
        raise AssertionError("unreachable")

    def _write(
        self, table: DeltaTable, rows: pa.Table, commit: CommitProperties, merge: bool = False
    ) -> None:
        # Always through a loaded table: Delta's conflict check compares app transactions against the
        # snapshot the writer read, and a write from a bare path has none to compare with. A table with
        # typed columns merges schemas: a schema version's new field (or the first struct) adds a column.
        extra: dict[str, Any] = {"schema_mode": "merge"} if merge else {}
        write_deltalake(
            table,
            rows,
            mode="append",
            partition_by=[layout.PARTITION],
            storage_options=self._options,
            writer_properties=self._writer,
            commit_properties=commit,
            **extra,
        )

    def _create(self, state: _TopicTable, topic: Topic) -> DeltaTable:
        """The topic's table, made empty if it has none (a writer that loses the race to make it loads
        the winner's). Caller holds state.lock."""
        with contextlib.suppress(CommitFailedError):  # another writer made it first
            DeltaTable.create(
                state.uri,
                layout.table_schema(topic),
                mode="ignore",
                partition_by=[layout.PARTITION],
                name=topic.name,
                description=f"Schooner cold tier of topic {topic.name} ({topic.id})",
                configuration={
                    # Statistics only where reads prune by them.
                    "delta.dataSkippingStatsColumns": f"{layout.OFFSET},{layout.TS}",
                },
                storage_options=self._options,
            )
        table = self._load(state, refresh=True)
        if table is None:
            raise ColdStoreUnavailable(f"{state.uri}: the table could not be made")
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
        """Records from `offset` (or the first after it) up to max_bytes as the fetch codec estimates
        them (the first record always) and max_records. committed: the aborted transactions come too.

        The file list and the decoded files are kept (INDEX_MAX_AGE_SECONDS, FileCache), so a read may not
        yet see a trim by another broker. `start` is the log start the caller knows (the broker's tier
        marks, which a trim moves): no row below it is returned, whatever is kept."""
        if start is not None:
            offset = max(offset, start)
        columns = layout.read_columns(topic)
        renamed = columns is not layout.READ_COLUMNS  # a decoded table: its raw columns, renamed

        def load(fragment: Any) -> pa.Table:
            # A file a delete rewrote (DataFusion) holds view types: the cache casts them back.
            rows = fragment.to_table(columns=columns)
            return layout.kafka_rows(rows) if renamed else rows

        def from_index(index: FileIndex) -> ColdRead:
            return read_index(
                index, self._files, topic, partition, offset, max_bytes, max_records, committed, load
            )

        return self._with_index(topic, partition, offset, from_index)

    def start_offset(self, topic: Topic, partition: int, archived_end: int | None = None) -> int | None:
        """The partition's first cold offset (None when the cold tier holds none of it). archived_end:
        the end the caller knows archived; an index cached before those rows came is read again (it
        would say "none")."""
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
        """Kafka's rule on the cold rows: the earliest offset whose timestamp is at or after the target,
        and that timestamp; None when no cold record qualifies. archived_end: the end the caller knows
        archived; a file index that does not reach it is read again (an index cached before another
        broker archived knows fewer rows, and None would then say every record is older). start: the
        cold start the caller knows (the tier marks); rows below it, which a cached index may still
        list after a trim, never match."""

        def lookup(index: FileIndex) -> tuple[int, int] | None:
            return earliest_in_index(index, partition, timestamp, start)

        known = None if archived_end is None or archived_end <= 0 else archived_end - 1
        return self._with_index(topic, partition, known, lookup)

    def _with_index(
        self, topic: Topic, partition: int, offset: int | None, use: Callable[[FileIndex], T]
    ) -> T:
        """use(index), on the cached file index while it holds; a file that has gone (a trim and vacuum
        since the index was read) reads the table again, once."""
        state = self._state(topic)
        for attempt in range(2):
            with state.lock, _errors():
                index = self._index(state, force=attempt > 0, beyond=(partition, offset))
            try:
                return use(index)
            except (FileNotFoundError, OSError, pa.ArrowInvalid) as exc:
                if attempt:
                    raise ColdDataCorrupt(f"{state.uri}: {exc}") from exc
        raise AssertionError("unreachable")

    # -- retention ----------------------------------------------------------------------------------
    def trim(self, topic: Topic, partition: int, below: int, vacuum: bool = True) -> int:
        """Deletes the partition's rows below the offset (DeleteRecords, retention); then, with vacuum,
        removes the files that held them. Returns the rows deleted."""
        state = self._state(topic)
        with state.lock, _errors():
            table = self._load(state, refresh=True)
            if table is None:
                return 0
            commit = CommitProperties(app_transactions=[Transaction(_start_id(topic, partition), below)])
            result = table.delete(
                f"{layout.PARTITION} = {int(partition)} AND {layout.OFFSET} < {int(below)}",
                writer_properties=self._writer,
                commit_properties=commit,
            )
            state.index = None
            if vacuum:
                self._vacuum(table)
            return int(result.get("num_deleted_rows", 0))

    def vacuum(self, topic: Topic) -> list[str]:
        """Removes the files that deletes took out of the table; returns their paths."""
        state = self._state(topic)
        with state.lock, _errors():
            table = self._load(state, refresh=True)
            return [] if table is None else self._vacuum(table)

    @staticmethod
    def _vacuum(table: DeltaTable) -> list[str]:
        # Lite vacuum (full=False) removes only files the log's remove actions name, never a file another
        # writer has written and not committed yet; retention 0, as the archived end is in the log.
        return table.vacuum(retention_hours=0, dry_run=False, enforce_retention_duration=False, full=False)

    def drop(self, topic: Topic) -> None:
        """Removes the topic's whole table (DeleteTopics): its data files and its log."""
        key = (topic.name, str(topic.id))
        with self._tables_lock:
            state = self._tables.pop(key, None)
        fs, _ = self.location.filesystem()
        path = self.table_uri(topic).removeprefix("s3://")
        with _errors():
            if state is not None:
                with state.lock:  # no archive step of this process is committing meanwhile
                    _remove(fs, path)
            else:
                _remove(fs, path)

    # -- the tables ---------------------------------------------------------------------------------
    def _state(self, topic: Topic) -> _TopicTable:
        key = (topic.name, str(topic.id))
        with self._tables_lock:
            state = self._tables.get(key)
            if state is None:
                state = self._tables[key] = _TopicTable(self.table_uri(topic), topic.name)
            return state

    def _load(self, state: _TopicTable, refresh: bool) -> DeltaTable | None:
        """The topic's table at its latest version (None while it has none). Caller holds state.lock."""
        if state.table is None:
            try:
                state.table = DeltaTable(state.uri, storage_options=self._options)
            except TableNotFoundError:
                return None
            state.loaded_at = time.monotonic()
        elif refresh:
            state.table.update_incremental()
            state.loaded_at = time.monotonic()
        return state.table

    def _index(self, state: _TopicTable, force: bool, beyond: tuple[int, int | None]) -> FileIndex:
        """The file index, read again when forced, old, or asked for an offset past what it knows."""
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
        table = self._load(state, refresh=True)
        if table is None:
            return FileIndex.empty()
        if index is None or index.version != table.version():
            index = state.index = FileIndex.of(table, state.topic)
        state.loaded_at = time.monotonic()
        return index


def _remove(fs: pafs.FileSystem, path: str) -> None:
    if fs.get_file_info(path).type != pafs.FileType.NotFound:
        fs.delete_dir(path)


def _app_id(topic: Topic, partition: int) -> str:
    return f"{topic.name}/{partition}"


def _start_id(topic: Topic, partition: int) -> str:
    return f"{topic.name}/{partition}/start"


def read_index(
    index: FileIndex,
    files: FileCache,
    topic: Topic,
    partition: int,
    offset: int,
    max_bytes: int,
    max_records: int,
    committed: bool,
    load: Callable[[Any], pa.Table],
) -> ColdRead:
    """A cold read through a file index, for every table format: the files from the offset on, decoded
    once (FileCache) by load(fragment) into the Kafka record's columns, within the byte budget and row cap."""
    picked: list[pa.Table] = []
    budget_bytes, budget_rows = max_bytes, max_records
    for path, fragment in index.fragments_from(partition, offset):
        rows = files.rows_from(path, offset, partial(load, fragment))
        rows, budget_bytes, full = _within(rows, budget_bytes, budget_rows, not picked)
        if rows.num_rows:
            picked.append(rows)
            budget_rows -= rows.num_rows
        if full or budget_rows <= 0:
            break
    rows = pa.concat_tables(picked) if picked else layout.READ_SCHEMA.empty_table()
    start, end = index.bounds(partition)
    next_offset = rows.column(layout.OFFSET)[-1].as_py() + 1 if rows.num_rows else max(offset, start)
    aborted = layout.aborted_in(rows, next_offset) if committed else ()
    entries = layout.to_entries(rows, topic.offsets)
    return ColdRead(entries, aborted, next_offset, start, end, layout.payload_bytes(rows))


def earliest_in_index(
    index: FileIndex, partition: int, timestamp: int, start: int | None
) -> tuple[int, int] | None:
    """Kafka's timestamp rule on a partition's files, for every table format: the earliest offset (not
    below `start`) whose timestamp is at or after the target, and that timestamp."""
    wanted = pc.field(layout.TS) >= timestamp
    if start is not None:
        wanted = wanted & (pc.field(layout.OFFSET) >= start)
    for fragment in index.fragments_reaching(partition, timestamp):
        rows = fragment.to_table(filter=wanted, columns=[layout.OFFSET, layout.TS])
        if rows.num_rows:
            first = pc.index(rows.column(layout.OFFSET), pc.min(rows.column(layout.OFFSET))).as_py()
            return rows.column(layout.OFFSET)[first].as_py(), rows.column(layout.TS)[first].as_py()
    return None


def _within(rows: pa.Table, budget: int, max_rows: int, first: bool) -> tuple[pa.Table, int, bool]:
    """The rows that fit the byte budget and row cap (the first record of a read always fits), what is
    left of the budget, and whether the budget is spent."""
    rows = rows.slice(0, max_rows)
    if not rows.num_rows:
        return rows, budget, False
    running = pc.cumulative_sum(layout.fetch_sizes(rows))
    fit = pc.sum(pc.less_equal(running, budget)).as_py() or 0
    if first and fit == 0:
        fit = 1
    spent = running[fit - 1].as_py() if fit else 0
    return rows.slice(0, fit), budget - spent, fit < rows.num_rows


@contextmanager
def _errors() -> Iterator[None]:
    """delta-rs and pyarrow failures as the cold tier's errors (ours pass through)."""
    try:
        yield
    except (OSError, pa.ArrowException, DeltaError) as exc:
        raise ColdStoreUnavailable(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from exc
