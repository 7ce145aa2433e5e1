"""Avro and JSON Schema types as Spark types, and decoded values fitted to them: pure, no I/O.

`column_for(parsed)` maps a reader schema (schooner.schemas' parsed Avro or JSON Schema) to a Column: the
Spark type of the decoded column, and how to fit a decoded value (plain Python data, as a schema's `decode`
gives it) to the Arrow form of that type. The fitting is value-driven, so a value decoded with another
(writer's) version of the schema fits too: a struct takes the reader's fields by name (a field the writer
lacks is null, one the reader lacks is dropped). `fit` is None where pyarrow takes the value as it is,
which is most of a schema: records are dicts, arrays lists, maps dicts, and `pa.array(values, type)` does
the rest in C. docs/spark.md has the mapping as a table.

Avro follows Spark's from_avro (SchemaConverters): a union of null and one type is that type (nullable),
a union of int and long is long, of float and double double, and any other union a struct of member0,
member1, ... (the non-null branches in order), of which the one the decoded value's type fits is set. A
recursive record is JSON text where it recurs (from_avro refuses recursive schemas).
"""

from __future__ import annotations

import datetime
import decimal
import json
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from avro.schema import ArraySchema, EnumSchema, FixedSchema, MapSchema, RecordSchema, Schema, UnionSchema
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    NullType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from ..schemas import AVRO, JSON, ParsedSchema, SchemaError

Fit = Callable[[Any], Any]
_EPOCH = datetime.datetime(1970, 1, 1)
_PRIMITIVES: dict[str, DataType] = {
    "null": NullType(),
    "boolean": BooleanType(),
    "int": IntegerType(),
    "long": LongType(),
    "float": FloatType(),
    "double": DoubleType(),
    "bytes": BinaryType(),
    "string": StringType(),
}
MAX_DECIMAL_PRECISION = 38  # Spark's DecimalType
# JSON Schema keywords that combine or condition subschemas: the value's shape is not one type.
_COMBINERS = ("oneOf", "anyOf", "allOf", "not", "if")


class FitError(ValueError):
    """A decoded value does not fit the reader's type."""


@dataclass(frozen=True, slots=True)
class Column:
    type: DataType
    fit: Fit | None = None  # None: the decoded value as it is; a Fit also takes None (to None)


def column_for(parsed: ParsedSchema) -> Column:
    """The decoded column of a reader schema: Avro (AvroSchema.schema) or JSON Schema (JsonSchema.schema)."""
    if parsed.schema_type == AVRO:
        return avro_column(parsed.schema)  # type: ignore[attr-defined]
    if parsed.schema_type == JSON:
        return json_column(parsed.schema)  # type: ignore[attr-defined]
    raise SchemaError(f"{parsed.schema_type} schemas are not decoded into columns")


def _maybe(fit: Fit) -> Fit:
    def fitted(value: Any) -> Any:
        return None if value is None else fit(value)

    return fitted


def as_json(value: Any) -> str | None:
    """A value as JSON text (for values with no one Spark type)."""
    if value is None:
        return None
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=_json_default)


