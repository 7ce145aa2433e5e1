"""ColdTables: the cold tier of every topic, whatever its table format (schooner.table.format, fixed at
the topic's creation): each call goes to the Delta ColdStore or the IcebergColdStore by the topic's
format, both made at their first use, so pyiceberg loads only in a process with an Iceberg topic.

Both answer with the same types (table.Archived, table.ColdRead), so the broker and the Spark connector
never ask which format a topic has.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..topics.metadata import Topic
from .file_cache import FileCache
from .location import ColdLocation
from .source import ArchiveSlice
from .table import Archived, ColdRead, ColdStore

if TYPE_CHECKING:
    from .iceberg.store import IcebergColdStore

DELTA, ICEBERG = "delta", "iceberg"


class ColdTables:
    def __init__(
        self,
        location: ColdLocation,
        namespace: str,
        catalog_url: str | None = None,
        redis: Callable[[], Any] | None = None,
        files: FileCache | None = None,
    ) -> None:
        """catalog_url: the Iceberg catalog (cold_store_catalog); None: the one kept in Redis, on a
        blocking client redis() makes when an Iceberg topic first needs it. files: the decoded files'
        cache, one per deployment (every keyspace's tables in one byte budget)."""
        self.location = location
        self.files = FileCache() if files is None else files
        self.namespace = namespace
        self.catalog_url = catalog_url
        self._redis = redis
        self._delta: ColdStore | None = None
        self._iceberg: IcebergColdStore | None = None
        self._lock = threading.Lock()

    @property
    def delta(self) -> ColdStore:
        with self._lock:
            if self._delta is None:
                self._delta = ColdStore(self.location, self.namespace, files=self.files)
            return self._delta

    @property
    def iceberg(self) -> IcebergColdStore:
        with self._lock:
            if self._iceberg is None:
                from .iceberg.store import IcebergColdStore

                self._iceberg = IcebergColdStore(
                    self.location, self.namespace, self.catalog_url, self._redis, files=self.files
                )
            return self._iceberg

    def of(self, topic: Topic) -> ColdStore | IcebergColdStore:
        """The store of the topic's table format."""
        return self.iceberg if topic.table_format == ICEBERG else self.delta

    def table_uri(self, topic: Topic) -> str:
        return self.location.table_uri(self.namespace, topic.name, topic.id)

    def archived_end(self, topic: Topic, partition: int) -> int | None:
        return self.of(topic).archived_end(topic, partition)

    def archive(self, topic: Topic, partition: int, piece: ArchiveSlice) -> Archived:
        return self.of(topic).archive(topic, partition, piece)

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
        return self.of(topic).read(topic, partition, offset, max_bytes, max_records, committed, start)

    def start_offset(self, topic: Topic, partition: int, archived_end: int | None = None) -> int | None:
        return self.of(topic).start_offset(topic, partition, archived_end)

    def offset_for_timestamp(
        self,
        topic: Topic,
        partition: int,
        timestamp: int,
        archived_end: int | None = None,
        start: int | None = None,
    ) -> tuple[int, int] | None:
        return self.of(topic).offset_for_timestamp(topic, partition, timestamp, archived_end, start)

    def trim(self, topic: Topic, partition: int, below: int, vacuum: bool = True) -> int:
        return self.of(topic).trim(topic, partition, below, vacuum)

    def vacuum(self, topic: Topic) -> list[str]:
        return self.of(topic).vacuum(topic)

    def drop(self, topic: Topic) -> None:
        self.of(topic).drop(topic)
