"""Compressed record batches that inflate far past their size on the wire (decompression bombs), built
without holding the inflated bytes in memory, and a measure of how much memory decoding one takes."""

from __future__ import annotations

import struct
import time
import zlib
from collections.abc import Callable, Iterator

import cramjam
import lz4.frame
import zstandard
from crc32c import crc32c

GZIP, SNAPPY, LZ4, ZSTD = 1, 2, 3, 4
MIB = 1 << 20
_XERIAL_HEADER = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)


def varint(n: int) -> bytes:
    """Kafka's zigzag varint."""
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def _record_head(value_bytes: int) -> bytes:
    head = b"\x00" + varint(0) + varint(0) + varint(-1) + varint(value_bytes)
    return varint(len(head) + value_bytes + 1) + head


def zero_record(value_bytes: int, chunk: int = MIB) -> Iterator[bytes]:
    """One record, with no key and a value of value_bytes zeros, as the pieces of its encoding."""
    yield _record_head(value_bytes)
    zeros = memoryview(bytes(chunk))
    for start in range(0, value_bytes, chunk):
        yield bytes(zeros[: min(chunk, value_bytes - start)])
    yield varint(0)  # no headers


def compress(codec: int, pieces: Iterator[bytes], declared_size: int | None = None) -> bytes:
    """The pieces compressed as Kafka's producers frame each codec: gzip, xerial-framed snappy, an LZ4
    frame, a zstd frame. declared_size: written in the lz4 and zstd frame headers."""
    if codec == GZIP:
        gz = zlib.compressobj(9, zlib.DEFLATED, 31)
        return b"".join(gz.compress(p) for p in pieces) + gz.flush()
    if codec == SNAPPY:
        return _XERIAL_HEADER + b"".join(_xerial_block(p) for p in _rechunked(pieces, 64 * 1024))
    if codec == LZ4:
        lz = lz4.frame.LZ4FrameCompressor(block_linked=False, content_checksum=False)
        out = [lz.begin(source_size=declared_size or 0)]
        out += [lz.compress(p) for p in pieces]
        return b"".join(out) + lz.flush()
    if codec == ZSTD:
        zs = zstandard.ZstdCompressor(write_content_size=declared_size is not None)
        obj = zs.compressobj(size=declared_size if declared_size is not None else -1)
        return b"".join(obj.compress(p) for p in pieces) + obj.flush()
    raise ValueError(codec)


def _rechunked(pieces: Iterator[bytes], size: int) -> Iterator[bytes]:
    pending = b""
    for p in pieces:
        pending += p
        while len(pending) >= size:
            yield pending[:size]
            pending = pending[size:]
    if pending:
        yield pending


_blocks: dict[bytes, bytes] = {}


def _xerial_block(block: bytes) -> bytes:
    if block not in _blocks:  # most blocks are the same zeros: compress each kind once
        compressed = bytes(cramjam.snappy.compress_raw(block))
        _blocks[block] = struct.pack(">i", len(compressed)) + compressed
    return _blocks[block]


def v2_batch(codec: int, records: bytes, count: int = 1, timestamp_ms: int | None = None) -> bytes:
    """A v2 record batch around records already encoded (and compressed with codec), with a valid CRC,
    stamped now by default (an old time would be trimmed at once by retention.ms)."""
    if timestamp_ms is None:
        timestamp_ms = int(time.time() * 1000)
    after_crc = (
        struct.pack(">hiqqqhii", codec, count - 1, timestamp_ms, timestamp_ms, -1, -1, -1, count) + records
    )
    body = struct.pack(">ib", 0, 2) + struct.pack(">I", crc32c(after_crc)) + after_crc
    return struct.pack(">qi", 0, len(body)) + body


def bomb(codec: int, inflated_bytes: int, declared: bool = False) -> bytes:
    """A batch of one record of zeros that inflates to about inflated_bytes."""
    value_bytes = inflated_bytes - 16
    total = len(_record_head(value_bytes)) + value_bytes + 1
    return v2_batch(codec, compress(codec, zero_record(value_bytes), total if declared else None))


def peak_rss_growth(action: Callable[[], object]) -> int:
    """Bytes the process's peak resident size rose above its size before action() (Linux: the peak is
    reset through /proc/self/clear_refs). Counts what tracemalloc does not see, such as Rust buffers."""
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")
    before = _status("VmRSS")
    action()
    return _status("VmHWM") - before


def _status(field: str) -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise LookupError(field)
