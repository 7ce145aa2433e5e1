"""The produce path's compiled reader (_produce.c) gives a plain batch's records exactly as aiokafka decodes
them, and declines every other batch, which read_batches then decodes the general way; on hostile batches
(huge, negative and overlong varints, lengths past the end, timestamps that overflow int64, a count that
lies, truncation) read_batches answers the same with and without it."""

from __future__ import annotations

import struct
from typing import Any
from unittest.mock import patch

from crc32c import crc32c
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schooner.protocol import batch_c
from schooner.protocol import records as records_module
from schooner.protocol.aiokafka_internals import DefaultRecordBatch
from schooner.protocol.records import (
    CODEC_GZIP,
    CODEC_NONE,
    TIMESTAMP_LOG_APPEND_TIME,
    BatchBuilder,
    InvalidRecords,
    LazyRecords,
    read_batches,
)
from tests.compiled import ON, needs_compiled
from tests.strategies import RARELY, mostly

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
    # `make install` builds it; without it every batch takes aiokafka's decoder, but the tests run it,
    # unless SCHOONER_COMPILED=0 turns it off.
    assert (batch_c.plain_records is not None) == ON


@needs_compiled
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
    assert (batch.plain is not None) == (is_plain(items) and ON)
    assert len(batch.records) == len(items)
    got = [(r.timestamp, r.key, r.value, [(k, v) for k, v in r.headers]) for r in batch.records]
    assert got == [
        (ts, key, value, headers) for ts, (_, key, value, headers) in zip(stamps, items, strict=True)
    ]


@needs_compiled
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
    assert (batch.plain is not None) == ON
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (77, 3, 12)
    assert batch.is_transactional


def _resealed(raw: bytes) -> bytes:
    return raw[:17] + struct.pack(">I", crc32c(raw[21:])) + raw[21:]


@needs_compiled
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
    builder = BatchBuilder(0, CODEC_NONE)
    builder.append(0, BASE_TS, None, b"a", [])
    builder.append(5, BASE_TS, None, b"b", [])  # offset delta 5 where 1 was due
    (batch,) = read_batches(builder.build())
    assert batch.plain is None and [r.value for r in batch.records] == [b"a", b"b"]


# Hostile batches, written here byte by byte: every varint may be huge, negative, overlong or cut short,
# lengths may point past the record, timestamps sit at the ends of int64 and their deltas overflow it,
# the count may lie, and the batch may be truncated or carry bytes after its records. The CRC is always
# right, so that the reader, not the CRC check, meets them.
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
HOSTILE = settings(CI, max_examples=400)


