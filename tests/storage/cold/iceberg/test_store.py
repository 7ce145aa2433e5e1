"""The Iceberg cold store answers as the Delta one: entries byte-identical to the hot tier's, archived
exactly once (on a retry and against a second writer), the archived end, ListOffsets by time, trims
that free disk, and drop."""

from __future__ import annotations

import threading
from pathlib import Path

import pyarrow.compute as pc
import pytest

from schooner.broker.partitions.fetch_codec import encode_entries
from schooner.storage.cold.errors import ArchiveConflict
from schooner.storage.cold.iceberg.store import IcebergColdStore
from schooner.storage.log.entry import Record

from .conftest import parquet_files

pytestmark = pytest.mark.both_encodings
OLD = 1_700_000_000_000

RECORDS = [
    Record(OLD, b"k1", b"v1"),
    Record(OLD + 1, None, b"no key"),
    Record(OLD + 2, b"tombstone", None),
    Record(OLD + 3, b"", b""),
    Record(OLD - 5, b"k", b"\x00\xff binary", [("h", b"1"), ("h", b"2"), ("null", None), ("", b"")]),
    Record(OLD + 9, None, None, [("only", b"header")]),
    Record(OLD + 10, b"k" * 300, b"v" * 5000),
]


def _records(n: int, tag: str = "v", at: int = OLD) -> list[Record]:
    return [Record(at + i, b"k%d" % i, f"{tag}{i}".encode()) for i in range(n)]


def _offsets(cold: IcebergColdStore, log) -> list[int]:
    rows = cold.catalog.load_table(cold.identifier(log.topic)).scan().to_arrow()
    return sorted(rows.column("offset").to_pylist())


def _hot_offsets(log, base: int) -> list[int]:
    return [log.topic.offsets.offset_of_id(e[0]) for e in log.read(base, 1000).entries]


def test_records_come_back_as_the_hot_tier_reads_them(make_iceberg_log, iceberg) -> None:
    log = make_iceberg_log()
    base = log.append(RECORDS[:3])
    log.append(RECORDS[3:])
    tx = log.append([Record(OLD + 20, b"t", b"aborted")], pid=7, epoch=0)
    log.end_txn(7, 0, commit=False)
    log.append([Record(OLD + 30, b"after", b"x")])
    piece = log.slice(base, 1000)
    done = iceberg.archive(log.topic, 0, piece)
    assert done.records == len(piece.entries) and done.end == piece.end
    assert iceberg.archived_end(log.topic, 0) == piece.end
    hot = log.read(base, 1000, committed=True)
    back = iceberg.read(log.topic, 0, base, max_bytes=1 << 20, committed=True)
    assert back.entries == hot.entries
    assert [(a.producer_id, a.first_offset) for a in back.aborted] == [(7, tx)]
    assert back.next_offset == piece.end and (back.start_offset, back.end_offset) == (base, piece.end)
    codec = log.topic.offsets
    assert encode_entries(back.entries, codec, 0, False, 1 << 20) == encode_entries(
        hot.entries, codec, 0, False, 1 << 20
    )
    # A read from the middle, within a byte budget: the first record always, then what fits.
    middle = iceberg.read(log.topic, 0, base + 3, max_bytes=1)
    assert middle.entries == hot.entries[3:4]
    assert iceberg.start_offset(log.topic, 0) == base


def test_exactly_once_on_a_retry_and_against_a_second_writer(make_iceberg_log, iceberg, open_iceberg) -> None:
    log = make_iceberg_log()
    base = log.append(_records(10))
    piece = log.slice(base, 100)
    assert iceberg.archived_end(log.topic, 0) is None
    assert iceberg.archive(log.topic, 0, piece).records == 10
    # The archiver "crashed" after the commit, before it learned of it: another process retries.
    again = open_iceberg()
    assert again.archived_end(log.topic, 0) == piece.end
    assert again.archive(log.topic, 0, piece).records == 0
    # An overlapping slice adds only what is new; a slice past a gap is refused.
    log.append(_records(5, "w"))
    overlap = log.slice(base, 100)
    assert again.archive(log.topic, 0, overlap).records == 5
    assert _offsets(iceberg, log) == _hot_offsets(log, base)
    log.append(_records(5, "x"))
    with pytest.raises(ArchiveConflict):
        iceberg.archive(log.topic, 0, log.slice(overlap.end + 1, 100))
    # Writers racing on the same slice: one adds it, the other finds it committed (or conflicts).
    stores = [open_iceberg() for _ in range(3)]
    piece = log.slice(overlap.end, 100)
    results: list[object] = []
    barrier = threading.Barrier(len(stores))

    def run(store: IcebergColdStore) -> None:
        barrier.wait()
        try:
            results.append(store.archive(log.topic, 0, piece).records)
        except ArchiveConflict as exc:
            results.append(exc)

    threads = [threading.Thread(target=run, args=(s,)) for s in stores]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(r for r in results if isinstance(r, int)) == 5
    assert _offsets(iceberg, log) == _hot_offsets(log, base)


