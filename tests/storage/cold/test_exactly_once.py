"""Archiving is exactly once: the table's app transaction per partition says what is committed, so a step
retried after a crash at any point adds nothing twice, and writers racing on one partition add it once."""

from __future__ import annotations

import contextlib
import threading
from pathlib import Path

import pytest
from deltalake import DeltaTable

from schooner.storage.cold.errors import ArchiveConflict
from schooner.storage.cold.location import ColdLocation
from schooner.storage.cold.table import ColdStore
from schooner.storage.log.entry import Record

pytestmark = pytest.mark.both_encodings


def _records(n: int, tag: str = "v") -> list[Record]:
    return [Record(1_700_000_000_000 + i, b"k%d" % i, f"{tag}{i}".encode()) for i in range(n)]


def _offsets(cold: ColdStore, log) -> list[int]:
    rows = DeltaTable(cold.table_uri(log.topic)).to_pyarrow_table()
    return sorted(rows.column("offset").to_pylist())


def test_a_retry_after_an_unrecorded_commit_writes_nothing(make_log, cold, tmp_path, keyspace) -> None:
    log = make_log()
    base = log.append(_records(10))
    piece = log.slice(base, 100)
    assert cold.archived_end(log.topic, 0) is None
    assert cold.archive(log.topic, 0, piece).records == 10
    # The archiver "crashed" after the commit, before it recorded anything: a new process retries.
    again = ColdStore(ColdLocation.from_url(str(tmp_path / "cold")), keyspace)
    assert again.archived_end(log.topic, 0) == piece.end
    retried = again.archive(log.topic, 0, piece)
    assert retried.records == 0 and retried.end == piece.end
    assert _offsets(cold, log) == [log.topic.offsets.offset_of_id(e[0]) for e in piece.entries]


def test_an_overlapping_slice_adds_only_what_is_new(make_log, cold) -> None:
    log = make_log()
    base = log.append(_records(5))
    first = log.slice(base, 100)
    cold.archive(log.topic, 0, first)
    log.append(_records(5, "w"))
    # A retry that read from an older start (it missed the first commit) overlaps what is committed.
    wider = log.slice(base, 100)
    assert wider.start == base and len(wider.entries) == 10
    assert cold.archive(log.topic, 0, wider).records == 5
    offsets = _offsets(cold, log)
    assert len(offsets) == len(set(offsets)) == 10
    assert cold.archived_end(log.topic, 0) == wider.end


def test_a_slice_past_the_archived_end_is_refused(make_log, cold) -> None:
    log = make_log()
    base = log.append(_records(6))
    head = log.slice(base, 3)
    cold.archive(log.topic, 0, head)
    tail = log.slice(head.end + 1, 100)  # skips one record
    with pytest.raises(ArchiveConflict):
        cold.archive(log.topic, 0, tail)
    assert cold.archived_end(log.topic, 0) == head.end


def test_an_uncommitted_file_left_by_a_crash_is_not_read(make_log, cold) -> None:
    log = make_log()
    base = log.append(_records(4))
    piece = log.slice(base, 100)
    cold.archive(log.topic, 0, piece)
    folder = Path(cold.table_uri(log.topic)) / "partition=0"
    committed = next(folder.iterdir())
    # A writer that died between writing its Parquet file and committing it leaves the file behind.
    (folder / "part-orphan.zstd.parquet").write_bytes(committed.read_bytes())
    assert cold.archive(log.topic, 0, piece).records == 0
    back = cold.read(log.topic, 0, base, 1 << 20)
    assert len(back.entries) == 4
    assert len(_offsets(cold, log)) == 4


def test_writers_racing_on_one_partition_add_it_once(make_log, tmp_path, keyspace) -> None:
    log = make_log()
    root = str(tmp_path / "cold")
    stores = [ColdStore(ColdLocation.from_url(root), keyspace) for _ in range(4)]
    start = log.append(_records(50))
    # Twice: racing to make the table, then racing on a table that exists.
    for round_ in range(2):
        piece = log.slice(start, 100)
        added: list[int] = []
        gate = threading.Barrier(len(stores))

        def archive(store: ColdStore) -> None:
            gate.wait()  # noqa: B023
            # A conflict is allowed: the archiver then reads archived_end and goes on.
            with contextlib.suppress(ArchiveConflict):
                added.append(store.archive(log.topic, 0, piece).records)  # noqa: B023

        threads = [threading.Thread(target=archive, args=(s,)) for s in stores]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert sum(added) == 50, (round_, added)
        assert len(set(_offsets(stores[0], log))) == len(_offsets(stores[0], log)) == 50 * (round_ + 1)
        assert stores[0].archived_end(log.topic, 0) == piece.end
        start = piece.end
        log.append(_records(50, "w"))


def test_partitions_archived_side_by_side_keep_their_own_ends(make_log, cold, topic_defaults) -> None:
    log = make_log()
    base = log.append(_records(3))
    piece = log.slice(base, 100)
    cold.archive(log.topic, 0, piece)
    # Partition 1 of the same table, from other entries: its end is its own.
    other = make_log("other")
    other_piece = other.slice(other.append(_records(7)), 100)
    cold.archive(log.topic, 1, other_piece)
    assert cold.archived_end(log.topic, 0) == piece.end
    assert cold.archived_end(log.topic, 1) == other_piece.end
    assert len(cold.read(log.topic, 1, 0, 1 << 20).entries) == 7
    assert len(cold.read(log.topic, 0, 0, 1 << 20).entries) == 3
