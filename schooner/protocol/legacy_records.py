"""Legacy message sets (magic 0 and 1): the records of Produce v0-v2, read with aiokafka's legacy reader.

A message set is a run of messages, each `offset int64, size int32, crc, magic, attributes,
[timestamp int64 from magic 1], key, value`; a compressed message (gzip, snappy, or lz4 from magic 1)
is a wrapper whose value is a whole inner message set. aiokafka checks the CRC, decompresses wrappers
and gives the records; this module turns a set into one ProducedBatch, appended like a v2 batch.

A compressed wrapper is decompressed here, within a bound (inflate.py), and its inner messages handed
to aiokafka one at a time, uncompressed: aiokafka would inflate a wrapper whole, however large.

Timestamps: a magic 0 message has none, and Kafka would keep it as -1. Schooner gives such a record
(and a magic 1 record that says -1) the time the broker received it, the same time an entry written
without a timestamp by a plain Redis client shows, so time lookups and time retention treat these
records like any other.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field

from .aiokafka_internals import LegacyRecordBatch
from .inflate import DEFAULT_LIMIT, Corrupt, TooLarge, inflate
from .records import (
    CORRUPT_MESSAGE,
    INVALID_RECORD,
    MESSAGE_TOO_LARGE,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    UNSUPPORTED_FOR_MESSAGE_FORMAT,
    InvalidRecords,
    ProducedBatch,
)

_OFFSET_AND_SIZE = struct.Struct(">qi")
_LOG_OVERHEAD = 12  # offset and size
_MAGIC_AT = 16  # offset, size, crc
_CRC_AT = 12
_ATTRIBUTES_AT = 17
_TIMESTAMP = struct.Struct(">q")  # magic 1, after the attributes
_INT32 = struct.Struct(">i")
_CODEC_MASK = 0x07
_LOG_APPEND_TIME = 0x08
_LZ4 = 3
# crc, magic, attributes, key length, value length: the smallest magic 0 message.
_MIN_MESSAGE = 4 + 1 + 1 + 4 + 4


@dataclass(slots=True)
class LegacyRecord:
    """One record of a message set, in the shape an append takes (storage's RecordLike)."""

    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]] = field(default_factory=list)  # magic 0 and 1 have none


def read_message_set(
    data: bytes, received_ms: int, max_inflated_bytes: int = DEFAULT_LIMIT
) -> list[ProducedBatch]:
    """The records of a message set as one batch ([] for no bytes at all). Raises InvalidRecords for a
    truncated set, a bad CRC, a corrupt wrapper, a magic other than 0 and 1, or compressed wrappers
    whose inner messages inflate past max_inflated_bytes together (MESSAGE_TOO_LARGE)."""
    records: list[LegacyRecord] = []
    budget = max_inflated_bytes
    largest = 0
    pos, end = 0, len(data)
    view = memoryview(data)
    while pos < end:
        if end - pos < _LOG_OVERHEAD:
            raise InvalidRecords(CORRUPT_MESSAGE, "truncated message header")
        _, size = _OFFSET_AND_SIZE.unpack_from(data, pos)
        if size < _MIN_MESSAGE or pos + _LOG_OVERHEAD + size > end:
            raise InvalidRecords(CORRUPT_MESSAGE, "truncated message")
        magic = data[pos + _MAGIC_AT]
        if magic > 1:
            raise InvalidRecords(
                UNSUPPORTED_FOR_MESSAGE_FORMAT, f"message magic {magic} in a Produce v0-v2 message set"
            )
        message = bytes(view[pos : pos + _LOG_OVERHEAD + size])
        if message[_ATTRIBUTES_AT] & _CODEC_MASK:
            inner = _inflated(message, magic, budget)
            budget -= len(inner)
            records += _inner_records(message, magic, inner, received_ms)
        else:
            records += _records_of(message, magic, received_ms)
        largest = max(largest, len(message))
        pos += len(message)
    if not records:
        if end:
            raise InvalidRecords(INVALID_RECORD, "message set holds no records")
        return []
    return [
        ProducedBatch(
            producer_id=NO_PRODUCER_ID,
            producer_epoch=NO_PRODUCER_EPOCH,
            base_sequence=NO_SEQUENCE,
            is_transactional=False,
            records=records,
            size_bytes=end,
            largest_message_bytes=largest,
        )
    ]


