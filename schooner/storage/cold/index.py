"""FileIndex: which data files hold which offsets and times of each partition, from the table's add
actions (their partition values and min/max statistics), so a read opens only the files it needs."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.dataset as ds
from deltalake import DeltaTable

from . import layout


@dataclass(frozen=True, slots=True)
class DataFile:
    path: str
    min_offset: int
    max_offset: int
    max_timestamp: int


@dataclass(frozen=True, slots=True)
class FileIndex:
    version: int
    files: Mapping[int, list[DataFile]]  # partition -> its files in offset order
    fragments: Mapping[str, Any]  # path -> the pyarrow fragment that reads it
    ends: Mapping[int, int] = field(default_factory=dict)  # partition -> archived end (txn version)
    starts: Mapping[int, int] = field(default_factory=dict)  # partition -> trimmed-below offset

    @classmethod
    def empty(cls) -> FileIndex:
        return cls(-1, {}, {})

    @classmethod
    def of(cls, table: DeltaTable, topic: str) -> FileIndex:
        """The index of the table's current version; topic names its app transactions."""
        actions = pa.table(table.get_add_actions(flatten=True))
        files: dict[int, list[DataFile]] = {}
        if actions.num_rows:
            rows = zip(
                actions.column("path").to_pylist(),
                actions.column(f"partition.{layout.PARTITION}").to_pylist(),
                actions.column(f"min.{layout.OFFSET}").to_pylist(),
                actions.column(f"max.{layout.OFFSET}").to_pylist(),
                actions.column(f"max.{layout.TS}").to_pylist(),
                strict=True,
            )
            for path, partition, low, high, max_ts in rows:
                if low is None or high is None:  # no statistics: read it whatever the offset
                    low, high, max_ts = 0, 2**63 - 1, 2**63 - 1
                files.setdefault(partition, []).append(DataFile(path, low, high, max_ts))
        for listed in files.values():
            listed.sort(key=lambda f: f.min_offset)
        dataset: ds.FileSystemDataset = table.to_pyarrow_dataset()
        fragments = {f.path: f for f in dataset.get_fragments()}
        # delta-rs answers one app id at a time: ask for those of the partitions that have files.
        ends: dict[int, int] = {}
        starts: dict[int, int] = {}
        for p in files:
            end = table.transaction_version(f"{topic}/{p}")
            if end is not None:
                ends[p] = end
            start = table.transaction_version(f"{topic}/{p}/start")
            if start is not None:
                starts[p] = start
        return cls(table.version(), files, fragments, ends, starts)

    def bounds(self, partition: int) -> tuple[int, int]:
        """(first offset, archived end) of the partition; (0, 0) when it has no rows."""
        start = self.start(partition)
        if start is None:
            return 0, 0
        listed = self.files[partition]
        return start, max(self.ends.get(partition, 0), listed[-1].max_offset + 1)

    def start(self, partition: int) -> int | None:
        listed = self.files.get(partition)
        if not listed:
            return None
        return max(listed[0].min_offset, self.starts.get(partition, 0))

    def fragments_from(self, partition: int, offset: int) -> list[tuple[str, Any]]:
        """(path, fragment) of the files that may hold offsets at or after `offset`, in offset order."""
        return [
            (f.path, self.fragments[f.path]) for f in self.files.get(partition, []) if f.max_offset >= offset
        ]

    def fragments_reaching(self, partition: int, timestamp: int) -> list[Any]:
        """The fragments of the files with a record at or after the timestamp, in offset order."""
        return [self.fragments[f.path] for f in self.files.get(partition, []) if f.max_timestamp >= timestamp]
