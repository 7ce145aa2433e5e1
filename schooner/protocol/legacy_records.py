"""Legacy message sets (magic 0 and 1): the records of Produce v0-v2, read with aiokafka's legacy reader.

A message set is a run of messages, each `offset int64, size int32, crc, magic, attributes,
[timestamp int64 from magic 1], key, value`; a compressed message (gzip, snappy, or lz4 from magic 1)
is a wrapper whose value is a whole inner message set. aiokafka checks the CRC, decompresses wrappers
and gives the records; this module turns a set into one ProducedBatch, appended like a v2 batch.

Timestamps: a magic 0 message has none, and Kafka would keep it as -1. Schooner gives such a record
(and a magic 1 record that says -1) the time the broker received it, the same time an entry written
without a timestamp by a plain Redis client shows, so time lookups and time retention treat these
records like any other.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from aiokafka.record.legacy_records import LegacyRecordBatch

from .records import (
    CORRUPT_MESSAGE,
    INVALID_RECORD,
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
# crc, magic, attributes, key length, value length: the smallest magic 0 message.
_MIN_MESSAGE = 4 + 1 + 1 + 4 + 4


@dataclass(slots=True)
class LegacyRecord:
    """One record of a message set, in the shape an append takes (storage's RecordLike)."""

    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]] = field(default_factory=list)  # magic 0 and 1 have none


def read_message_set(data: bytes, received_ms: int) -> list[ProducedBatch]:
    """The records of a message set as one batch ([] for no bytes at all). Raises InvalidRecords for a
    truncated set, a bad CRC, a corrupt wrapper, or a magic other than 0 and 1."""
    records: list[LegacyRecord] = []
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
