"""How `schooner consume` prints a record: a kcat-style format string, or one JSON object per record.

Format tokens: %t topic, %p partition, %o offset, %k key, %s value, %h headers (name=value,...),
%T timestamp (ms), %K key size, %S value size, %% a percent sign; \\n, \\t and \\\\ escapes. A null key or
value prints as nothing (its size as -1). Keys and values are written as the bytes they are.
"""

from __future__ import annotations

import base64
import datetime
import decimal
import json
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

PRESETS = {"value": "%s\\n", "kv": "%k\\t%s\\n"}
JSON = "json"
BINARY = ("base64", "hex")


@dataclass(frozen=True)
class Consumed:
    """A record as read, independent of the client library."""

    topic: str
    partition: int
    offset: int
    timestamp: int | None
    timestamp_type: str | None
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]] = field(default_factory=list)


class FormatError(ValueError):
    pass


Piece = Callable[[Consumed], bytes]

_TOKENS: dict[str, Piece] = {
    "t": lambda r: r.topic.encode(),
    "p": lambda r: str(r.partition).encode(),
    "o": lambda r: str(r.offset).encode(),
    "k": lambda r: r.key or b"",
    "s": lambda r: r.value or b"",
    "T": lambda r: b"" if r.timestamp is None else str(r.timestamp).encode(),
    "K": lambda r: str(-1 if r.key is None else len(r.key)).encode(),
    "S": lambda r: str(-1 if r.value is None else len(r.value)).encode(),
    "h": lambda r: b",".join(name.encode() + b"=" + (v or b"") for name, v in r.headers),
    "%": lambda r: b"%",
}
_ESCAPES = {"n": b"\n", "t": b"\t", "\\": b"\\", "r": b"\r", "0": b"\0"}


def compile_format(spec: str) -> Callable[[Consumed], bytes]:
    """A format string (or a preset's name) as a function from a record to the bytes to print."""
    spec = PRESETS.get(spec, spec)
    pieces: list[Piece | bytes] = []
    literal = bytearray()
    i = 0
    while i < len(spec):
        char = spec[i]
        if char in "%\\" and i + 1 < len(spec):
            code = spec[i + 1]
            if char == "%" and code in _TOKENS:
                if code == "%":
                    literal += b"%"
                else:
                    pieces += [bytes(literal), _TOKENS[code]]
                    literal.clear()
            elif char == "\\" and code in _ESCAPES:
                literal += _ESCAPES[code]
            else:
                raise FormatError(f"unknown {char}{code} in the format {spec!r}")
            i += 2
            continue
        if char == "%":
            raise FormatError(f"a lone % at the end of the format {spec!r}")
        literal += char.encode()
        i += 1
    pieces.append(bytes(literal))
    parts = [p for p in pieces if p != b""]

    def render(record: Consumed) -> bytes:
        return b"".join(p if isinstance(p, bytes) else p(record) for p in parts)

    return render


def _text(data: bytes | None, binary: str) -> tuple[str | None, str | None]:
    """The bytes as text when they are UTF-8, else encoded as `binary` says; with the encoding used."""
    if data is None:
        return None, None
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError:
        return (base64.b64encode(data).decode() if binary == "base64" else data.hex()), binary


def as_json(record: Consumed, binary: str = "base64", decoded: Mapping[str, object] | None = None) -> str:
    """One JSON object. A key, value or header value that is not UTF-8 is given in base64 (or hex), and
    a `key_encoding`, `value_encoding` or header `encoding` field says so. A key or value in `decoded`
    (schema-encoded ones, decoded) is given as that data instead."""
    out: dict[str, Any] = {
        "topic": record.topic,
        "partition": record.partition,
        "offset": record.offset,
        "timestamp": record.timestamp,
        "timestamp_type": record.timestamp_type,
    }
    for name, data in (("key", record.key), ("value", record.value)):
        if decoded is not None and name in decoded:
            out[name] = decoded[name]
            continue
        out[name], encoding = _text(data, binary)
        if encoding:
            out[f"{name}_encoding"] = encoding
    headers = []
    for header, data in record.headers:
        value, encoding = _text(data, binary)
        headers.append({"key": header, "value": value, **({"encoding": encoding} if encoding else {})})
    out["headers"] = headers
    return json.dumps(out, ensure_ascii=False, default=_plain(binary))


def data_json(data: object, binary: str = "base64") -> str:
    """Decoded data (of a schema) as one line of JSON."""
    return json.dumps(data, ensure_ascii=False, default=_plain(binary), separators=(",", ":"))


def _plain(binary: str) -> Callable[[object], object]:
    """What JSON lacks, as decoded Avro gives it: bytes in base64 (or hex); decimals, dates, times and uuids
    as strings."""

    def plain(value: object) -> object:
        if isinstance(value, bytes):
            return base64.b64encode(value).decode() if binary == "base64" else value.hex()
        if isinstance(value, datetime.date | datetime.time):  # a datetime is a date
            return value.isoformat()
        if isinstance(value, decimal.Decimal | uuid.UUID):
            return str(value)
        raise TypeError(f"{type(value).__name__} is not JSON")

    return plain
