"""JSON Schemas as Arrow types: what a schema pins down becomes a column, anything else a JSON text.

  object with properties -> struct (properties only; others dropped from the struct, kept in the raw bytes)
  integer -> int64     number -> float64     boolean -> bool     string (any format) -> string
  array with one "items" schema -> list      an enum of strings -> string
  "type" [T, "null"], anyOf/oneOf of null and one schema -> T (nullable)
  "$ref" within the schema (#/definitions/..., #/$defs/...) -> what it points at
  anything else (true, {}, several types, allOf, a "$ref" to another schema, recursion) -> a JSON text

Every value is fitted (the validated JSON may hold 1.0 for an integer, an int for a number).
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from .fits import Typed, json_text, list_of, safe_name, scalar, struct


def _integer(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
        raise ValueError(f"{value!r} is not an integer")
    return int(value)


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{value!r} is not a number")
    return float(value)


def _boolean(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{value!r} is not a boolean")
    return value


def _string(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{value!r} is not a string")
    return value


_SCALARS = {
    "integer": (pa.int64(), _integer),
    "number": (pa.float64(), _number),
    "boolean": (pa.bool_(), _boolean),
    "string": (pa.string(), _string),
}


class _Walk:
    def __init__(self, root: Any) -> None:
        self.root = root
        self.walking: set[str] = set()

    def typed(self, schema: Any) -> Typed:
        if not isinstance(schema, dict):
            return json_text()
        ref = schema.get("$ref")
        if isinstance(ref, str):
            return self.ref(ref)
        for key in ("anyOf", "oneOf"):
            choices = schema.get(key)
            if isinstance(choices, list):
                kept = [c for c in choices if not _is_null(c)]
                return self.typed(kept[0]) if len(kept) == 1 and len(schema) == 1 else json_text()
        kind = schema.get("type")
        if kind is None and "properties" in schema:
            kind = "object"
        if isinstance(kind, list):
            kept = [k for k in kind if k != "null"]
            kind = kept[0] if len(kept) == 1 else None
        if kind is None and isinstance(schema.get("enum"), list):
            kind = "string" if all(isinstance(v, str) for v in schema["enum"]) else None
        if kind in _SCALARS:
            arrow, convert = _SCALARS[kind]
            return scalar(arrow, convert)
        if kind == "array" and isinstance(schema.get("items"), dict):
            item = self.typed(schema["items"])
            inner = list_of(item)
            return inner[0], _listed(inner[1])
        if kind == "object":
            props = schema.get("properties")
            if isinstance(props, dict) and props and all(safe_name(n) for n in props):
                arrow, fit = struct([(name, self.typed(sub)) for name, sub in props.items()])
                return arrow, _object(fit)
        return json_text()

    def ref(self, ref: str) -> Typed:
        if not ref.startswith("#") or ref in self.walking:
            return json_text()
        node: Any = self.root
        for part in filter(None, ref[1:].split("/")):
            part = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(node, dict) or part not in node:
                return json_text()
            node = node[part]
        self.walking.add(ref)
        try:
            return self.typed(node)
        finally:
            self.walking.discard(ref)


def _is_null(schema: Any) -> bool:
    return isinstance(schema, dict) and schema.get("type") == "null" and len(schema) == 1


def _listed(fit: Any) -> Any:
    def check(value: Any) -> Any:
        if value is None:
            return None
        if not isinstance(value, list):
            raise ValueError(f"{value!r} is not an array")
        return value if fit is None else fit(value)

    return check


def _object(fit: Any) -> Any:
    def check(value: Any) -> Any:
        if value is None:
            return None
        if not isinstance(value, dict):
            raise ValueError(f"{value!r} is not an object")
        return value if fit is None else fit(value)

    return check


def json_schema_type(schema: Any) -> Typed:
    """The Arrow type of a JSON Schema document (its root) and the fit of its validated values."""
    return _Walk(schema).typed(schema)
