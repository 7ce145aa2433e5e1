"""Differential tests: our batches read by kafka-python's independent codec, and the other way round."""

from __future__ import annotations

import pytest
from kafka.record.default_records import DefaultRecordBatch as KafkaPythonBatch
from kafka.record.default_records import DefaultRecordBatchBuilder as KafkaPythonBuilder

from schooner.protocol.records import (
    CODEC_GZIP,
    CODEC_LZ4,
    CODEC_NONE,
    CODEC_SNAPPY,
    CODEC_ZSTD,
    TIMESTAMP_LOG_APPEND_TIME,
    BatchBuilder,
    InvalidRecords,
    as_fetched,
    read_batches,
)

RECORDS = [
    (1_700_000_000_000, b"k", b"v", [("a", b"1"), ("a", b"2")]),
    (1_700_000_000_005, None, b"", []),
    (1_700_000_000_001, b"", None, [("n", None)]),
]


@pytest.mark.parametrize("codec", [CODEC_NONE, CODEC_GZIP, CODEC_SNAPPY, CODEC_LZ4, CODEC_ZSTD])
def test_our_batches_with_offset_gaps_decode_in_kafka_python(codec: int) -> None:
    base = 1_838_414_329_679_876
    offsets = [base, base + 1, base + 5000]
    builder = BatchBuilder(base, codec)
    for off, (ts, key, value, headers) in zip(offsets, RECORDS, strict=True):
        builder.append(off, ts, key, value, headers)
    data = builder.build()
    batch = KafkaPythonBatch(data)
    assert batch.validate_crc()
    assert batch.base_offset == base and batch.next_offset == base + 5001
    got = [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in batch]
    assert got == [(o, *rec) for o, rec in zip(offsets, RECORDS, strict=True)]


def test_log_append_time_flag_is_set_with_a_valid_crc() -> None:
    builder = BatchBuilder(10, CODEC_NONE, TIMESTAMP_LOG_APPEND_TIME)
    builder.append(10, 1234, None, b"v", [])
    batch = KafkaPythonBatch(builder.build())
    assert batch.validate_crc() and batch.timestamp_type == 1
    assert [r.timestamp for r in batch] == [1234]


def test_offset_delta_limit() -> None:
    builder = BatchBuilder(0, CODEC_NONE)
    assert builder.fits(2**31 - 1) and not builder.fits(2**31)


@pytest.mark.parametrize("codec", [0, 1, 2, 3, 4])
def test_read_batches_of_kafka_python_producer_batches(codec: int) -> None:
    builder = KafkaPythonBuilder(
        magic=2,
        compression_type=codec,
        is_transactional=0,
        producer_id=9,
        producer_epoch=1,
        base_sequence=3,
        batch_size=1 << 20,
    )
    for i, (ts, key, value, headers) in enumerate(RECORDS):
        builder.append(i, ts, key, value, headers)
    data = bytes(builder.build())
    (batch,) = read_batches(data + b"")
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (9, 1, 3)
    assert batch.last_sequence == 5
    assert [(r.timestamp, r.key, r.value, r.headers) for r in batch.records] == RECORDS
    two = read_batches(data + data)
    assert len(two) == 2


def test_corrupt_and_truncated_batches() -> None:
    builder = BatchBuilder(0, CODEC_NONE)
    builder.append(0, 1, None, b"v", [])
    data = bytearray(builder.build())
    with pytest.raises(InvalidRecords) as truncated:
        read_batches(bytes(data[:-1]))
    assert truncated.value.error_code == 2
    data[-1] ^= 1
    with pytest.raises(InvalidRecords) as corrupt:
        read_batches(bytes(data))
    assert corrupt.value.error_code == 2


def _produced(
    records: list[tuple[int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]], **kw: int
) -> bytes:
    """A batch as kafka-python's producer builds it (an idempotent producer's, by default)."""
    options = {
        "compression_type": 0,
        "is_transactional": 0,
        "producer_id": 9,
        "producer_epoch": 1,
        "base_sequence": 3,
    }
    options.update(kw)
    builder = KafkaPythonBuilder(magic=2, batch_size=1 << 20, **options)
    for i, (ts, key, value, headers) in enumerate(records):
        builder.append(i, ts, key, value, headers)
    return bytes(builder.build())


def test_a_produced_batch_as_fetched_is_what_the_fetch_encoder_builds() -> None:
    """Served from memory (broker/partitions/recent_batches.py), a batch must read as one the fetch encoder
    builds from the stored entries: same bytes, so a consumer cannot tell the two apart."""
    records = sorted(RECORDS)  # the first record's timestamp is the batch's base timestamp
    base = 4_321
    served = as_fetched(_produced(records), base)
    assert served is not None
    builder = BatchBuilder(base, CODEC_NONE)
    for i, (ts, key, value, headers) in enumerate(records):
        builder.append(base + i, ts, key, value, headers)
    assert served == builder.build()
    batch = KafkaPythonBatch(served)
    assert batch.validate_crc() and batch.base_offset == base and batch.producer_id == -1


@pytest.mark.parametrize(
    "options",
    [{"compression_type": CODEC_LZ4}, {"is_transactional": 1}],
)
def test_batches_a_read_would_return_otherwise_are_not_served_as_sent(options: dict[str, int]) -> None:
    assert as_fetched(_produced(RECORDS * 30, **options), 0) is None  # enough to be worth compressing
