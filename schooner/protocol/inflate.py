"""Decompressing what producers send, with a hard bound on the output.

A few KiB of gzip or zstd can inflate to gigabytes, and max.message.bytes limits only the compressed
size, so every codec here stops at `limit` bytes of output and never allocates more than that, whatever
a header claims: gzip through zlib's max_length, lz4 and zstd into a buffer of limit + 1 bytes (cramjam
stops when it is full), snappy after adding up the lengths its blocks declare, before any is decoded.

The output goes into a buffer that starts with `prefix` (the caller's batch header), so the inflated
batch is built without another copy.
"""

from __future__ import annotations

import mmap
import struct
import threading
import zlib
from collections.abc import Callable

import cramjam

GZIP = 1
SNAPPY = 2
LZ4 = 3
ZSTD = 4
_NAMES = {GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}

# With no broker setting: this many times the topic's max.message.bytes (docs/configuration.md).
DECOMPRESSED_MULTIPLE = 8
# For callers that know no topic: the multiple of Kafka's default max.message.bytes.
_DEFAULT_MAX_MESSAGE_BYTES = 1_048_588
DEFAULT_LIMIT = DECOMPRESSED_MULTIPLE * _DEFAULT_MAX_MESSAGE_BYTES

_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER_SIZE = 16  # magic, version (int32), compatible version (int32)
_INT32 = struct.Struct(">i")
# Snappy's densest element copies 64 bytes for 3: no valid block inflates more than this many times.
_SNAPPY_MAX_RATIO = 22
# cramjam's message when an output buffer is full but the input has more: its only sign that the
# bound, not the data, stopped it (tests/protocol/test_inflate.py fails if a cramjam words it otherwise).
_FULL = "failed to write whole buffer"


class TooLarge(Exception):
    """The data inflates past the limit."""

    def __init__(self, codec: int, limit: int) -> None:
        super().__init__(f"{_NAMES[codec]} records inflate past {limit} bytes")


class Corrupt(Exception):
    """The data is not valid for its codec."""


def decompressed_limit(setting: int, max_message_bytes: int) -> int:
    """The bound on one inflated batch: the broker's setting, or a multiple of the topic's limit."""
    return setting if setting > 0 else DECOMPRESSED_MULTIPLE * max_message_bytes


def inflate(codec: int, data: bytes | memoryview, limit: int, prefix: bytes = b"") -> bytes | bytearray:
    """prefix + data decompressed. Raises TooLarge past `limit` bytes of output, Corrupt otherwise."""
    if codec == GZIP:
        return _gzip(data, limit, prefix)
    if codec == SNAPPY:
        return _snappy(data, limit, prefix)
    if codec == LZ4:
        return _into_bounded(LZ4, cramjam.lz4.decompress_into, data, limit, prefix)
    if codec == ZSTD:
        return _into_bounded(ZSTD, cramjam.zstd.decompress_into, data, limit, prefix)
    raise Corrupt(f"unknown compression codec {codec}")


def _gzip(data: bytes | memoryview, limit: int, prefix: bytes) -> bytearray:
    out = bytearray(prefix)
    produced = 0
    rest: bytes | memoryview = data
    while True:  # one gzip member after another, as gzip(1) reads them
        member = zlib.decompressobj(wbits=31)  # gzip header and trailer, nothing else
        pending = rest
        while not member.eof:
            try:  # in steps, so that no step's output is itself a large buffer
                chunk = member.decompress(pending, _GZIP_STEP)
            except zlib.error as exc:
                raise Corrupt(f"gzip: {exc}") from exc
            pending = member.unconsumed_tail
            produced += len(chunk)
            if produced > limit:
                raise TooLarge(GZIP, limit)
            if not chunk and not pending:
                raise Corrupt("gzip: truncated data")
            out += chunk
        rest = member.unused_data
        if not rest.strip(b"\x00"):  # padding after the last member is allowed, as gzip(1) does
            return out