def _json_default(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.decode("latin-1")  # as Avro's JSON encoding writes bytes: one code point per byte
    if isinstance(value, datetime.date | datetime.time | decimal.Decimal | uuid.UUID):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not JSON")


def _struct(fields: Sequence[tuple[str, Column]]) -> Column:
    """A struct of named columns from dicts: pyarrow takes a dict's keys by name, null for a missing key and
    ignoring others, so only fields whose values need fitting are touched."""
    spark = StructType([StructField(name, c.type) for name, c in fields])
    fits = [(name, c.fit) for name, c in fields if c.fit is not None]
    if not fits:
        return Column(spark)

    def fit(value: Any) -> Any:
        if not isinstance(value, dict):
            raise FitError(f"a {type(value).__name__} where a record or object was expected")
        out = dict(value)
        for name, f in fits:
            out[name] = f(value.get(name))
        return out

    return Column(spark, _maybe(fit))


def _array(items: Column) -> Column:
    f = items.fit
    if f is None:
        return Column(ArrayType(items.type))
    return Column(ArrayType(items.type), _maybe(lambda value: [f(v) for v in value]))


# -- Avro --------------------------------------------------------------------------------------------------


def avro_column(schema: Schema) -> Column:
    return _Avro().walk(schema)


def _time_number(unit: int) -> Fit:
    """time-millis / time-micros as the number they are written as (Spark's from_avro reads them so)."""

    def fit(value: Any) -> Any:
        if isinstance(value, datetime.time):
            return (
                (value.hour * 60 + value.minute) * 60 + value.second
            ) * unit + value.microsecond * unit // 1_000_000
        return value

    return _maybe(fit)


def _local_timestamp(unit: int) -> Fit:
    """local-timestamp-*: fastavro gives a naive datetime, Apache's reader the number."""

    def fit(value: Any) -> Any:
        if isinstance(value, int) and not isinstance(value, bool):
            return _EPOCH + datetime.timedelta(microseconds=value * (1_000_000 // unit))
        return value

    return _maybe(fit)


def _logical_name(s: Schema) -> str | None:
    """The logical type: the avro library's for those it knows (None if malformed), else the property."""
    known = getattr(s, "logical_type", None)
    written = s.get_prop("logicalType")
    name = known or written
    return name if isinstance(name, str) else None


def _text(value: Any) -> Any:
    return value if isinstance(value, str) else str(value)  # a uuid.UUID (fastavro) or a Decimal


class _Avro:
    def __init__(self) -> None:
        self._open: set[str] = set()  # records being walked: one met again recurs

    def walk(self, s: Schema) -> Column:
        logical = _logical_name(s)
        if logical is not None:
            found = self._logical(s, logical)
            if found is not None:
                return found
        if isinstance(s, RecordSchema):
            if s.fullname in self._open:
                return Column(StringType(), as_json)
            self._open.add(s.fullname)
            try:
                return _struct([(f.name, self.walk(f.type)) for f in s.fields])
            finally:
                self._open.discard(s.fullname)
        if isinstance(s, UnionSchema):
            return self._union(s)
        if isinstance(s, ArraySchema):
            return _array(self.walk(s.items))
        if isinstance(s, MapSchema):
            values = self.walk(s.values)
            f = values.fit
            spark = MapType(StringType(), values.type)
            if f is None:
                return Column(spark)
            return Column(spark, _maybe(lambda value: {k: f(v) for k, v in value.items()}))
        if isinstance(s, EnumSchema):
            return Column(StringType())
        if isinstance(s, FixedSchema):
            return Column(BinaryType())
        if s.type in _PRIMITIVES:
            return Column(_PRIMITIVES[s.type])
        raise SchemaError(f"Avro type {s.type!r} has no Spark type")

    def _logical(self, s: Schema, logical: str) -> Column | None:
        if logical == "date" and s.type == "int":
            return Column(DateType())
        if logical in ("timestamp-millis", "timestamp-micros") and s.type == "long":
            return Column(TimestampType())
        if logical in ("local-timestamp-millis", "local-timestamp-micros") and s.type == "long":
            return Column(
                TimestampNTZType(), _local_timestamp(1000 if logical.endswith("millis") else 1_000_000)
            )
        if logical == "time-millis" and s.type == "int":
            return Column(IntegerType(), _time_number(1000))
        if logical == "time-micros" and s.type == "long":
            return Column(LongType(), _time_number(1_000_000))
        if logical == "uuid" and s.type == "string":
            return Column(StringType(), _maybe(_text))
        if logical == "decimal" and s.type in ("bytes", "fixed") and getattr(s, "logical_type", None):
            precision, scale = int(getattr(s, "precision", 0)), int(getattr(s, "scale", 0) or 0)
            if precision <= MAX_DECIMAL_PRECISION:
                return Column(DecimalType(precision, scale))
            return Column(StringType(), _maybe(_text))  # wider than Spark's decimals: its text
        return None  # an unknown or malformed logical type: the plain type

    def _union(self, s: UnionSchema) -> Column:
        branches = [b for b in s.schemas if b.type != "null"]
        if not branches:
            return Column(NullType())
        if len(branches) == 1:
            return self.walk(branches[0])
        plain = {b.type for b in branches if b.get_prop("logicalType") is None}
        if len(plain) == len(branches) and plain in ({"int", "long"}, {"float", "double"}):
            return Column(LongType() if "int" in plain else DoubleType())  # as from_avro widens them
        members = [self.walk(b) for b in branches]
        names = [f"member{i}" for i in range(len(members))]
        spark = StructType([StructField(n, c.type) for n, c in zip(names, members, strict=True)])
        tests = [_branch_test(b) for b in branches]
        records = [
            (i, {f.name for f in b.fields}) for i, b in enumerate(branches) if isinstance(b, RecordSchema)
        ]

        def fit(value: Any) -> Any:
            chosen = next((i for i, test in enumerate(tests) if test(value)), None)
            if isinstance(value, dict) and len(records) > 1:  # which record: the one sharing most fields
                chosen = max(records, key=lambda r: len(r[1] & value.keys()))[0]
            if chosen is None:
                raise FitError(f"no member of the union takes a {type(value).__name__}")
            f = members[chosen].fit
            return {names[chosen]: value if f is None else f(value)}

        return Column(spark, _maybe(fit))


def _branch_test(s: Schema) -> Callable[[Any], bool]:
    """Whether a decoded value is of the union branch: by its Python type, as the readers give them."""
    logical = _logical_name(s)
    if logical == "date":
        return lambda v: isinstance(v, datetime.date) and not isinstance(v, datetime.datetime)
    if logical and "timestamp" in logical:
        return lambda v: isinstance(v, datetime.datetime)
    if logical and logical.startswith("time-"):
        return lambda v: isinstance(v, datetime.time)
    if logical == "decimal":
        return lambda v: isinstance(v, decimal.Decimal)
    if logical == "uuid":
        return lambda v: isinstance(v, str | uuid.UUID)
    kinds: dict[str, type | tuple[type, ...]] = {
        "boolean": bool, "int": int, "long": int, "float": float, "double": float, "bytes": bytes,
        "string": str, "fixed": bytes, "enum": str, "record": dict, "map": dict, "array": list,
    }  # fmt: skip
    kind = kinds.get(str(s.type), ())
    if kind is int:
        return lambda v: isinstance(v, int) and not isinstance(v, bool)
    return lambda v: isinstance(v, kind)


# -- JSON Schema -------------------------------------------------------------------------------------------


def json_column(schema: Any) -> Column:
    return _Json(schema).walk(schema)


def _json_long(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise FitError(f"a {type(value).__name__} where an integer was expected")
    if isinstance(value, float):
        if not value.is_integer():
            raise FitError(f"{value} is not an integer")
        return int(value)  # 3.0 is an integer in JSON Schema
    return value


_JSON_TEXT = Column(StringType(), as_json)
_JSON_TYPES: dict[str, Column] = {
    "string": Column(StringType()),
    "integer": Column(LongType(), _maybe(_json_long)),
    "number": Column(DoubleType()),
    "boolean": Column(BooleanType()),
    "null": Column(NullType()),
}


class _Json:
    def __init__(self, root: Any) -> None:
        self._root = root
        self._open: set[str] = set()  # "$ref"s being walked: one met again recurs

    def walk(self, s: Any) -> Column:
        if not isinstance(s, dict) or any(k in s for k in _COMBINERS):
            return _JSON_TEXT
        ref = s.get("$ref")
        if isinstance(ref, str):
            return self._ref(ref)
        kind = s.get("type")
        if isinstance(kind, list):  # ["string", "null"]: a nullable string
            kinds = [k for k in kind if k != "null"]
            kind = kinds[0] if len(kinds) == 1 else None
        if kind in _JSON_TYPES:
            return _JSON_TYPES[kind]
        if kind == "object":
            properties = s.get("properties")
            if isinstance(properties, dict) and properties:
                return _struct([(str(name), self.walk(sub)) for name, sub in properties.items()])
        if kind == "array" and isinstance(s.get("items"), dict):
            return _array(self.walk(s["items"]))
        return _JSON_TEXT

    def _ref(self, ref: str) -> Column:
        """A "$ref" within the schema ("#/definitions/X"); another document's is JSON text."""
        if not ref.startswith("#") or ref in self._open:
            return _JSON_TEXT
        target = self._root
        for part in filter(None, ref[1:].split("/")):
            part = part.replace("~1", "/").replace("~0", "~")
            if isinstance(target, dict) and part in target:
                target = target[part]
            elif isinstance(target, list) and part.isdigit() and int(part) < len(target):
                target = target[int(part)]
            else:
                return _JSON_TEXT
        self._open.add(ref)
        try:
            return self.walk(target)
        finally:
            self._open.discard(ref)
