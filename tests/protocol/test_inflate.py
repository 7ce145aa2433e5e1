"""Compressed batches are decompressed within a bound: a batch that inflates past it is refused with
MESSAGE_TOO_LARGE after at most that much output, whatever its headers claim (protocol/inflate.py)."""

from __future__ import annotations

import struct
import tracemalloc
import zlib

import cramjam
import pytest

from schooner.protocol.inflate import DECOMPRESSED_MULTIPLE, decompressed_limit, inflate
from schooner.protocol.legacy_records import read_message_set
from schooner.protocol.records import CORRUPT_MESSAGE, MESSAGE_TOO_LARGE, InvalidRecords, read_batches
from tests.bombs import GZIP, LZ4, MIB, SNAPPY, ZSTD, bomb, compress, peak_rss_growth, v2_batch, varint

LIMIT = MIB
STAMP = 1_700_000_000_000
# (codec, what it inflates to, whether lz4/zstd frames declare that size in their header)
BOMBS = [
    pytest.param(GZIP, 128 * MIB, False, id="gzip"),
    pytest.param(ZSTD, 128 * MIB, False, id="zstd"),
    pytest.param(ZSTD, 128 * MIB, True, id="zstd-declared-size"),
    pytest.param(LZ4, 128 * MIB, False, id="lz4"),
    pytest.param(LZ4, 128 * MIB, True, id="lz4-declared-size"),
    pytest.param(SNAPPY, 128 * MIB, False, id="snappy"),
]


def _refusal(data: bytes, limit: int) -> InvalidRecords:
    with pytest.raises(InvalidRecords) as caught:
        read_batches(data, limit)
    return caught.value


@pytest.mark.parametrize(("codec", "inflated", "declared"), BOMBS)
def test_a_bomb_is_refused_as_too_large_within_the_bound(codec: int, inflated: int, declared: bool) -> None:
    data = bomb(codec, inflated, declared)
    refusals: list[InvalidRecords] = []
    tracemalloc.start()
    try:
        grown = peak_rss_growth(lambda: refusals.append(_refusal(data, LIMIT)))
        traced_peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert refusals[0].error_code == MESSAGE_TOO_LARGE
    assert "max_decompressed_batch_bytes" in str(refusals[0])
    # Before the bound, decoding this batch took twice what it inflates to (256 MiB); now a copy of
    # the batch as sent (a few KiB, 6 MiB for snappy) and at most the bound.
    assert traced_peak < len(data) + 4 * LIMIT, traced_peak
    assert grown < len(data) + 8 * LIMIT, grown


@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4, ZSTD])
def test_the_bound_is_inclusive_and_exact(codec: int) -> None:
    values = [bytes([i]) * 3000 for i in range(40)]
    records = b"".join(_record(i, v) for i, v in enumerate(values))
    data = v2_batch(codec, compress(codec, iter([records])), count=len(values))
    [batch] = read_batches(data, len(records))
    assert [r.value for r in batch.records] == values
    assert batch.size_bytes == len(data) and batch.raw == data  # as sent: the compressed batch
    assert _refusal(data, len(records) - 1).error_code == MESSAGE_TOO_LARGE


def _record(offset_delta: int, value: bytes) -> bytes:
    body = b"\x00" + varint(0) + varint(offset_delta) + varint(-1) + varint(len(value)) + value + varint(0)
    return varint(len(body)) + body


