"""The file index of an Iceberg table's current snapshot: each partition's data files with their offset
and timestamp bounds, read from the manifests (no scan planning per read), as index.FileIndex.

Manifest files never change once written, so each is read once and kept (ManifestCache): loading the
index after an archive commit reads the one new manifest (and the manifest list), not the table.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

import pyarrow.dataset as ds
import pyarrow.fs as pafs
from pyiceberg.conversions import from_bytes
from pyiceberg.manifest import DataFileContent, ManifestContent
from pyiceberg.table import Table
from pyiceberg.types import LongType

from .. import layout
from ..index import DataFile, FileIndex

END = "schooner.end."  # + partition: the offset after its last archived record (the exactly-once mark)
START = "schooner.start."  # + partition: the offset a trim deleted below
_NO_BOUND = 2**63 - 1


@dataclass(frozen=True, slots=True)
class Listed:
    """A live data file of a manifest."""

    path: str  # as the manifest names it (a URI or an absolute path)
    partition: int
    min_offset: int
    max_offset: int
    max_timestamp: int
    records: int
    size: int


class ManifestCache:
    """The live data files of each manifest read, kept while a snapshot of the table names it."""

    def __init__(self) -> None:
        self._kept: dict[str, list[Listed]] = {}
        self._lock = threading.Lock()

    def files(self, table: Table) -> list[Listed]:
        snapshot = table.current_snapshot()
        if snapshot is None:
            return []
        schema = table.schema()
        offset_id = schema.find_field(layout.OFFSET).field_id
        ts_id = schema.find_field(layout.TS).field_id
        found: list[Listed] = []
        named: dict[str, list[Listed]] = {}
        for manifest in snapshot.manifests(table.io):
            if manifest.content != ManifestContent.DATA:
                raise ValueError(f"{manifest.manifest_path}: delete files (merge-on-read) are not read here")
            with self._lock:
                listed = self._kept.get(manifest.manifest_path)
            if listed is None:
                listed = _read(table, manifest, offset_id, ts_id)
            named[manifest.manifest_path] = listed
            found += listed
        with self._lock:
            self._kept = named  # manifests the current snapshot no longer names are not needed again
        return found


def _read(table: Table, manifest: Any, offset_id: int, ts_id: int) -> list[Listed]:
    spec = table.specs()[manifest.partition_spec_id]
    at = next(i for i, f in enumerate(spec.fields) if f.name == layout.PARTITION)
    out = []
    for entry in manifest.fetch_manifest_entry(table.io, discard_deleted=True):
        data = entry.data_file
        if data.content != DataFileContent.DATA:
            continue
        low, high = _bound(data.lower_bounds, offset_id), _bound(data.upper_bounds, offset_id)
        ts = _bound(data.upper_bounds, ts_id)
        if low is None or high is None or ts is None:  # no statistics: read it whatever the offset
            low, high, ts = 0, _NO_BOUND, _NO_BOUND
        partition = int(data.partition[at])
        out.append(
            Listed(data.file_path, partition, low, high, ts, data.record_count, data.file_size_in_bytes)
        )
    return out


def _bound(bounds: dict[int, bytes] | None, field_id: int) -> int | None:
    raw = (bounds or {}).get(field_id)
    return None if raw is None else int(from_bytes(LongType(), raw))


def fs_path(uri: str) -> str:
    """A data file's path in pyarrow's filesystem of the store (local or S3)."""
    for scheme in ("file://", "s3://", "s3a://"):
        if uri.startswith(scheme):
            return uri[len(scheme) :]
    return uri


def index_of(table: Table, listed: list[Listed], fs: pafs.FileSystem, version: int) -> FileIndex:
    """The FileIndex of the listed files, with the archived ends and trim starts of the properties."""
    files: dict[int, list[DataFile]] = {}
    fragments: dict[str, Any] = {}
    parquet = ds.ParquetFileFormat()
    for f in listed:
        files.setdefault(f.partition, []).append(
            DataFile(f.path, f.min_offset, f.max_offset, f.max_timestamp)
        )
        fragments[f.path] = parquet.make_fragment(fs_path(f.path), filesystem=fs)
    for group in files.values():
        group.sort(key=lambda f: f.min_offset)
    props = table.properties
    ends = {p: int(props[END + str(p)]) for p in files if END + str(p) in props}
    starts = {p: int(props[START + str(p)]) for p in files if START + str(p) in props}
    return FileIndex(version, files, fragments, ends, starts)