_GZIP_STEP = 256 * 1024


def _snappy(data: bytes | memoryview, limit: int, prefix: bytes) -> bytearray:
    view = memoryview(data)
    if len(view) > _XERIAL_HEADER_SIZE and view[: len(_XERIAL_MAGIC)] == _XERIAL_MAGIC:
        blocks = _xerial_blocks(view)
    else:  # raw snappy, as some clients send it
        blocks = [view]
    sizes = []
    total = 0
    for block in blocks:
        try:
            size = cramjam.snappy.decompress_raw_len(block)
        except cramjam.DecompressionError as exc:
            raise Corrupt(f"snappy: {exc}") from exc
        if size > _SNAPPY_MAX_RATIO * len(block):  # no snappy block expands more: the length lies
            raise Corrupt(f"snappy: a block of {len(block)} bytes declares {size}")
        total += size
        if total > limit:  # from the lengths the blocks declare, before anything is allocated
            raise TooLarge(SNAPPY, limit)
        sizes.append(size)
    out = bytearray(len(prefix) + total)
    out[: len(prefix)] = prefix
    pos = len(prefix)
    target = memoryview(out)
    for block, size in zip(blocks, sizes, strict=True):
        try:
            written = cramjam.snappy.decompress_raw_into(block, target[pos : pos + size])
        except cramjam.DecompressionError as exc:
            raise Corrupt(f"snappy: {exc}") from exc
        if written != size:
            raise Corrupt("snappy: a block is shorter than it declares")
        pos += size
    target.release()
    return out


def _xerial_blocks(view: memoryview) -> list[memoryview]:
    """The blocks of xerial's framing (the Java clients' snappy): each an int32 length and raw snappy."""
    blocks = []
    pos = _XERIAL_HEADER_SIZE
    while pos < len(view):
        if len(view) - pos < _INT32.size:
            raise Corrupt("snappy: truncated block length")
        (size,) = _INT32.unpack_from(view, pos)
        pos += _INT32.size
        if size < 0 or pos + size > len(view):
            raise Corrupt("snappy: truncated block")
        blocks.append(view[pos : pos + size])
        pos += size
    return blocks


def _into_bounded(
    codec: int, decompress_into: Callable[..., int], data: bytes | memoryview, limit: int, prefix: bytes
) -> bytes:
    """lz4 and zstd frames: their headers may state a size, or not, or lie, so the output goes into a
    buffer of limit + 1 bytes, which cramjam fills and no further."""
    end = len(prefix) + limit + 1
    buffer = _scratch(end)
    buffer[: len(prefix)] = prefix
    target = memoryview(buffer)[len(prefix) : end]
    written = 0
    try:
        written = decompress_into(data, target)
    except cramjam.DecompressionError as exc:
        written = limit + 1  # as far as is known: the buffer may be full
        if _FULL in str(exc):
            raise TooLarge(codec, limit) from exc
        raise Corrupt(f"{_NAMES[codec]}: {exc}") from exc
    finally:
        target.release()
        if written > _KEEP_RESIDENT:  # a large batch's pages go back to the system
            buffer.madvise(mmap.MADV_DONTNEED)
    if written > limit:
        raise TooLarge(codec, limit)
    return buffer[: len(prefix) + written]


# A buffer per thread, kept between batches: a fresh one per batch cost more than the decompression of
# a small batch (the mapping and its first-touch page faults). An anonymous mapping, so the pages not
# written take no memory, and it needs no zeroing.
_KEEP_RESIDENT = 1 << 20
_local = threading.local()


def _scratch(size: int) -> mmap.mmap:
    buffer: mmap.mmap | None = getattr(_local, "buffer", None)
    if buffer is None or len(buffer) < size:
        if buffer is not None:
            buffer.close()
        buffer = _local.buffer = mmap.mmap(-1, size)
    return buffer