def _unsigned_varint(z: int) -> bytes:
    out = bytearray()
    while z >= 0x80:
        out.append(z & 0x7F | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def _varint(v: int) -> bytes:
    """Kafka's zigzag varint of an int64 (wrapped to 64 bits, as a hostile writer may)."""
    v = (v + 2**63) % 2**64 - 2**63
    return _unsigned_varint(((v << 1) ^ (v >> 63)) % 2**64)


EXTREMES = [INT64_MIN, INT64_MIN + 1, -(2**62), INT32_MIN, -2, -1]
EXTREMES += [INT32_MAX, 2**32, 2**62, INT64_MAX - 1, INT64_MAX]
RAW_VARINTS = [
    b"\x80" * 9 + b"\x7f",  # ten bytes whose last carries bits past 64
    b"\xff" * 9 + b"\x01",  # ten bytes: the largest zigzag value
    b"\x80" * 10 + b"\x00",  # eleven bytes: longer than any varint
    b"\x80\x00",  # zero, not in its shortest form
    b"\x80",  # cut short
]


# How a varint departs from the value it should hold, if it does: by one, to an extreme or any int64,
# or to bytes that are no varint.
VARINT_CHANGES = mostly(
    st.none(),
    st.sampled_from([-1, 1]).map(lambda d: ("by", d)),
    st.sampled_from(EXTREMES).map(lambda v: ("to", v)),
    st.integers(INT64_MIN, INT64_MAX).map(lambda v: ("to", v)),
    st.sampled_from(RAW_VARINTS).map(lambda raw: ("raw", raw)),
)
TIMESTAMP_DELTAS = mostly(st.sampled_from([0, 0, 1, 7]), st.sampled_from(EXTREMES))
ATTRIBUTES = mostly(st.just(b"\x00"), st.just(b"\x7f"))
AFTER_HEADERS = mostly(st.just(b""), st.sampled_from([b"\x00", b"\x02\x02hi\x00"]))  # a header, stray bytes
FIRST_TIMESTAMPS = mostly(st.sampled_from([BASE_TS, 0]), st.sampled_from([-1, *EXTREMES]))
BATCH_ATTRIBUTES = mostly(st.sampled_from([0, 0x10]), st.sampled_from([0x08, 0x01, 0x20, 0x40]))
COUNT_ERRORS = mostly(
    st.just(0), st.sampled_from([1, -1]), st.sampled_from([INT32_MAX, INT32_MIN, 0, -1]).map(str)
)
CUTS = mostly(st.just(0), st.sampled_from([1, 2, 5]))
TRAILERS = mostly(st.just(b""), st.sampled_from([b"\x00", b"\x01\x00"]))


def varint_of(draw: st.DrawFn, exact: int) -> bytes:
    change = draw(VARINT_CHANGES)
    if change is None:
        return _varint(exact)
    kind, how = change
    return how if kind == "raw" else _varint(exact + how if kind == "by" else how)


@st.composite
def hostile_record(draw: st.DrawFn, index: int, keyed: bool) -> bytes:
    key = draw(st.binary(max_size=4)) if keyed else None
    value = draw(st.binary(max_size=6))
    body = b"".join(
        [
            draw(ATTRIBUTES),  # unused
            varint_of(draw, draw(TIMESTAMP_DELTAS)),
            varint_of(draw, index),  # the offset delta
            varint_of(draw, -1 if key is None else len(key)),
            key or b"",
            varint_of(draw, len(value)),
            value,
            varint_of(draw, 0),  # the header count
            draw(AFTER_HEADERS),
        ]
    )
    return varint_of(draw, len(body)) + body


@st.composite
def hostile_batches(draw: st.DrawFn) -> bytes:
    keyed = draw(st.booleans())
    count = draw(st.integers(1, 4))
    records = b"".join(draw(hostile_record(i, keyed != draw(RARELY))) for i in range(count))
    first_ts = draw(FIRST_TIMESTAMPS)
    error = draw(COUNT_ERRORS)
    count_field = int(error) if isinstance(error, str) else count + error
    # attributes, last offset delta, first and max timestamp, producer id, epoch, base sequence, count
    head = struct.pack(
        ">hiqqqhii", draw(BATCH_ATTRIBUTES), count - 1, first_ts, first_ts, -1, -1, -1, count_field
    )
    tail = head + records
    tail = tail[: max(40, len(tail) - draw(CUTS))] + draw(TRAILERS)
    length = 4 + 1 + 4 + len(tail)  # leader epoch, magic, CRC, then the rest
    return struct.pack(">qiibI", 0, length, 0, 2, crc32c(tail)) + tail


def _records(batch: Any) -> list[tuple[Any, ...]]:
    return [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in batch]


def _read(data: bytes, compiled: bool) -> tuple[str, Any]:
    """read_batches' answer, with or without the compiled reader: its batches, or the refusal."""
    with patch.object(records_module, "plain_records", batch_c.plain_records if compiled else None):
        try:
            batches = read_batches(data)
        except InvalidRecords as exc:
            return "refused", exc.error_code
    heads = [(b.producer_id, b.producer_epoch, b.base_sequence, b.is_transactional) for b in batches]
    return "read", (heads, [_records(b.records) for b in batches])


@needs_compiled
@HOSTILE
@given(raw=hostile_batches())
def test_hostile_batches_are_read_as_aiokafka_reads_them(raw: bytes) -> None:
    """Whatever the compiled reader takes, aiokafka reads the same way (and does not refuse); the rest it
    declines, so read_batches answers the same with and without it: the same records or the same error."""
    assert batch_c.plain_records is not None
    columns = batch_c.plain_records(raw)
    if columns is not None:
        keyed, runs, fields, max_ts, max_index, count = columns
        decoded = _records(DefaultRecordBatch(raw))  # must not raise: the compiled reader took it
        assert count == len(decoded) >= 1
        assert [offset for offset, *_ in decoded] == list(range(count))
        assert all(headers == [] for *_, headers in decoded)
        assert fields == [f for _, _, key, value, _ in decoded for f in ((key, value) if keyed else (value,))]
        stamps = [ts for _, ts, _, _, _ in decoded]
        assert [ts for n, ts in runs for _ in range(n)] == stamps
        assert (max_ts, max_index) == (max(stamps), stamps.index(max(stamps)))
    assert _read(raw, compiled=True) == _read(raw, compiled=False)


@needs_compiled
def test_a_timestamp_past_int64_is_left_to_aiokafka() -> None:
    """first timestamp + delta overflowing int64 was a signed overflow in C; now the general path decides."""
    assert batch_c.plain_records is not None
    builder = BatchBuilder(0, CODEC_NONE)
    builder.append(0, 0, None, b"a", [])
    builder.append(1, 1, None, b"b", [])
    built = bytearray(builder.build())
    struct.pack_into(">q", built, 27, INT64_MAX)  # the first timestamp: the second record is one past it
    raw = _resealed(bytes(built))
    assert batch_c.plain_records(raw) is None
    assert _read(raw, compiled=True) == _read(raw, compiled=False)
