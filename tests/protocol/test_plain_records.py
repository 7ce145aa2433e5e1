"""The produce path's compiled reader (_produce.c) gives a plain batch's records exactly as aiokafka decodes
them, and declines every other batch, which read_batches then decodes the general way."""

from __future__ import annotations

import struct

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schooner.protocol import batch_c
from schooner.protocol.records import (
    CODEC_GZIP,
    CODEC_NONE,
    TIMESTAMP_LOG_APPEND_TIME,
    BatchBuilder,
    LazyRecords,
    read_batches,
)

CI = settings(
    derandomize=True,
    database=None,
    deadline=None,
    max_examples=300,
    suppress_health_check=[HealthCheck.too_slow],
)
BASE_TS = 1_700_000_000_000

Row = tuple[int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]
rows = st.lists(
    st.tuples(
        st.sampled_from([0, 0, 0, 1, 5, -3]),  # timestamp steps: runs of one timestamp, and going back
        st.none() | st.binary(max_size=6),
        st.none() | st.binary(max_size=20),
        st.just([]) | st.lists(st.tuples(st.text(max_size=3), st.none() | st.binary(max_size=3)), max_size=2),
    ),
    min_size=1,
    max_size=12,
)


def build(items: list[Row], codec: int = CODEC_NONE, **kwargs: object) -> tuple[bytes, list[int]]:
    builder = BatchBuilder(0, codec, **kwargs)  # type: ignore[arg-type]
    stamps, ts = [], BASE_TS
    for offset, (step, key, value, headers) in enumerate(items):
        ts += step
        stamps.append(ts)
        builder.append(offset, ts, key, value, headers)
    return builder.build(), stamps


def is_plain(items: list[Row]) -> bool:
    keyed = {key is not None for _, key, _, _ in items}
    return len(keyed) == 1 and all(value is not None and not headers for _, _, value, headers in items)


def test_the_compiled_reader_is_built() -> None:
    # `make install` builds it; without it every batch takes aiokafka's decoder, but the tests run it.
    assert batch_c.plain_records is not None


@CI
@given(items=rows)
def test_columns_match_aiokafka_and_only_plain_batches_are_read(items: list[Row]) -> None:
    raw, stamps = build(items)
    assert batch_c.plain_records is not None
    columns = batch_c.plain_records(raw)
    if not is_plain(items):
        assert columns is None
        return
    assert columns is not None
    keyed, runs, fields, max_ts, max_index, count = columns
    assert count == len(items)
    assert keyed == (items[0][1] is not None)
    expected_fields = [f for _, key, value, _ in items for f in ((key, value) if keyed else (value,))]
    assert fields == expected_fields
    expanded = [ts for n, ts in runs for _ in range(n)]
    assert expanded == stamps
    assert all(a[1] != b[1] for a, b in zip(runs, runs[1:], strict=False))  # runs are maximal
    assert (max_ts, max_index) == (max(stamps), stamps.index(max(stamps)))


@CI
@given(items=rows)
def test_read_batches_gives_the_same_records_either_way(items: list[Row]) -> None:
    raw, stamps = build(items)
    (batch,) = read_batches(raw)
    assert (batch.plain is not None) == is_plain(items)
    assert len(batch.records) == len(items)
    got = [(r.timestamp, r.key, r.value, [(k, v) for k, v in r.headers]) for r in batch.records]
    assert got == [
        (ts, key, value, headers) for ts, (_, key, value, headers) in zip(stamps, items, strict=True)
    ]


def test_a_plain_batch_decodes_its_records_only_when_asked() -> None:
    raw, _ = build([(0, None, b"a", []), (1, None, b"b", [])])
    (batch,) = read_batches(raw)
    assert isinstance(batch.records, LazyRecords) and batch.records._records is None
    assert batch.records[1].value == b"b"
    assert batch.size_bytes == len(raw)


def test_producer_fields_come_from_the_header() -> None:
    raw, _ = build([(0, b"k", b"v", [])], producer_id=77, producer_epoch=3, transactional=True)
    raw = raw[:53] + struct.pack(">i", 12) + raw[57:]  # a base sequence, which the CRC covers
    (batch,) = read_batches(_resealed(raw))
    assert batch.plain is not None
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (77, 3, 12)
    assert batch.is_transactional


def _resealed(raw: bytes) -> bytes:
    assert batch_c.crc32c is not None
    return raw[:17] + struct.pack(">I", batch_c.crc32c(raw[21:])) + raw[21:]


def test_compressed_log_append_time_and_trailing_bytes_are_left_to_aiokafka() -> None:
    assert batch_c.plain_records is not None
    one: list[Row] = [(0, None, b"v", [])]
    assert batch_c.plain_records(build(one, CODEC_GZIP)[0]) is None
    assert batch_c.plain_records(build(one, timestamp_type=TIMESTAMP_LOG_APPEND_TIME)[0]) is None
    raw = build(one)[0]
    assert batch_c.plain_records(raw + b"\x00") is None
    assert batch_c.plain_records(raw[:-1]) is None
    count_two = raw[:57] + struct.pack(">i", 2) + raw[61:]
    assert batch_c.plain_records(count_two) is None


def test_records_not_numbered_in_order_are_left_to_aiokafka() -> None:
    """A plain batch may be served to fetches as sent (broker/partitions/recent_batches.py), so its records'
    offset deltas must be 0, 1, ...; a batch numbered otherwise is decoded the general way."""
    assert batch_c.plain_records is not None
    builder = BatchBuilder(0, CODEC_NONE)
    builder.append(0, BASE_TS, None, b"a", [])
    builder.append(5, BASE_TS, None, b"b", [])  # offset delta 5 where 1 was due
    (batch,) = read_batches(builder.build())
    assert batch.plain is None and [r.value for r in batch.records] == [b"a", b"b"]
