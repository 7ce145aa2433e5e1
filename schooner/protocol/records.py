"""Record batches (magic 2): decoding what producers send and building what consumers fetch.

The per-record work runs in aiokafka's compiled codec, which measured fastest for both directions
(see docs/benchmarks.md); this module adds the broker-side rules Kafka applies around it.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, overload

from crc32c import crc32c

from .aiokafka_internals import DefaultRecordBatch, DefaultRecordBatchBuilder, crc32c_cython
from .batch_c import plain_records
from .inflate import DEFAULT_LIMIT, Corrupt, TooLarge, inflate

CODEC_NONE = 0
CODEC_GZIP = 1
CODEC_SNAPPY = 2
CODEC_LZ4 = 3
CODEC_ZSTD = 4

CODEC_BY_NAME = {
    "none": CODEC_NONE,
    "uncompressed": CODEC_NONE,
    "producer": CODEC_NONE,  # each batch's own: the append keeps it (storage's codec runs)
    "gzip": CODEC_GZIP,
    "snappy": CODEC_SNAPPY,
    "lz4": CODEC_LZ4,
    "zstd": CODEC_ZSTD,
}

TIMESTAMP_CREATE_TIME = 0
TIMESTAMP_LOG_APPEND_TIME = 1

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1

# Offsets within the v2 batch header.
_BASE_OFFSET_AND_LENGTH = struct.Struct(">qi")
_CRC = struct.Struct(">I")
_TIMESTAMP = struct.Struct(">q")
_BASE_TIMESTAMP_OFFSET = 27
_LEADER_EPOCH_OFFSET = 12
_MAGIC_OFFSET = 16
_CRC_OFFSET = 17
_ATTRIBUTES_OFFSET = 21
_CODEC_MASK = 0x07
_TIMESTAMP_TYPE_MASK = 0x08
_TRANSACTIONAL_MASK = 0x10
_CONTROL_MASK = 0x20
CONTROL_ABORT = 0
CONTROL_COMMIT = 1
_CONTROL_KEY = struct.Struct(">hh")  # version 0, type
_CONTROL_VALUE = struct.Struct(">hi")  # version 0, coordinator epoch
_MIN_BATCH_SIZE = 61
MAX_OFFSET_DELTA = 2**31 - 1


class InvalidRecords(Exception):
    """A produce payload that Kafka would refuse; error_code says with which code."""

    def __init__(self, error_code: int, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code


CORRUPT_MESSAGE = 2
MESSAGE_TOO_LARGE = 10
UNSUPPORTED_FOR_MESSAGE_FORMAT = 43
INVALID_RECORD = 87


@dataclass(frozen=True, slots=True)
class PlainRecords:
    """A batch whose records all have a value, no headers, and all or none a key, as columns (from
    _produce.c): what the append needs, without a record object per record."""

    keyed: bool
    runs: list[tuple[int, int]]  # (count, timestamp) of each stretch of records with one timestamp
    fields: list[bytes]  # each record's value, or its key then its value when keyed
    max_timestamp: int
    max_index: int  # the first record with max_timestamp


class LazyRecords(Sequence[Any]):
    """A plain batch's records as aiokafka decodes them, decoded only if something asks for one."""

    __slots__ = ("_raw", "_count", "_records")

    def __init__(self, raw: bytes, count: int) -> None:
        self._raw = raw
        self._count = count
        self._records: list[Any] | None = None

    def _decoded(self) -> list[Any]:
        if self._records is None:
            self._records = list(DefaultRecordBatch(self._raw))
        return self._records

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, index: int) -> Any: ...
    @overload
    def __getitem__(self, index: slice) -> list[Any]: ...
    def __getitem__(self, index: int | slice) -> Any:
        return self._decoded()[index]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._decoded())


@dataclass(slots=True)
class ProducedBatch:
    producer_id: int
    producer_epoch: int
    base_sequence: int
    is_transactional: bool
    records: Sequence[Any]  # aiokafka records: .timestamp, .key, .value, .headers (storage's RecordLike)
    size_bytes: int
    # What max.message.bytes limits when it is not the whole batch: the largest message of a legacy
    # message set (legacy_records.py), as Kafka checks each of those. 0: the whole batch.
    largest_message_bytes: int = 0
    # The common batch as columns (then `records` decodes only on demand); None for any other.
    plain: PlainRecords | None = None
    raw: bytes = b""  # the batch as the producer sent it (v2 only; empty for a legacy message set)

    @property
    def checked_bytes(self) -> int:
        """The size Kafka compares with the topic's max.message.bytes."""
        return self.largest_message_bytes or self.size_bytes

    @property
    def codec(self) -> int:
        """The codec the producer compressed the batch with (0: none, and for a legacy message set)."""
        return self.raw[_ATTRIBUTES_OFFSET + 1] & _CODEC_MASK if len(self.raw) > _ATTRIBUTES_OFFSET + 1 else 0

    @property
    def last_sequence(self) -> int:
        if self.base_sequence < 0:
            return NO_SEQUENCE
        return (self.base_sequence + len(self.records) - 1) % (2**31)


