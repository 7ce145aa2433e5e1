"""Checks every length a request declares against the bytes that follow it, before kio reads it.

kio's compiled reader reserves room for an array's declared item count before it reads any item.
A frame of 20 bytes that declares 2**32 items makes it ask for 32 GiB, and a failed allocation in
compiled code aborts the whole process instead of raising. Every item takes at least one byte on
the wire, so a count larger than the bytes left can only be a lie: it is refused here, cheaply,
by walking the frame with the same schema kio will use.

The same walk refuses a null array where the schema has none: kio decodes one as None, which a
handler iterating the field would trip over.
"""

from __future__ import annotations

import dataclasses
import struct
import types
import typing
from collections.abc import Callable
from functools import cache
from typing import Any

from .errors import MalformedRequest

# Reads one value starting at pos without building it, and returns the position after it.
# end is the end of the bytes this value may use.
Skip = Callable[[bytes, int, int], int]

_FIXED_SIZES = {
    "bool": 1,
    "int8": 1,
    "uint8": 1,
    "int16": 2,
    "uint16": 2,
    "error_code": 2,
    "int32": 4,
    "uint32": 4,
    "timedelta_i32": 4,
    "int64": 8,
    "uint64": 8,
    "float64": 8,
    "timedelta_i64": 8,
    "datetime_i64": 8,
    "uuid": 16,
}
_INT16 = struct.Struct(">h").unpack_from
_INT32 = struct.Struct(">i").unpack_from
# Width of the legacy (non-flexible) length prefix of each variable-size type.
_LEGACY_PREFIX = {"string": 2, "bytes": 4, "records": 4}


def check_lengths(entity_type: type, data: bytes, pos: int) -> None:
    """Raises MalformedRequest if the entity at pos declares more than the frame holds, or a null
    array its schema does not allow."""
    skip, _ = _entity(entity_type)
    skip(data, pos, len(data))


def read_uvarint(data: bytes, pos: int, end: int) -> tuple[int, int]:
    """Reads an unsigned varint of at most 5 bytes (Kafka's limit), returning it and the next pos."""
    shift = 0
    value = 0
    while True:
        if pos >= end:
            raise MalformedRequest("truncated varint")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
        if shift > 28:
            raise MalformedRequest("varint too long")


def skip_tagged_fields(data: bytes, pos: int, end: int, known: dict[int, Skip] | None = None) -> int:
    """Steps over a tagged-field section, checking the values of tags this schema knows."""
    count, pos = read_uvarint(data, pos, end)
    if 2 * count > end - pos:  # each tag takes at least two bytes
        raise MalformedRequest(f"{count} tagged fields in {end - pos} bytes")
    for _ in range(count):
        tag, pos = read_uvarint(data, pos, end)
        size, pos = read_uvarint(data, pos, end)
        value_end = pos + size
        if value_end > end:
            raise MalformedRequest("truncated tagged field")
        if known is not None and tag in known:
            known[tag](data, pos, value_end)
        pos = value_end
    return pos


@cache
def _entity(cls: type) -> tuple[Skip, int]:
    """The skip function of an entity type and the fewest bytes one entity can take."""
    flexible = bool(getattr(cls, "__flexible__", False))
    fields = dataclasses.fields(cls)
    # kio's generated modules hold real types; resolve names only if a module ever holds strings.
    hints = (
        typing.get_type_hints(cls)
        if any(isinstance(f.type, str) for f in fields)
        else {f.name: f.type for f in fields}
    )
    # Each step: the bytes of fixed-size fields before a variable one, and how to skip that one.
    steps: list[tuple[int, Skip]] = []
    tagged: dict[int, Skip] = {}
    fixed_run = 0
    min_size = 1 if flexible else 0  # the tagged-field count
    for field in fields:
        skip, size, fixed = _field(field, hints[field.name], flexible)
        tag = field.metadata.get("tag")
        if tag is not None:
            tagged[int(tag)] = skip
            continue
        min_size += size
        if fixed:
            fixed_run += size
        else:
            steps.append((fixed_run, skip))
            fixed_run = 0
    tail = fixed_run

    def skip_entity(data: bytes, pos: int, end: int) -> int:
        for before, step in steps:
            pos = step(data, pos + before, end)
        pos += tail
        if flexible:
            if pos < end and data[pos] == 0:  # no tagged fields, the usual case
                pos += 1
            else:
                pos = skip_tagged_fields(data, pos, end, tagged)
        if pos > end:
            raise MalformedRequest("truncated request")
        return pos

    return skip_entity, min_size