def test_offset_for_timestamp(make_iceberg_log, iceberg) -> None:
    log = make_iceberg_log()
    base = log.append([Record(OLD + 10 * i, None, b"v") for i in range(20)])
    iceberg.archive(log.topic, 0, log.slice(base, 10))
    iceberg.archive(log.topic, 0, log.slice(base + 10, 10))
    assert iceberg.offset_for_timestamp(log.topic, 0, OLD + 55) == (base + 6, OLD + 60)
    assert iceberg.offset_for_timestamp(log.topic, 0, OLD + 150) == (base + 15, OLD + 150)
    assert iceberg.offset_for_timestamp(log.topic, 0, OLD, start=base + 12) == (base + 12, OLD + 120)
    assert iceberg.offset_for_timestamp(log.topic, 0, OLD + 10_000) is None


def test_a_trim_frees_disk_and_drop_removes_the_table(make_iceberg_log, iceberg) -> None:
    log = make_iceberg_log()
    base = log.append([Record(OLD + i, None, b"v" * 100) for i in range(40)])
    start = base
    for _ in range(4):
        piece = log.slice(start, 10)
        iceberg.archive(log.topic, 0, piece)
        start = piece.end
    root = Path(iceberg.table_uri(log.topic))
    before = parquet_files(root)
    assert len(before) == 4
    bytes_before = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
    assert iceberg.trim(log.topic, 0, base + 25) == 25  # two files go, one is rewritten
    after = parquet_files(root)
    assert len(after) == 2 and len(set(after) - set(before)) == 1
    assert sum(p.stat().st_size for p in root.rglob("*") if p.is_file()) < bytes_before
    assert iceberg.start_offset(log.topic, 0) == base + 25
    read = iceberg.read(log.topic, 0, base, 1 << 20)
    assert read.start_offset == base + 25 and len(read.entries) == 15
    assert _offsets(iceberg, log) == list(range(base + 25, base + 40))
    # Only the current snapshot is left, so nothing else holds a file.
    table = iceberg.catalog.load_table(iceberg.identifier(log.topic))
    assert len(table.snapshots()) == 1
    assert iceberg.trim(log.topic, 0, base + 25) == 0
    iceberg.drop(log.topic)
    assert not root.exists()
    assert not iceberg.catalog.table_exists(iceberg.identifier(log.topic))
    assert iceberg.archived_end(log.topic, 0) is None


def test_new_columns_evolve_the_table_schema_in_the_archive_commit(
    make_iceberg_log, iceberg, monkeypatch
) -> None:
    from schooner.storage.cold import layout

    log = make_iceberg_log()
    base = log.append(_records(4))
    iceberg.archive(log.topic, 0, log.slice(base, 2))
    plain = layout.archive_rows

    def typed(topic, partition, piece, from_offset=0):
        rows = plain(topic, partition, piece, from_offset)
        return rows.append_column("value_text", pc.cast(rows.column("value"), "string"))

    monkeypatch.setattr(layout, "archive_rows", typed)
    iceberg.archive(log.topic, 0, log.slice(base + 2, 2))
    table = iceberg.catalog.load_table(iceberg.identifier(log.topic))
    assert "value_text" in table.schema().column_names
    rows = table.scan().to_arrow().sort_by("offset")
    assert rows.column("value_text").to_pylist() == [None, None, "v2", "v3"]
    assert [e[0] for e in iceberg.read(log.topic, 0, base, 1 << 20).entries] == [
        e[0] for e in log.read(base, 10).entries
    ]


def test_archive_steps_expire_old_snapshots(make_iceberg_log, iceberg, monkeypatch) -> None:
    from schooner.storage.cold.iceberg import store

    monkeypatch.setattr(store, "MAX_SNAPSHOTS", 3)
    log = make_iceberg_log()
    base = log.append(_records(12))
    start = base
    for _ in range(6):
        piece = log.slice(start, 2)
        iceberg.archive(log.topic, 0, piece)
        start = piece.end
    table = iceberg.catalog.load_table(iceberg.identifier(log.topic))
    assert len(table.snapshots()) <= 4
    assert _offsets(iceberg, log) == _hot_offsets(log, base)
    assert len(iceberg.read(log.topic, 0, base, 1 << 20).entries) == 12