def read_batches(data: bytes, max_inflated_bytes: int = DEFAULT_LIMIT) -> list[ProducedBatch]:
    """Splits a produce payload into batches and decodes their records.

    Raises InvalidRecords for truncated data, a bad CRC, an old magic, a control batch, or a compressed
    batch whose records inflate past max_inflated_bytes (MESSAGE_TOO_LARGE).
    """
    batches: list[ProducedBatch] = []
    pos = 0
    end = len(data)
    view = memoryview(data)
    while pos < end:
        if end - pos < 12:
            raise InvalidRecords(CORRUPT_MESSAGE, "truncated record batch header")
        _, length = _BASE_OFFSET_AND_LENGTH.unpack_from(data, pos)
        size = 12 + length
        # The magic first: a legacy message (magic 0 or 1) is shorter than any v2 batch.
        magic = data[pos + _MAGIC_OFFSET] if end - pos > _MAGIC_OFFSET else 2
        if magic != 2:
            raise InvalidRecords(UNSUPPORTED_FOR_MESSAGE_FORMAT, f"record batch magic {magic} is not 2")
        if length < _MIN_BATCH_SIZE - 12 or pos + size > end:
            raise InvalidRecords(CORRUPT_MESSAGE, "truncated record batch")
        # The CRC-32C in hardware (the crc32c package, which kio needs too): aiokafka's own
        # validate_crc, in software, took 49 ns per 110-byte record, this 4.
        (stored_crc,) = _CRC.unpack_from(data, pos + _CRC_OFFSET)
        if crc32c(view[pos + _ATTRIBUTES_OFFSET : pos + size]) != stored_crc:
            raise InvalidRecords(CORRUPT_MESSAGE, "record batch CRC mismatch")
        raw = bytes(view[pos : pos + size])
        columns = plain_records(raw) if plain_records is not None else None
        if columns is not None:
            batches.append(_plain_batch(raw, columns))
            pos += size
            continue
        codec = raw[_ATTRIBUTES_OFFSET + 1] & _CODEC_MASK
        batch = DefaultRecordBatch(raw if codec == CODEC_NONE else _inflated(raw, codec, max_inflated_bytes))
        if batch.is_control_batch:
            raise InvalidRecords(INVALID_RECORD, "clients may not produce control batches")
        try:
            # aiokafka's compiled records already carry timestamp/key/value/headers: no copy.
            records: list[Any] = list(batch)
        except Exception as exc:  # a codec or varint error inside the batch
            raise InvalidRecords(CORRUPT_MESSAGE, f"cannot decode records: {exc}") from exc
        if not records:
            raise InvalidRecords(INVALID_RECORD, "record batch holds no records")
        batches.append(
            ProducedBatch(
                producer_id=batch.producer_id,
                producer_epoch=batch.producer_epoch,
                base_sequence=batch.base_sequence,
                is_transactional=batch.is_transactional,
                records=records,
                size_bytes=size,
                raw=raw,
            )
        )
        pos += size
    return batches


def _inflated(raw: bytes, codec: int, limit: int) -> bytes | bytearray:
    """A compressed batch as aiokafka reads an uncompressed one: its header with no codec, then its
    records decompressed, at most `limit` bytes of them (aiokafka would inflate them all, unbounded).
    Only for reading: the length field still gives the compressed size, which aiokafka does not use."""
    head = bytearray(raw[:_MIN_BATCH_SIZE])
    head[_ATTRIBUTES_OFFSET + 1] &= ~_CODEC_MASK
    try:
        return inflate(codec, memoryview(raw)[_MIN_BATCH_SIZE:], limit, bytes(head))
    except TooLarge as exc:
        message = f"compressed record batch: its {exc} (the broker's max_decompressed_batch_bytes)"
        raise InvalidRecords(MESSAGE_TOO_LARGE, message) from exc
    except Corrupt as exc:
        raise InvalidRecords(CORRUPT_MESSAGE, f"cannot decompress records: {exc}") from exc


def _plain_batch(
    raw: bytes, columns: tuple[bool, list[tuple[int, int]], list[bytes], int, int, int]
) -> ProducedBatch:
    keyed, runs, fields, max_timestamp, max_index, count = columns
    producer_id, producer_epoch, base_sequence = _PRODUCER_HEADER.unpack_from(raw, _PRODUCER_OFFSET)
    return ProducedBatch(
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        is_transactional=bool(raw[_ATTRIBUTES_OFFSET + 1] & _TRANSACTIONAL_MASK),
        records=LazyRecords(raw, count),
        size_bytes=len(raw),
        plain=PlainRecords(keyed, runs, fields, max_timestamp, max_index),
        raw=raw,
    )


_PRODUCER = struct.Struct(">qh")
_PRODUCER_HEADER = struct.Struct(">qhi")  # and the base sequence (int32) after them
_PRODUCER_OFFSET = 43  # producer id (int64) and epoch (int16) in the v2 batch header


