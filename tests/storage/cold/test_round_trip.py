"""Records archived to the cold table come back as the hot tier gives them: the same entries, so the fetch
codec builds the same bytes (keys, values, null keys and values, headers with duplicates and null values,
timestamps), on both offset encodings and both timestamp types."""

from __future__ import annotations

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from schooner.broker.partitions.fetch_codec import encode_entries
from schooner.storage.cold.layout import SCHEMA
from schooner.storage.log.entry import Record

pytestmark = pytest.mark.both_encodings
OLD = 1_700_000_000_000

RECORDS = [
    Record(OLD, b"k1", b"v1"),
    Record(OLD + 1, None, b"no key"),
    Record(OLD + 2, b"tombstone", None),
    Record(OLD + 3, b"", b""),  # empty, not null
    Record(OLD - 5, b"k", b"\x00\xff binary", [("h", b"1"), ("h", b"2"), ("null", None), ("", b"")]),
    Record(OLD + 9, None, None, [("only", b"header")]),
    Record(OLD + 10, b"k" * 300, b"v" * 5000),
]


def test_records_come_back_as_the_hot_tier_reads_them(make_log, cold) -> None:
    log = make_log()
    base = log.append(RECORDS[:3])
    log.append(RECORDS[3:])
    piece = log.slice(base, 1000)
    assert len(piece.entries) == len(RECORDS)
    done = cold.archive(log.topic, 0, piece)
    assert done.records == len(RECORDS) and done.end == piece.end
    hot = log.read(base, 1000)
    back = cold.read(log.topic, 0, base, max_bytes=1 << 20)
    assert back.entries == hot.entries
    assert back.next_offset == piece.end
    for entries in (hot.entries, back.entries):
        assert entries  # same input, so the same batches
    codec = log.topic.offsets
    hot_bytes = encode_entries(hot.entries, codec, 0, False, 1 << 20)
    cold_bytes = encode_entries(back.entries, codec, 0, False, 1 << 20)
    assert cold_bytes == hot_bytes and hot_bytes[1] == len(RECORDS)


def test_the_table_is_plain_delta_with_the_documented_columns(make_log, cold) -> None:
    log = make_log()
    base = log.append(RECORDS)
    cold.archive(log.topic, 0, log.slice(base, 1000))
    table = DeltaTable(cold.table_uri(log.topic))
    rows = table.to_pyarrow_table().sort_by("offset")
    assert set(rows.schema.names) == set(SCHEMA.names)
    assert table.metadata().partition_columns == ["partition"]
    got = rows.to_pylist()
    assert [r["key"] for r in got] == [r.key for r in RECORDS]
    assert [r["value"] for r in got] == [r.value for r in RECORDS]
    assert [r["timestamp"] for r in got] == [r.timestamp for r in RECORDS]
    assert got[4]["headers"] == [
        {"key": "h", "value": b"1"}, {"key": "h", "value": b"2"}, {"key": "null", "value": None},
        {"key": "", "value": b""},
    ]  # fmt: skip
    assert {r["timestamp_type"] for r in got} == {0}
    assert not any(r["transactional"] or r["aborted"] or r["control"] for r in got)
    files = pa.table(table.get_add_actions(flatten=True)).column("path").to_pylist()
    assert files and all(".zstd." in f for f in files)


def test_log_append_time_is_kept_as_the_timestamp_type(make_log, cold) -> None:
    log = make_log(**{"message.timestamp.type": "LogAppendTime"})
    base = log.append(RECORDS[:2])
    cold.archive(log.topic, 0, log.slice(base, 1000))
    back = cold.read(log.topic, 0, base, max_bytes=1 << 20)
    assert back.entries == log.read(base, 100).entries
    rows = DeltaTable(cold.table_uri(log.topic)).to_pyarrow_table()
    assert set(rows.column("timestamp_type").to_pylist()) == {1}
    assert all(ts > OLD + 1000 for ts in rows.column("timestamp").to_pylist())  # the append time
