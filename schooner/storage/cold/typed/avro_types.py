"""Avro schemas as Arrow types, and payloads decoded to match them (fastavro's compiled reader).

The schema is walked in fastavro's parsed form (names in full, each named type defined once and then
named), from the registry's text with its references resolved (AvroSchema.formatted("resolved")):

  null -> string (always null)         boolean -> bool          int -> int32       long -> int64
  float -> float32                     double -> float64        bytes, fixed -> binary
  string, enum -> string               record -> struct         array -> list      map -> map<string, _>
  union of null and one type -> that type (nullable)            other unions -> struct of the branches
  date -> date32    time-millis -> time32[ms]    time-micros -> time64[us]     uuid -> string
  timestamp-millis/-micros/-nanos -> timestamp[ms/us/ns, UTC]   local-timestamp-* -> timestamp (no zone)
  decimal(p, s) -> decimal128(p, s) (decimal256 past 38 digits)
  a recursive type, an empty record -> its value as a JSON text
"""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

import fastavro
import pyarrow as pa

from .fits import Typed, json_text, list_of, map_of, safe_name, scalar, struct

_PRIMITIVES: dict[str, pa.DataType] = {
    "null": pa.string(),
    "boolean": pa.bool_(),
    "int": pa.int32(),
    "long": pa.int64(),
    "float": pa.float32(),
    "double": pa.float64(),
    "bytes": pa.binary(),
    "string": pa.string(),
}
_LOGICAL: dict[str, pa.DataType] = {
    "date": pa.date32(),
    "time-millis": pa.time32("ms"),
    "time-micros": pa.time64("us"),
    "timestamp-millis": pa.timestamp("ms", tz="UTC"),
    "timestamp-micros": pa.timestamp("us", tz="UTC"),
    "timestamp-nanos": pa.timestamp("ns", tz="UTC"),
    "local-timestamp-millis": pa.timestamp("ms"),
    "local-timestamp-micros": pa.timestamp("us"),
    "local-timestamp-nanos": pa.timestamp("ns"),
}
# Which Python values fastavro gives for a branch of a union (to tell the branches apart).
_IS: dict[str, Callable[[Any], bool]] = {
    "null": lambda v: v is None,
    "boolean": lambda v: isinstance(v, bool),
    "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "long": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "float": lambda v: isinstance(v, float),
    "double": lambda v: isinstance(v, float),
    "bytes": lambda v: isinstance(v, bytes),
    "fixed": lambda v: isinstance(v, bytes),
    "string": lambda v: isinstance(v, str),
    "enum": lambda v: isinstance(v, str),
    "array": lambda v: isinstance(v, list),
    "map": lambda v: isinstance(v, dict),
}


