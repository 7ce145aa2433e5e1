"""Protobuf messages as Arrow types, from the compiled descriptors (the schema's first top-level message).

  message -> struct       repeated -> list       map<K, V> -> map<string, V> (keys as JSON writes them)
  double -> float64       float -> float32       bool -> bool
  int32, sint32, sfixed32 -> int32               uint32, fixed32 -> uint32
  int64, sint64, sfixed64 -> int64               uint64, fixed64 -> uint64
  string -> string        bytes -> binary        enum -> string (the value's name)
  google.protobuf.* well-known types, recursive messages -> their JSON rendering, as text

Payloads are decoded by the registry's parser (to the protobuf JSON mapping), then fitted: 64-bit numbers
from their decimal texts, bytes from base64, and a field left out for holding its default (proto3) given
that default rather than null.
"""

from __future__ import annotations

import base64
from typing import Any

import pyarrow as pa
from google.protobuf.descriptor import Descriptor, FieldDescriptor

from .fits import Typed, as_json, json_text, list_of, map_of, safe_name, scalar

_F = FieldDescriptor
_INTS = {
    _F.TYPE_INT32: pa.int32(),
    _F.TYPE_SINT32: pa.int32(),
    _F.TYPE_SFIXED32: pa.int32(),
    _F.TYPE_UINT32: pa.uint32(),
    _F.TYPE_FIXED32: pa.uint32(),
    _F.TYPE_INT64: pa.int64(),
    _F.TYPE_SINT64: pa.int64(),
    _F.TYPE_SFIXED64: pa.int64(),
    _F.TYPE_UINT64: pa.uint64(),
    _F.TYPE_FIXED64: pa.uint64(),
}


def _float(value: Any) -> float:
    return float(value)  # "NaN", "Infinity" and "-Infinity" as the JSON mapping writes them


def _text_or_json(value: Any) -> str:
    return value if isinstance(value, str) else str(as_json(value))


class _Walk:
    def __init__(self) -> None:
        self.walking: set[str] = set()

    def message(self, message: Descriptor) -> Typed:
        name = message.full_name
        if name.startswith("google.protobuf.") or name in self.walking or not message.fields:
            return scalar(pa.string(), _text_or_json)
        if not all(safe_name(f.name) for f in message.fields):
            return json_text()
        self.walking.add(name)
        try:
            fields = [(f, self.field(f)) for f in message.fields]
        finally:
            self.walking.discard(name)
        arrow = pa.struct([pa.field(f.name, typ, nullable=True) for f, (typ, _) in fields])
        plan = [(f.name, fit, _default(f)) for f, (_, fit) in fields]

        def fit(value: Any) -> Any:
            if value is None:
                return None
            out = {}
            for key, one, default in plan:
                got = value.get(key, default)
                out[key] = got if one is None or got is None else one(got)
            return out

        return arrow, fit

    def field(self, field: FieldDescriptor) -> Typed:
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            entry = field.message_type
            return map_of((pa.string(), None), self.single(entry.fields_by_name["value"]))
        one = self.single(field)
        return list_of(one) if field.is_repeated else one

    def single(self, field: FieldDescriptor) -> Typed:
        kind = field.type
        if kind in (_F.TYPE_MESSAGE, _F.TYPE_GROUP):
            return self.message(field.message_type)
        if kind in _INTS:
            return scalar(_INTS[kind], int)
        if kind == _F.TYPE_DOUBLE:
            return scalar(pa.float64(), _float)
        if kind == _F.TYPE_FLOAT:
            return scalar(pa.float32(), _float)
        if kind == _F.TYPE_BOOL:
            return pa.bool_(), None
        if kind == _F.TYPE_BYTES:
            return scalar(pa.binary(), base64.b64decode)
        if kind == _F.TYPE_ENUM:
            return scalar(pa.string(), str)  # an unknown number comes as the number
        return pa.string(), None


def _default(field: FieldDescriptor) -> Any:
    """What a field the JSON mapping left out holds: null for a field with presence, else its default."""
    if field.message_type is not None and field.message_type.GetOptions().map_entry:
        return {}
    if field.is_repeated:
        return []
    if field.has_presence:
        return None
    if field.type == _F.TYPE_ENUM:
        number = field.default_value
        known = field.enum_type.values_by_number.get(number)
        return known.name if known is not None else number
    if field.type == _F.TYPE_BYTES:
        return base64.b64encode(field.default_value).decode()
    return field.default_value


def message_type(message: Descriptor) -> Typed:
    """The Arrow type of a message and the fit of its JSON-mapped values."""
    return _Walk().message(message)