@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4, ZSTD])
def test_truncated_compressed_records_are_corrupt(codec: int) -> None:
    records = _record(0, b"x" * 5000)
    compressed = compress(codec, iter([records]))
    data = v2_batch(codec, compressed[: len(compressed) // 2])
    assert _refusal(data, LIMIT).error_code == CORRUPT_MESSAGE


def test_a_snappy_length_beyond_what_snappy_can_encode_is_corrupt_before_any_allocation() -> None:
    # Raw snappy starts with the inflated length: this block claims 4 GiB from 8 bytes.
    lying = b"\xff\xff\xff\xff\x0f" + b"\x00\x01\x02"
    tracemalloc.start()
    try:
        refusal = _refusal(v2_batch(SNAPPY, lying), 2**40)
        traced_peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert refusal.error_code == CORRUPT_MESSAGE
    assert traced_peak < MIB


def test_snappy_blocks_are_refused_from_their_declared_lengths() -> None:
    # xerial framing: each block inflates to 1 MiB; three of them pass a 3 MiB bound, not a smaller one.
    block = bytes(cramjam.snappy.compress_raw(bytes(MIB)))
    framed = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1) + (struct.pack(">i", len(block)) + block) * 3
    assert inflate(SNAPPY, framed, 3 * MIB) == bytes(3 * MIB)
    assert _refusal(v2_batch(SNAPPY, framed), 3 * MIB - 1).error_code == MESSAGE_TOO_LARGE


def test_gzip_members_one_after_another_inflate_as_one() -> None:
    two = gzip_member(b"first ") + gzip_member(b"second") + b"\x00" * 4
    assert inflate(GZIP, two, 100, prefix=b">") == b">first second"


def gzip_member(data: bytes) -> bytes:
    packer = zlib.compressobj(6, zlib.DEFLATED, 31)
    return packer.compress(data) + packer.flush()


def test_a_header_count_far_above_the_records_allocates_nothing_for_it() -> None:
    data = v2_batch(ZSTD, compress(ZSTD, iter([_record(0, b"v")])), count=2**31 - 1)
    tracemalloc.start()
    try:
        refusal = _refusal(data, LIMIT)
        traced_peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert refusal.error_code == CORRUPT_MESSAGE
    assert traced_peak < MIB


def test_the_default_bound_is_a_multiple_of_the_topics_limit() -> None:
    assert decompressed_limit(0, 2_000_000) == DECOMPRESSED_MULTIPLE * 2_000_000
    assert decompressed_limit(5_000, 2_000_000) == 5_000


def _legacy_message(magic: int, attributes: int, value: bytes, key: bytes | None = None) -> bytes:
    """One magic 0 or 1 message with offset 0, laid out by hand."""
    after_crc = struct.pack(">bb", magic, attributes) + (struct.pack(">q", STAMP) if magic else b"")
    after_crc += struct.pack(">i", -1) if key is None else struct.pack(">i", len(key)) + key
    after_crc += struct.pack(">i", len(value)) + value
    body = struct.pack(">I", zlib.crc32(after_crc)) + after_crc
    return struct.pack(">qi", 0, len(body)) + body


@pytest.mark.parametrize("magic", [0, 1])
def test_a_legacy_gzip_wrapper_bomb_is_refused_within_the_bound(magic: int) -> None:
    head = struct.pack(">qi", 0, 0)  # the inner message's offset and size; its content does not matter
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    chunk = bytes(MIB)
    inner = packer.compress(head) + b"".join(packer.compress(chunk) for _ in range(128)) + packer.flush()
    wrapper = _legacy_message(magic, GZIP, inner)
    refusals: list[InvalidRecords] = []

    def decode() -> None:
        with pytest.raises(InvalidRecords) as caught:
            read_message_set(wrapper, 0, LIMIT)
        refusals.append(caught.value)

    assert peak_rss_growth(decode) < 8 * LIMIT
    assert refusals[0].error_code == MESSAGE_TOO_LARGE


def test_legacy_wrappers_share_one_bound_and_their_records_keep_their_fields() -> None:
    inner = _legacy_message(1, 0, b"v" * 1000, key=b"k")
    wrapper = _legacy_message(1, GZIP, gzip_member(inner * 3))
    [batch] = read_message_set(wrapper * 2, 0, 6 * len(inner))
    assert [(r.key, r.value, r.timestamp) for r in batch.records] == [(b"k", b"v" * 1000, STAMP)] * 6
    with pytest.raises(InvalidRecords) as caught:
        read_message_set(wrapper * 2, 0, 6 * len(inner) - 1)
    assert caught.value.error_code == MESSAGE_TOO_LARGE


def test_a_legacy_wrapper_inside_a_wrapper_is_corrupt() -> None:
    inner = _legacy_message(1, GZIP, gzip_member(_legacy_message(1, 0, b"v")))
    with pytest.raises(InvalidRecords) as caught:
        read_message_set(_legacy_message(1, GZIP, gzip_member(inner)), 0, LIMIT)
    assert caught.value.error_code == CORRUPT_MESSAGE
