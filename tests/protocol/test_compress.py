"""compress_batches: fetch batches built uncompressed, compressed afterwards with a producer's codec."""

from __future__ import annotations

import pytest
from aiokafka.record._crecords import DefaultRecordBatch

from schooner.protocol.compress import compress_batches
from schooner.protocol.records import (
    CODEC_GZIP,
    CODEC_LZ4,
    CODEC_NONE,
    CODEC_SNAPPY,
    CODEC_ZSTD,
    BatchBuilder,
    control_batch,
)

CODECS = [CODEC_GZIP, CODEC_SNAPPY, CODEC_LZ4, CODEC_ZSTD]


def _batch(base: int, count: int, value: bytes = b'{"event": "click", "user": 42}') -> bytes:
    builder = BatchBuilder(base, CODEC_NONE)
    for i in range(count):
        builder.append(base + i, 1_700_000_000_000 + i, b"k%d" % i, value, [("h", b"v")])
    return builder.build()


def _split(data: bytes) -> list[DefaultRecordBatch]:
    out, pos = [], 0
    while pos < len(data):
        size = 12 + int.from_bytes(data[pos + 8 : pos + 12], "big")
        out.append(DefaultRecordBatch(data[pos : pos + size]))
        pos += size
    assert pos == len(data)
    return out


def _records(batch: DefaultRecordBatch) -> list[tuple[int, int, bytes | None, bytes | None, list]]:
    return [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in batch]


@pytest.mark.parametrize("codec", CODECS)
def test_each_batch_is_compressed_with_the_codec_and_reads_as_before(codec: int) -> None:
    plain = _batch(0, 200) + _batch(200, 50)
    packed = compress_batches(plain, codec)
    assert len(packed) < len(plain) / 3
    got, want = _split(packed), _split(plain)
    assert [b.compression_type for b in got] == [codec, codec]
    for g, w in zip(got, want, strict=True):
        assert g.validate_crc()
        assert (g.base_offset, g.next_offset) == (w.base_offset, w.next_offset)
        assert _records(g) == _records(w)


def test_markers_and_batches_that_do_not_shrink_stay_as_they_are() -> None:
    marker = control_batch(7, 1_700_000_000_000, 5, 0, True)
    tiny = _batch(8, 1, b"x")
    assert compress_batches(marker + tiny, CODEC_ZSTD) == marker + tiny
    assert compress_batches(_batch(0, 10), CODEC_NONE) == _batch(0, 10)
    assert compress_batches(b"", CODEC_LZ4) == b""
