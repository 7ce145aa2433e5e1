"""Keeping an Iceberg table's disk bounded: expire every snapshot but the current one, then remove the
files that only the expired ones named (data files a delete took out, their manifests and manifest
lists), and files no snapshot names that are older than ORPHAN_AGE_SECONDS (written by a commit that
lost its race, or by a writer that died before committing).

Only files no remaining snapshot names are removed, and a writer's uncommitted files are young: a commit
in flight (built on the current snapshot) never loses a file it names. Old metadata files are removed by
pyiceberg after each commit (write.metadata.delete-after-commit.enabled).
"""

from __future__ import annotations

import time
from collections.abc import Iterable

import pyarrow.fs as pafs
from pyiceberg.table import Table
from pyiceberg.table.snapshots import Snapshot

from .files import fs_path

ORPHAN_AGE_SECONDS = 3600.0
# An archive step expires the older snapshots when the table has more than this many (each commit adds
# one, and the metadata file lists them all).
MAX_SNAPSHOTS = 32


def referenced(table: Table, snapshots: Iterable[Snapshot], live_only: bool) -> tuple[set[str], set[str]]:
    """(data files, metadata files: manifest lists and manifests) the snapshots name. live_only: only
    the data files they hold, not those their manifests list as deleted."""
    data: set[str] = set()
    meta: set[str] = set()
    for snapshot in snapshots:
        meta.add(snapshot.manifest_list)
        for manifest in snapshot.manifests(table.io):
            if manifest.manifest_path in meta:  # snapshots share most manifests: each is read once
                continue
            meta.add(manifest.manifest_path)
            for entry in manifest.fetch_manifest_entry(table.io, discard_deleted=live_only):
                data.add(entry.data_file.file_path)
    return data, meta


def expire_and_remove(table: Table, fs: pafs.FileSystem, orphan_age: float = ORPHAN_AGE_SECONDS) -> list[str]:
    """Expires the snapshots before the current one and removes the files only they named; returns the
    data files removed. Raises CommitFailedException when another writer committed meanwhile."""
    current = table.current_snapshot()
    old = [s for s in table.snapshots() if current is None or s.snapshot_id != current.snapshot_id]
    keep_data, keep_meta = referenced(table, [current] if current else [], live_only=True)
    gone: set[str] = set()
    if old:
        old_data, old_meta = referenced(table, old, live_only=False)
        table.maintenance.expire_snapshots().by_ids([s.snapshot_id for s in old]).commit()
        gone = (old_data - keep_data) | (old_meta - keep_meta)
    gone |= _orphans(table, fs, keep_data | keep_meta, orphan_age)
    removed = []
    for uri in sorted(gone):
        try:
            fs.delete_file(fs_path(uri))
        except FileNotFoundError:
            continue
        if uri.endswith(".parquet"):
            removed.append(uri)
    return removed


def _orphans(table: Table, fs: pafs.FileSystem, named: set[str], age: float) -> set[str]:
    """Data and manifest files under the table that nothing names and that are older than `age`."""
    root = fs_path(table.location())
    named_paths = {fs_path(u) for u in named} | {
        fs_path(m.metadata_file) for m in table.metadata.metadata_log
    }
    named_paths.add(fs_path(table.metadata_location))
    found: set[str] = set()
    cutoff = time.time() - age
    for folder in ("data", "metadata"):
        selector = pafs.FileSelector(f"{root}/{folder}", recursive=True, allow_not_found=True)
        for info in fs.get_file_info(selector):
            if info.type != pafs.FileType.File or info.path in named_paths:
                continue
            if info.path.endswith(".metadata.json"):
                continue  # pyiceberg removes the old ones; a reader may still hold a recent one
            if info.mtime is not None and info.mtime.timestamp() < cutoff:
                found.add(info.path)
    return found