class _Walk:
    def __init__(self, named: dict[str, Any]) -> None:
        self.named = named
        self.walking: set[str] = set()
        self.risky = False  # a payload can nest as deep as it is long, or count items of no bytes

    def empty(self, schema: Any, seen: set[str]) -> bool:
        """Whether a value of the schema can take no bytes."""
        if isinstance(schema, str):
            if schema in self.named and schema not in seen:
                return self.empty(self.named[schema], seen | {schema})
            return schema == "null"
        if isinstance(schema, list):
            return False  # a union writes its branch index
        if schema["type"] == "record":
            return all(self.empty(f["type"], seen | {schema["name"]}) for f in schema.get("fields") or [])
        if schema["type"] == "fixed":
            return int(schema.get("size", 1)) == 0
        return schema["type"] == "null"

    def typed(self, schema: Any) -> Typed:
        if isinstance(schema, str):
            if schema in _PRIMITIVES:
                return _PRIMITIVES[schema], None
            if schema in self.walking:
                self.risky = True
                return json_text()
            return self.typed(self.named[schema])
        if isinstance(schema, list):
            return self.union(schema)
        kind = schema["type"]
        logical = schema.get("logicalType")
        if logical == "decimal" and kind in ("bytes", "fixed"):
            precision, scale = int(schema.get("precision", 0)), int(schema.get("scale", 0))
            if 0 < precision <= 76 and 0 <= scale <= precision:
                return (pa.decimal128 if precision <= 38 else pa.decimal256)(precision, scale), None
        if logical == "uuid" and kind == "string":
            return scalar(pa.string(), str)
        if logical in _LOGICAL and kind in ("int", "long"):
            return _LOGICAL[logical], None
        if kind == "record":
            return self.record(schema)
        if kind == "enum":
            return pa.string(), None
        if kind == "fixed":
            return pa.binary(), None
        if kind == "array":
            if self.empty(schema["items"], set()):
                self.risky = True  # a count of items with no bytes behind it
            return list_of(self.typed(schema["items"]))
        if kind == "map":
            return map_of((pa.string(), None), self.typed(schema["values"]))
        return self.typed(kind)  # {"type": "long"} and the like

    def record(self, schema: dict[str, Any]) -> Typed:
        name = schema["name"]
        fields = schema.get("fields") or []
        if not fields or not all(safe_name(f["name"]) for f in fields):
            return json_text()
        self.walking.add(name)
        try:
            return struct([(f["name"], self.typed(f["type"])) for f in fields])
        finally:
            self.walking.discard(name)

    def union(self, branches: list[Any]) -> Typed:
        kept = [b for b in branches if b != "null"]
        if not kept:
            return pa.string(), None
        if len(kept) == 1:
            return self.typed(kept[0])
        typed = [(self.branch_name(b), self.typed(b), self.branch_test(b)) for b in kept]
        names = [n for n, _, _ in typed]
        if len(set(names)) != len(names) or not all(safe_name(n) for n in names):
            return json_text()
        arrow, _ = struct([(n, t) for n, t, _ in typed])
        tests = [(n, t[1], test) for n, t, test in typed]

        def fit(value: Any) -> Any:
            if value is None:
                return None
            for name, one, test in tests:
                if test(value):
                    return {name: value if one is None else one(value)}
            return None

        return arrow, fit

    def resolve(self, schema: Any) -> Any:
        return self.named.get(schema, schema) if isinstance(schema, str) else schema

    def branch_name(self, schema: Any) -> str:
        schema = self.resolve(schema)
        if isinstance(schema, str):
            return schema
        if schema["type"] in ("record", "enum", "fixed"):
            return str(schema["name"]).rpartition(".")[2]
        return str(schema.get("logicalType") or schema["type"])

    def branch_test(self, schema: Any) -> Callable[[Any], bool]:
        schema = self.resolve(schema)
        if isinstance(schema, str):
            return _IS.get(schema, lambda v: False)
        kind = schema["type"]
        if kind == "record":
            names = {f["name"] for f in schema.get("fields") or []}
            return lambda v: isinstance(v, dict) and v.keys() == names
        if schema.get("logicalType") and kind not in ("record", "enum", "array", "map"):
            return lambda v: (
                not isinstance(v, bool | dict | list)
            )  # a logical value: taken by its first branch
        return _IS.get(kind, lambda v: False)


class AvroColumns:
    """One Avro schema's Arrow type and its decoder; read by `writer` (another version's resolved text)
    into this one's shape when given."""

    def __init__(self, resolved: dict[str, Any] | list[Any] | str) -> None:
        named: dict[str, Any] = {}
        self.parsed = fastavro.parse_schema(resolved, named_schemas=named)
        walk = _Walk(named)
        self.arrow_type, self.fit = walk.typed(self.parsed)
        # fastavro's compiled reader bounds neither nesting nor item counts: those read through the
        # registry's bounded decoder (schooner.schemas), and are not resolved across versions.
        self.risky = walk.risky
        self._resolved = resolved

    def decoder(self, writer: AvroColumns | None = None) -> Callable[[bytes], Any]:
        """payload -> the fitted value; raises on bytes that are not one datum of the writer's schema."""
        read, fit = fastavro.schemaless_reader, self.fit
        writer_schema, reader_schema = (self.parsed, None) if writer is None else (writer.parsed, self.parsed)
        BytesIO = io.BytesIO

        def decode(payload: bytes) -> Any:
            buf = BytesIO(payload)
            datum = read(buf, writer_schema, reader_schema)
            if buf.tell() != len(payload):
                raise ValueError(f"{len(payload) - buf.tell()} bytes left after the datum")
            return datum if fit is None else fit(datum)

        return decode