def _field(field: dataclasses.Field[Any], hint: Any, flexible: bool) -> tuple[Skip, int, bool]:
    """The skip function of one field, the fewest bytes it takes, and whether its size is fixed."""
    inner, nullable = _strip_optional(hint)
    if typing.get_origin(inner) is tuple:
        item_type, nullable_item = _strip_optional(typing.get_args(inner)[0])
        item_skip, item_size, item_fixed = _value(field, item_type, flexible, nullable_item)
        skip = _array(item_skip, item_size, item_fixed, flexible, nullable, field.name)
        return skip, 1 if flexible else 4, False
    return _value(field, inner, flexible, nullable)


def _value(
    field: dataclasses.Field[Any], value_type: Any, flexible: bool, nullable: bool
) -> tuple[Skip, int, bool]:
    if dataclasses.is_dataclass(value_type):
        skip, size = _entity(value_type)  # type: ignore[arg-type]
        if nullable and field.metadata.get("tag") is None:
            return _nullable_entity(skip), 1, False  # KIP-893: an int8 marker, -1 for null
        return skip, size, False
    kafka_type = field.metadata["kafka_type"]
    fixed = _FIXED_SIZES.get(kafka_type)
    if fixed is not None:
        return _advance(fixed), fixed, True
    if kafka_type not in _LEGACY_PREFIX:
        raise TypeError(f"no length check for kafka type {kafka_type!r} of {field.name}")
    if flexible:
        return _compact_sized, 1, False
    width = _LEGACY_PREFIX[kafka_type]
    return (_legacy_string if width == 2 else _legacy_bytes), width, False


def _strip_optional(hint: Any) -> tuple[Any, bool]:
    if typing.get_origin(hint) in (types.UnionType, typing.Union):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(args) == 1:
            return args[0], True
    return hint, False


def _advance(size: int) -> Skip:
    def advance(data: bytes, pos: int, end: int) -> int:
        return pos + size

    return advance


def _need(pos: int, size: int, end: int) -> None:
    if pos + size > end:
        raise MalformedRequest("truncated request")


def _legacy_string(data: bytes, pos: int, end: int) -> int:
    _need(pos, 2, end)
    (size,) = _INT16(data, pos)
    pos += 2
    if size < -1:
        raise MalformedRequest(f"negative string length {size}")
    return pos + max(size, 0)


def _legacy_bytes(data: bytes, pos: int, end: int) -> int:
    _need(pos, 4, end)
    (size,) = _INT32(data, pos)
    pos += 4
    if size < -1:
        raise MalformedRequest(f"negative bytes length {size}")
    return pos + max(size, 0)


def _compact_sized(data: bytes, pos: int, end: int) -> int:
    size_plus_one, pos = read_uvarint(data, pos, end)
    return pos + max(size_plus_one - 1, 0)


def _nullable_entity(skip: Skip) -> Skip:
    def skip_nullable(data: bytes, pos: int, end: int) -> int:
        _need(pos, 1, end)
        if data[pos] == 0xFF:
            return pos + 1
        return skip(data, pos + 1, end)

    return skip_nullable


def _array(
    item_skip: Skip, item_size: int, item_fixed: bool, flexible: bool, nullable: bool, name: str
) -> Skip:
    least = max(item_size, 1)

    def skip_array(data: bytes, pos: int, end: int) -> int:
        if flexible:
            count_plus_one, pos = read_uvarint(data, pos, end)
            count = count_plus_one - 1
        else:
            _need(pos, 4, end)
            (count,) = _INT32(data, pos)
            pos += 4
            if count < -1:
                raise MalformedRequest(f"negative array length {count}")
        if count < 0 and not nullable:
            # kio would hand a handler None where its schema promises a tuple.
            raise MalformedRequest(f"null for the non-nullable array {name}")
        if count <= 0:
            return pos
        if count * least > end - pos:
            raise MalformedRequest(f"array of {count} items in {end - pos} bytes")
        if item_fixed:
            return pos + count * item_size
        for _ in range(count):
            pos = item_skip(data, pos, end)
        return pos

    return skip_array
