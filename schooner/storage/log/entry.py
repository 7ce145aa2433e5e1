"""How one Kafka record is laid out as one stream entry.

Fields (a null Kafka field is left out, so null and empty stay distinct):
  key        the record key, raw bytes
  value      the record value, raw bytes (absent for a tombstone)
  timestamp  the record timestamp in ms, decimal ASCII
  headers    absent when the record has none; otherwise, for each header in order:
             uint32 BE name length, name (UTF-8), int32 BE value length (-1 = null), value bytes
Transactional records will add producer fields; readers skip fields they do not know.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Protocol

KEY = b"key"
VALUE = b"value"
TIMESTAMP = b"timestamp"
HEADERS = b"headers"

Header = tuple[str, bytes | None]


class RecordLike(Protocol):
    """What an append needs of a record: a batch's records (protocol.records) and Record both fit."""

    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[Header]


@dataclass(slots=True)
class Record:
    """A record to append, built by the MQ library and the Spark sink (plain attributes: a RecordLike)."""

    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[Header] = field(default_factory=list)


_U32 = struct.Struct(">I")
_I32 = struct.Struct(">i")


def encode_headers(headers: list[Header] | tuple[Header, ...]) -> bytes:
    parts: list[bytes] = []
    for name, value in headers:
        raw = name.encode("utf-8")
        parts.append(_U32.pack(len(raw)))
        parts.append(raw)
        if value is None:
            parts.append(_I32.pack(-1))
        else:
            parts.append(_I32.pack(len(value)))
            parts.append(bytes(value))
    return b"".join(parts)


def decode_headers(data: bytes) -> list[Header]:
    headers: list[Header] = []
    pos = 0
    end = len(data)
    while pos < end:
        (name_len,) = _U32.unpack_from(data, pos)
        pos += 4
        name = data[pos : pos + name_len].decode("utf-8", "replace")
        pos += name_len
        (value_len,) = _I32.unpack_from(data, pos)
        pos += 4
        if value_len < 0:
            headers.append((name, None))
        else:
            headers.append((name, data[pos : pos + value_len]))
            pos += value_len
    return headers


def parse_fields(
    fields: list[bytes],
) -> tuple[int, bytes | None, bytes | None, list[Header]]:
    """(timestamp, key, value, headers) of a flat [field, value, ...] reply; unknown fields are skipped."""
    key = value = None
    timestamp = -1  # -1: no timestamp field (a native writer); callers use the entry ID's ms
    headers: list[Header] = []
    for i in range(0, len(fields) - 1, 2):
        name = fields[i]
        if name == VALUE:
            value = fields[i + 1]
        elif name == KEY:
            key = fields[i + 1]
        elif name == TIMESTAMP:
            try:
                timestamp = int(fields[i + 1])
            except ValueError:
                timestamp = -1
        elif name == HEADERS:
            try:
                headers = decode_headers(fields[i + 1])
            except struct.error:
                headers = []
    return timestamp, key, value, headers
