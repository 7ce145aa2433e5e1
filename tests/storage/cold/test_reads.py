"""Reads of the cold table: from the middle of a file, within max_bytes (the first record always) and
max_records, files skipped by their offset statistics, the cold start, offsets for times, and the
async wrapper."""

from __future__ import annotations

import asyncio

import pytest
from deltalake import DeltaTable

from schooner.storage.cold.aio import AsyncColdStore
from schooner.storage.cold.index import FileIndex
from schooner.storage.cold.location import ColdLocation
from schooner.storage.cold.table import ColdStore
from schooner.storage.log.entry import Record

pytestmark = pytest.mark.both_encodings
OLD = 1_700_000_000_000
VALUE = b"x" * 100
COST = 24 + 2 + len(VALUE)  # the fetch codec's estimate of one record: overhead, 2-byte key, value


def _archived_in_files(make_log, cold, files: int = 5, per_file: int = 20):
    """A log of files * per_file records (2-byte keys), archived in one file per step."""
    log = make_log()
    offsets = []
    for f in range(files):
        records = [Record(OLD + f * 100 + i, b"%02d" % i, VALUE) for i in range(per_file)]
        base = log.append(records)
        offsets += [log.topic.offsets.offset_of_id(e[0]) for e in log.read(base, per_file).entries]
    start = offsets[0]
    while True:
        piece = log.slice(start, per_file)
        if not piece.entries:
            break
        cold.archive(log.topic, 0, piece)
        start = piece.end
    return log, offsets


def test_a_read_from_the_middle_stops_at_max_bytes(make_log, cold) -> None:
    log, offsets = _archived_in_files(make_log, cold)
    back = cold.read(log.topic, 0, offsets[45], max_bytes=10 * COST)
    got = [log.topic.offsets.offset_of_id(e[0]) for e in back.entries]
    assert got == offsets[45:55]
    assert back.next_offset == offsets[54] + 1
    assert back.entries == log.read(offsets[45], 10).entries
    # Across file ends, and capped by records.
    capped = cold.read(log.topic, 0, offsets[15], max_bytes=1 << 20, max_records=30)
    assert [log.topic.offsets.offset_of_id(e[0]) for e in capped.entries] == offsets[15:45]


def test_the_first_record_goes_even_past_max_bytes(make_log, cold) -> None:
    log, offsets = _archived_in_files(make_log, cold, files=1)
    back = cold.read(log.topic, 0, offsets[3], max_bytes=1)
    assert len(back.entries) == 1 and back.next_offset == offsets[3] + 1


def test_reads_at_and_past_the_end_are_empty(make_log, cold) -> None:
    log, offsets = _archived_in_files(make_log, cold, files=2)
    end = offsets[-1] + 1
    back = cold.read(log.topic, 0, end, max_bytes=1 << 20)
    assert back.entries == [] and back.next_offset == end
    assert (back.start_offset, back.end_offset) == (offsets[0], end)
    as_hot = back.as_partition_read(high_watermark=end + 7, last_stable_offset=end + 5)
    assert (as_hot.log_start_offset, as_hot.high_watermark, as_hot.last_stable_offset) == (
        offsets[0], end + 7, end + 5,
    )  # fmt: skip


def test_files_are_picked_by_their_offset_statistics(make_log, cold) -> None:
    log, offsets = _archived_in_files(make_log, cold)
    index = FileIndex.of(DeltaTable(cold.table_uri(log.topic)), log.topic.name)
    assert len(index.fragments_from(0, offsets[0])) == 5
    assert len(index.fragments_from(0, offsets[45])) == 3  # files 40-59, 60-79, 80-99
    assert index.fragments_from(0, offsets[-1] + 1) == []
    assert index.bounds(0) == (offsets[0], offsets[-1] + 1)


def test_start_offset_and_offsets_for_times(make_log, cold) -> None:
    log = make_log()
    # Timestamps out of order, as producers may send them: the lookup is by Kafka's rule.
    stamps = [OLD + 50, OLD + 10, OLD + 70, OLD + 20, OLD + 90]
    base = log.append([Record(ts, None, b"v") for ts in stamps[:3]])
    log.append([Record(ts, None, b"v") for ts in stamps[3:]])
    entries = log.read(base, 10).entries
    offsets = [log.topic.offsets.offset_of_id(e[0]) for e in entries]
    first = log.slice(base, 3)
    cold.archive(log.topic, 0, first)
    cold.archive(log.topic, 0, log.slice(first.end, 10))
    assert cold.start_offset(log.topic, 0) == offsets[0]
    assert cold.offset_for_timestamp(log.topic, 0, OLD + 60) == (offsets[2], OLD + 70)
    assert cold.offset_for_timestamp(log.topic, 0, OLD + 80) == (offsets[4], OLD + 90)
    assert cold.offset_for_timestamp(log.topic, 0, OLD) == (offsets[0], OLD + 50)
    assert cold.offset_for_timestamp(log.topic, 0, OLD + 91) is None
    assert cold.start_offset(log.topic, 3) is None


def test_an_offset_for_a_time_reads_an_index_older_than_the_archived_end_again(
    make_log, cold, tmp_path, keyspace
) -> None:
    """Another broker archived the partition's first slice after this one cached the table's file
    index: asked with the end the caller knows archived, the store reads the table again rather than
    answer None, which retention took as "every cold record is older" (a chaos run's tiered partition
    lost its first slice)."""
    log = make_log()
    base = log.append([Record(OLD + 10 * i, None, b"v") for i in range(3)])
    archiver = ColdStore(ColdLocation.from_url(f"file://{tmp_path}/cold"), keyspace)
    archiver.archive(log.topic, 0, log.slice(base, 1))
    assert cold.offset_for_timestamp(log.topic, 0, OLD + 10) is None  # cached: only offset `base`
    archived = log.slice(base + 1, 10)
    archiver.archive(log.topic, 0, archived)
    assert cold.offset_for_timestamp(log.topic, 0, OLD + 10) is None  # the cached index, still young
    assert cold.offset_for_timestamp(log.topic, 0, OLD + 10, archived.end)[1] == OLD + 10


def test_the_async_wrapper_answers_as_the_blocking_store(make_log, cold) -> None:
    log, offsets = _archived_in_files(make_log, cold, files=2)

    async def main() -> None:
        aio = AsyncColdStore(cold, threads=2)
        try:
            ticks = 0

            async def tick() -> None:
                nonlocal ticks
                while True:
                    ticks += 1
                    await asyncio.sleep(0)

            ticker = asyncio.create_task(tick())
            reads = await asyncio.gather(*(aio.read(log.topic, 0, o, 1 << 20) for o in offsets[:8]))
            ticker.cancel()
            assert ticks > 0  # the loop ran other tasks while the reads ran in threads
            for o, r in zip(offsets, reads, strict=False):
                assert r.entries == cold.read(log.topic, 0, o, 1 << 20).entries
            assert await aio.archived_end(log.topic, 0) == offsets[-1] + 1
            assert await aio.start_offset(log.topic, 0) == offsets[0]
        finally:
            aio.close()

    asyncio.run(main())
