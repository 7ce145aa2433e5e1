"""What every format's mapping shares: an Arrow type with its fit (the step that turns a decoded value
into what pa.array takes for that type), the JSON-string fallback, and the merge of two versions' types.

A fit is None when the decoded value is already what pa.array takes (most Avro types): a record of such
fields costs no Python step beyond the decoder's. Every field is nullable: a column another version adds
reads as null in older rows.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa

Fit = Callable[[Any], Any] | None
Typed = tuple[pa.DataType, Fit]

JSON_TEXT = pa.string()  # what a value of no fixed shape (untyped, recursive, mixed) is held as
# Characters Delta Lake refuses in a column name without column mapping.
_UNSAFE = set(" ,;{}()\n\t=")


def safe_name(name: str) -> bool:
    return bool(name) and not (_UNSAFE & set(name))


def _default(value: Any) -> Any:
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("latin-1")  # as Avro's JSON encoding writes bytes
    return str(value)


def as_json(value: Any) -> str | None:
    if value is None:
        return None
    return json.dumps(value, default=_default, ensure_ascii=False, separators=(",", ":"))


def json_text() -> Typed:
    """The fallback: the value as a JSON text."""
    return JSON_TEXT, as_json


def struct(fields: Sequence[tuple[str, Typed]]) -> Typed:
    """A struct of named fields; a dict value keeps only those fields."""
    arrow = pa.struct([pa.field(name, typ, nullable=True) for name, (typ, _) in fields])
    fits = [(name, fit) for name, (_, fit) in fields if fit is not None]
    if not fits:
        return arrow, None

    def fit(value: Any) -> Any:
        if value is None:
            return None
        out = dict(value)
        for name, one in fits:
            out[name] = one(value.get(name))
        return out

    return arrow, fit


def list_of(item: Typed) -> Typed:
    typ, one = item
    arrow = pa.list_(pa.field("element", typ, nullable=True))
    if one is None:
        return arrow, None
    return arrow, lambda value: None if value is None else [one(v) for v in value]


def map_of(key: Typed, value: Typed) -> Typed:
    (key_type, key_fit), (value_type, value_fit) = key, value
    arrow = pa.map_(key_type, pa.field("value", value_type, nullable=True))
    if key_fit is None and value_fit is None:
        return arrow, None
    kf = key_fit or (lambda k: k)
    vf = value_fit or (lambda v: v)
    return arrow, lambda m: None if m is None else [(kf(k), vf(v)) for k, v in m.items()]


def scalar(arrow: pa.DataType, convert: Callable[[Any], Any] | None = None) -> Typed:
    if convert is None:
        return arrow, None
    return arrow, lambda value: None if value is None else convert(value)


_WIDER = {
    frozenset(("int32", "int64")): pa.int64(),
    frozenset(("float", "double")): pa.float64(),
    frozenset(("int32", "double")): pa.float64(),
    frozenset(("int64", "double")): pa.float64(),
    frozenset(("int32", "float")): pa.float64(),
    frozenset(("int64", "float")): pa.float64(),
}


def merge(a: pa.DataType, b: pa.DataType) -> pa.DataType:
    """The type that holds both versions' values: structs by field name (a's fields first, then b's
    new ones), lists and maps by their items, numbers widened; on a conflict, a (b's values that do
    not fit it become decode errors)."""
    if a.equals(b):
        return a
    if pa.types.is_struct(a) and pa.types.is_struct(b):
        theirs = {f.name: f for f in b}
        fields = [
            pa.field(f.name, merge(f.type, theirs[f.name].type) if f.name in theirs else f.type) for f in a
        ]
        mine = {f.name for f in a}
        fields += [f for f in b if f.name not in mine]
        return pa.struct(fields)
    if pa.types.is_list(a) and pa.types.is_list(b):
        return pa.list_(pa.field("element", merge(a.value_type, b.value_type)))
    if pa.types.is_map(a) and pa.types.is_map(b) and a.key_type.equals(b.key_type):
        return pa.map_(a.key_type, pa.field("value", merge(a.item_type, b.item_type)))
    wider = _WIDER.get(frozenset((str(a), str(b))))
    return wider if wider is not None else a
