"""Trims delete cold rows below an offset and vacuum their files, so disk stays bounded; a missing or
corrupt file and an unreachable store raise the cold tier's retriable errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from schooner.storage.cold.errors import ColdDataCorrupt, ColdStoreError, ColdStoreUnavailable
from schooner.storage.cold.location import ColdLocation
from schooner.storage.cold.table import ColdStore
from schooner.storage.log.entry import Record

OLD = 1_700_000_000_000


def _archive_steps(log, cold, steps: int = 4, per_step: int = 10) -> list[int]:
    base = log.append([Record(OLD + i, None, b"v%d" % i) for i in range(steps * per_step)])
    start = base
    for _ in range(steps):
        piece = log.slice(start, per_step)
        cold.archive(log.topic, 0, piece)
        start = piece.end
    return list(range(base, base + steps * per_step))  # dense: one offset per record


def _files(cold: ColdStore, log) -> set[str]:
    return {p.name for p in (Path(cold.table_uri(log.topic)) / "partition=0").glob("*.parquet")}


def test_a_trim_deletes_rows_below_and_vacuums_their_files(make_log, cold) -> None:
    log = make_log()
    offsets = _archive_steps(log, cold)
    before = _files(cold, log)
    assert len(before) == 4
    deleted = cold.trim(log.topic, 0, offsets[25])  # files 0-9 and 10-19 go, 20-29 is rewritten
    assert deleted == 25
    after = _files(cold, log)
    assert len(after) == 2 and len(after - before) == 1  # three taken out, one written with 25-29
    assert all(".zstd." in name for name in after)
    assert cold.start_offset(log.topic, 0) == offsets[25]
    back = cold.read(log.topic, 0, offsets[0], 1 << 20)
    assert back.start_offset == offsets[25]
    assert [int(e[0].split(b"-")[1]) - 1 for e in back.entries] == offsets[25:]
    # Everything archived stays archived: the end does not move back.
    assert cold.archived_end(log.topic, 0) == offsets[-1] + 1


def test_a_reader_with_an_old_file_list_and_kept_files_returns_nothing_below_the_start_it_knows(
    make_log, cold, tmp_path, keyspace
) -> None:
    log = make_log()
    offsets = _archive_steps(log, cold)
    assert len(cold.read(log.topic, 0, offsets[0], 1 << 20).entries) == 40  # index and files now kept
    other = ColdStore(ColdLocation.from_url(str(tmp_path / "cold")), keyspace)
    other.trim(log.topic, 0, offsets[20])  # another broker trims and vacuums (and moves the marks)
    back = cold.read(log.topic, 0, offsets[0], 1 << 20, start=offsets[20])
    assert [int(e[0].split(b"-")[1]) - 1 for e in back.entries] == offsets[20:]


def test_a_reader_whose_file_has_gone_reads_the_table_again(make_log, cold, tmp_path, keyspace) -> None:
    log = make_log()
    offsets = _archive_steps(log, cold)
    assert len(cold.read(log.topic, 0, offsets[0], 1).entries) == 1  # the index and the first file kept
    other = ColdStore(ColdLocation.from_url(str(tmp_path / "cold")), keyspace)
    other.trim(log.topic, 0, offsets[25])  # 20-29 is rewritten as 25-29: its old file is vacuumed
    back = cold.read(log.topic, 0, offsets[25], 1 << 20)
    assert back.start_offset == offsets[25]
    assert [int(e[0].split(b"-")[1]) - 1 for e in back.entries] == offsets[25:]


def test_a_missing_file_is_a_clear_error(make_log, cold) -> None:
    log = make_log()
    offsets = _archive_steps(log, cold, steps=2)
    folder = Path(cold.table_uri(log.topic)) / "partition=0"
    for f in folder.glob("*.parquet"):
        f.unlink()
    with pytest.raises(ColdDataCorrupt) as caught:
        cold.read(log.topic, 0, offsets[0], 1 << 20)
    assert caught.value.retriable


def test_a_corrupt_file_is_a_clear_error(make_log, cold) -> None:
    log = make_log()
    offsets = _archive_steps(log, cold, steps=1)
    for f in (Path(cold.table_uri(log.topic)) / "partition=0").glob("*.parquet"):
        f.write_bytes(b"not parquet at all" * 10)
    with pytest.raises(ColdDataCorrupt):
        cold.read(log.topic, 0, offsets[0], 1 << 20)


def test_an_unreachable_store_is_unavailable(make_log, keyspace) -> None:
    from schooner.storage.redis.embedded import free_port

    log = make_log()
    base = log.append([Record(OLD, None, b"v")])
    port = free_port()  # nothing listens there
    location = ColdLocation.from_url(
        "s3://nowhere/cold", endpoint=f"http://127.0.0.1:{port}", region="us-east-1",
        access_key_id="x", secret_access_key="y", options={"max_retries": "0", "retry_timeout": "1s"},
    )  # fmt: skip
    cold = ColdStore(location, keyspace)
    with pytest.raises(ColdStoreUnavailable) as caught:
        cold.archive(log.topic, 0, log.slice(base, 10))
    assert isinstance(caught.value, ColdStoreError) and caught.value.retriable
    with pytest.raises(ColdStoreUnavailable):
        cold.read(log.topic, 0, base, 1 << 20)
    with pytest.raises(ColdStoreUnavailable):
        cold.archived_end(log.topic, 0)


def test_drop_removes_the_whole_table_and_a_new_one_starts_empty(make_log, cold) -> None:
    log = make_log()
    _archive_steps(log, cold, steps=2)
    table = Path(cold.table_uri(log.topic))
    assert any(table.rglob("*.parquet"))
    cold.drop(log.topic)
    assert not table.exists()
    assert cold.archived_end(log.topic, 0) is None
    cold.drop(log.topic)  # again: nothing to do