def _records_of(message: bytes, magic: int, received_ms: int) -> list[LegacyRecord]:
    try:
        batch = LegacyRecordBatch(message, magic)
        if not batch.validate_crc():
            raise InvalidRecords(CORRUPT_MESSAGE, "message CRC mismatch")
        return [
            LegacyRecord(
                r.timestamp if r.timestamp is not None and r.timestamp >= 0 else received_ms, r.key, r.value
            )
            for r in batch
        ]
    except InvalidRecords:
        raise
    except Exception as exc:  # a bad codec, a corrupt or truncated inner set, nested compression
        raise InvalidRecords(CORRUPT_MESSAGE, f"cannot decode message set: {exc}") from exc


def _inflated(message: bytes, magic: int, limit: int) -> bytes | bytearray:
    """A compressed wrapper's value (its inner message set) decompressed, at most limit bytes of it."""
    if zlib.crc32(memoryview(message)[_MAGIC_AT:]) != _INT32.unpack_from(message, _CRC_AT)[0] & 0xFFFFFFFF:
        raise InvalidRecords(CORRUPT_MESSAGE, "message CRC mismatch")
    codec = message[_ATTRIBUTES_AT] & _CODEC_MASK
    if codec == _LZ4 and magic == 0:  # Kafka 0.8 and 0.9 framed LZ4 wrongly: never accepted in magic 0
        raise InvalidRecords(CORRUPT_MESSAGE, "cannot decode message set: LZ4 needs magic 1")
    value = _value_of(message, _ATTRIBUTES_AT + 1 + (_TIMESTAMP.size if magic else 0))
    try:
        return inflate(codec, value, limit)
    except TooLarge as exc:
        message_text = f"compressed message set: its {exc} (the broker's max_decompressed_batch_bytes)"
        raise InvalidRecords(MESSAGE_TOO_LARGE, message_text) from exc
    except Corrupt as exc:
        raise InvalidRecords(CORRUPT_MESSAGE, f"cannot decompress message set: {exc}") from exc


def _value_of(message: bytes, pos: int) -> memoryview:
    """The value of a message whose key starts at pos (a wrapper's value must not be null)."""
    end = len(message)
    (key_size,) = _INT32.unpack_from(message, pos)
    pos += 4 + max(key_size, 0)
    if key_size < -1 or pos + 4 > end:
        raise InvalidRecords(CORRUPT_MESSAGE, "truncated compressed message")
    (value_size,) = _INT32.unpack_from(message, pos)
    pos += 4
    if value_size < 0 or pos + value_size > end:
        raise InvalidRecords(CORRUPT_MESSAGE, "compressed message without a whole value")
    return memoryview(message)[pos : pos + value_size]


def _inner_records(
    wrapper: bytes, magic: int, inner: bytes | bytearray, received_ms: int
) -> list[LegacyRecord]:
    """The records of a wrapper's inner message set: uncompressed messages of the wrapper's magic."""
    log_append = magic == 1 and wrapper[_ATTRIBUTES_AT] & _LOG_APPEND_TIME
    stamp = _TIMESTAMP.unpack_from(wrapper, _ATTRIBUTES_AT + 1)[0] if log_append else None
    records: list[LegacyRecord] = []
    view = memoryview(inner)
    pos, end = 0, len(inner)
    while pos < end:
        if end - pos < _LOG_OVERHEAD:
            raise InvalidRecords(CORRUPT_MESSAGE, "truncated inner message header")
        _, size = _OFFSET_AND_SIZE.unpack_from(inner, pos)
        if size < _MIN_MESSAGE or pos + _LOG_OVERHEAD + size > end:
            raise InvalidRecords(CORRUPT_MESSAGE, "truncated inner message")
        message = bytes(view[pos : pos + _LOG_OVERHEAD + size])
        if message[_MAGIC_AT] != magic:
            raise InvalidRecords(CORRUPT_MESSAGE, "an inner message's magic differs from its wrapper's")
        if message[_ATTRIBUTES_AT] & _CODEC_MASK:
            raise InvalidRecords(CORRUPT_MESSAGE, "cannot decode message set: nested compression")
        for record in _records_of(message, magic, received_ms):
            if stamp is not None:  # LogAppendTime on the wrapper: its time is every inner record's
                record.timestamp = stamp if stamp >= 0 else received_ms
            records.append(record)
        pos += len(message)
    return records