def as_fetched(raw: bytes, base_offset: int) -> bytes | None:
    """A produced batch as a fetch returns it, once appended at base_offset: the offset set, the
    partition leader epoch 0 and no producer (both as the fetch encoder writes them; the CRC, which
    covers the producer fields, computed again). None for a batch the fetch encoder would write
    otherwise: compressed, transactional, a control batch or LogAppendTime."""
    attributes = raw[_ATTRIBUTES_OFFSET + 1]
    if attributes & (_CODEC_MASK | _TRANSACTIONAL_MASK | _CONTROL_MASK | _TIMESTAMP_TYPE_MASK):
        return None
    if _TIMESTAMP.unpack_from(raw, _BASE_TIMESTAMP_OFFSET)[0] < 0:
        return None  # no timestamp: the append stamps the records
    buf = bytearray(raw)
    _BASE_OFFSET_AND_LENGTH.pack_into(buf, 0, base_offset, len(buf) - 12)
    struct.pack_into(">i", buf, _LEADER_EPOCH_OFFSET, 0)
    _PRODUCER_HEADER.pack_into(buf, _PRODUCER_OFFSET, NO_PRODUCER_ID, NO_PRODUCER_EPOCH, NO_SEQUENCE)
    _CRC.pack_into(buf, _CRC_OFFSET, crc32c(memoryview(buf)[_ATTRIBUTES_OFFSET:]))
    return bytes(buf)


def producer_of(data: bytes) -> tuple[int, int] | None:
    """The producer id and epoch in the first batch's header, without decoding it (None if too short)."""
    if len(data) < _PRODUCER_OFFSET + _PRODUCER.size:
        return None
    pid, epoch = _PRODUCER.unpack_from(data, _PRODUCER_OFFSET)
    return int(pid), int(epoch)


class SequenceHead(NamedTuple):
    """Who sent a batch and where it starts in the producer's sequence."""

    producer_id: int
    producer_epoch: int
    base_sequence: int


def sequence_head(data: bytes) -> SequenceHead | None:
    """The first batch's producer and base sequence, read from its header alone (None if too short or
    not a v2 batch)."""
    if len(data) < _PRODUCER_OFFSET + _PRODUCER_HEADER.size or data[_MAGIC_OFFSET] != 2:
        return None
    return SequenceHead(*_PRODUCER_HEADER.unpack_from(data, _PRODUCER_OFFSET))


class BatchBuilder:
    """Builds one fetch batch from records whose offsets may have gaps (as in a compacted topic)."""

    __slots__ = ("_builder", "base_offset", "last_offset", "_timestamp_type", "count", "_control")

    def __init__(
        self,
        base_offset: int,
        codec: int,
        timestamp_type: int = TIMESTAMP_CREATE_TIME,
        producer_id: int = NO_PRODUCER_ID,
        producer_epoch: int = NO_PRODUCER_EPOCH,
        transactional: bool = False,
        control: bool = False,
    ) -> None:
        self._builder = DefaultRecordBatchBuilder(
            2, codec, int(transactional), producer_id, producer_epoch, NO_SEQUENCE, 2**31 - 1
        )
        self.base_offset = base_offset
        self.last_offset = base_offset
        self._timestamp_type = timestamp_type
        self._control = control
        self.count = 0

    def fits(self, offset: int) -> bool:
        """Whether a record at this offset keeps the batch's offset delta within int32."""
        return offset - self.base_offset <= MAX_OFFSET_DELTA

    def append(
        self,
        offset: int,
        timestamp: int,
        key: bytes | None,
        value: bytes | None,
        headers: list[tuple[str, bytes | None]],
    ) -> None:
        self._builder.append(offset - self.base_offset, timestamp, key, value, headers)
        self.last_offset = offset
        self.count += 1

    @property
    def raw_append(self) -> Any:
        """The compiled append, taking the offset delta: for callers that add many records."""
        return self._builder.append

    def size(self) -> int:
        return int(self._builder.size())

    def build(self) -> bytes:
        buf = self._builder.build()
        _BASE_OFFSET_AND_LENGTH.pack_into(buf, 0, self.base_offset, len(buf) - 12)
        struct.pack_into(">i", buf, _LEADER_EPOCH_OFFSET, 0)
        if self._timestamp_type == TIMESTAMP_LOG_APPEND_TIME or self._control:
            if self._timestamp_type == TIMESTAMP_LOG_APPEND_TIME:
                buf[_ATTRIBUTES_OFFSET + 1] |= _TIMESTAMP_TYPE_MASK
            if self._control:
                buf[_ATTRIBUTES_OFFSET + 1] |= _CONTROL_MASK
            struct.pack_into(">I", buf, _CRC_OFFSET, crc32c_cython(bytes(buf[_ATTRIBUTES_OFFSET:])))
        return bytes(buf)


def control_batch(offset: int, timestamp: int, producer_id: int, producer_epoch: int, commit: bool) -> bytes:
    """A transaction marker as Kafka's control batch: one record whose key holds the marker type."""
    builder = BatchBuilder(offset, CODEC_NONE, TIMESTAMP_CREATE_TIME, producer_id, producer_epoch, True, True)
    key = _CONTROL_KEY.pack(0, CONTROL_COMMIT if commit else CONTROL_ABORT)
    builder.append(offset, timestamp, key, _CONTROL_VALUE.pack(0, 0), [])
    return builder.build()
