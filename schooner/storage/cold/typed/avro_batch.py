"""Many Avro payloads of one writer schema decoded at once: polars' reader over an in-memory object container
file (OCF) holding them all in one block, then verified, vectorized, to be exactly what fastavro's
per-record reader gives (avro_types.AvroColumns.decoder), or refused (None: the caller decodes one by one).

A block has no record boundaries: a reader that misreads one record's length reads its neighbours from
the wrong place, often without an error. So every decode is checked against the payloads it came from:

  Walking the decoded columns in the writer's field order, each record's canonical encoded size is
  computed from its values (a varint's bytes from the value, a string's length prefix and bytes, a
  union's branch byte, ...), with its position in the block. The size of a value's canonical encoding
  is never more than the bytes the reader took for it. If every record's size equals its payload's
  length, the sizes sum to the block's length; a reader that took more than the canonical size for any
  record would have read past the block's end, which it refuses. So by induction record i is read from
  exactly its own bytes, each as the canonical (minimal) encoding of the value read: a foreign writer's
  non-minimal varint, a truncated record, trailing bytes all show as a mismatch.

Equal sizes leave a few same-length bytes that polars and fastavro read differently: a boolean byte
other than 0 and 1, a union branch index out of range, an int past 32 bits (polars wraps it), dates and
timestamps past Python's years 1-9999 (fastavro refuses them). Those bytes are read at their positions
and checked too.

Supported (anything else is None): a record of records, null/boolean/int/long/float/double/string/bytes,
enums outside nested records (polars cannot read those), unions of null and one supported type, and the
logical types date (int), timestamp-millis and timestamp-micros (long). None of them has a fit
(avro_types): fastavro's values go to pa.array as they are, so the Arrow values are the same.
"""

from __future__ import annotations

import io
import json
import weakref
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from .avro_types import AvroColumns

MIN_BATCH = 64  # fewer records are not worth the container and the checks
_SYNC = b"schooner-batch\x00\x00"  # any 16 bytes: the reader finds blocks by their size
_PAD = b"\x00" * 16  # gathers past the last record (positions of absent values) stay in bounds

# fastavro's date and timestamps: datetime.date / datetime.datetime, years 1 to 9999 (UTC)
_DAYS = (-719_162, 2_932_896)
_MICROS = (-62_135_596_800_000_000, 253_402_300_799_999_999)
_RANGES = {
    "date": _DAYS,
    "timestamp-millis": (_MICROS[0] // 1000, _MICROS[1] // 1000),
    "timestamp-micros": _MICROS,
}
_SCALARS: dict[str, pa.DataType] = {
    "boolean": pa.bool_(),
    "int": pa.int32(),
    "long": pa.int64(),
    "float": pa.float32(),
    "double": pa.float64(),
    "string": pa.string(),
    "bytes": pa.binary(),
}
_LOGICAL = {
    ("int", "date"): pa.date32(),
    ("long", "timestamp-millis"): pa.timestamp("ms", tz="UTC"),
    ("long", "timestamp-micros"): pa.timestamp("us", tz="UTC"),
}


class Unsupported(Exception):
    """The schema (or a value) is outside what the batch reads as fastavro does."""


# A plan node: ("scalar", avro kind, logical or None, arrow type) | ("enum", symbols)
#   | ("record", [(name, node)]) | ("nullable", index of null, node)
Node = tuple[Any, ...]


def _plan(schema: Any, depth: int) -> tuple[Node, Any]:
    """The node of a fastavro-parsed schema and its plain JSON for polars (depth: the records around it)."""
    if isinstance(schema, str):
        if schema not in _SCALARS:
            raise Unsupported(f"type {schema}")  # null, or a named type used a second time
        return ("scalar", schema, None, _SCALARS[schema]), schema
    if isinstance(schema, list):
        if len(schema) != 2 or "null" not in schema or schema[0] == schema[1]:
            raise Unsupported("a union other than null and one type")
        null = schema.index("null")
        node, plain = _plan(schema[1 - null], depth)
        return ("nullable", null, node), ["null", plain] if null == 0 else [plain, "null"]
    kind, logical = schema.get("type"), schema.get("logicalType")
    if logical is not None:
        arrow = _LOGICAL.get((kind, logical))
        if arrow is None:
            raise Unsupported(f"logical type {logical}")
        return ("scalar", kind, logical, arrow), {"type": kind, "logicalType": logical}
    if kind == "enum":
        symbols = list(schema["symbols"])
        if depth > 1:
            raise Unsupported("an enum in a nested record")
        return ("enum", symbols), {"type": "enum", "name": schema["name"], "symbols": symbols}
    if kind == "record":
        fields = schema.get("fields") or []
        if not fields:
            raise Unsupported("an empty record")
        planned = [(f["name"], _plan(f["type"], depth + 1)) for f in fields]
        node = ("record", [(name, n) for name, (n, _) in planned])
        plain = {"type": "record", "name": schema["name"]}
        plain["fields"] = [{"name": name, "type": p} for name, (_, p) in planned]
        return node, plain
    if isinstance(kind, str) and kind in _SCALARS and len(schema) == 1:
        return _plan(kind, depth)
    raise Unsupported(f"type {kind}")


def _arrow_type(node: Node) -> pa.DataType:
    if node[0] == "scalar":
        return node[3]
    if node[0] == "enum":
        return pa.string()
    if node[0] == "nullable":
        return _arrow_type(node[2])
    return pa.struct([pa.field(name, _arrow_type(child)) for name, child in node[1]])


def _zigzag(n: int) -> bytes:
    n = (n << 1) ^ (n >> 63)
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _text(data: bytes) -> bytes:
    return _zigzag(len(data)) + data


class _Schema:
    """One writer schema's plan and the container's header."""

    def __init__(self, avro: AvroColumns) -> None:
        self.node, plain = _plan(avro.parsed, 0)
        if self.node[0] != "record" or not _arrow_type(self.node).equals(avro.arrow_type):
            raise Unsupported("not a record of the column's type")
        meta = {b"avro.schema": json.dumps(plain).encode(), b"avro.codec": b"null"}
        self.header = (
            b"Obj\x01" + _zigzag(len(meta)) + b"".join(_text(k) + _text(v) for k, v in meta.items()) + b"\x00"
        ) + _SYNC


_schemas: weakref.WeakKeyDictionary[AvroColumns, _Schema | None] = weakref.WeakKeyDictionary()


def _schema(avro: AvroColumns) -> _Schema | None:
    if avro in _schemas:
        return _schemas[avro]
    try:
        found: _Schema | None = _Schema(avro)
    except (Unsupported, KeyError, TypeError, ValueError):
        found = None
    _schemas[avro] = found
    return found


def supported(avro: AvroColumns | None) -> bool:
    """Whether payloads of this writer schema can be read in batch."""
    return avro is not None and not avro.risky and _schema(avro) is not None


def batch_decode(avro: AvroColumns, payloads: list[bytes]) -> pa.StructArray | None:
    """The payloads' records as the schema's struct, exactly as the per-record decoder gives them; None
    when the schema is not supported or any record is not soundly read (decode those one by one)."""
    plan = _schema(avro)
    if plan is None or avro.risky or not payloads:
        return None
    import polars  # first use only: raw topics never load it
    from polars.exceptions import PanicException

    body = b"".join(payloads)
    container = plan.header + _zigzag(len(payloads)) + _zigzag(len(body)) + body + _SYNC
    try:
        table = polars.read_avro(io.BytesIO(container)).to_arrow()
    except (Exception, PanicException):  # polars' errors, and its panics on bytes it cannot read
        return None
    if table.num_rows != len(payloads):
        return None
    try:
        struct = _conform(table, plan.node)
        lengths = pa.array([len(p) for p in payloads], pa.int64())
        ends = pc.cumulative_sum(lengths)
        check = _Check(pa.py_buffer(body + _PAD), len(body))
        check.verify(struct, plan.node, pc.subtract(ends, lengths), ends)
    except (Unsupported, pa.ArrowException, IndexError, TypeError, ValueError):
        return None
    return struct


def _conform(table: pa.Table, node: Node) -> pa.StructArray:
    """polars' columns as the codec's Arrow types (large strings, dictionaries of enums, ...)."""
    names = [name for name, _ in node[1]]
    if table.column_names != names:
        raise Unsupported("the columns are not the schema's fields")
    columns = [_cast(table.column(i).combine_chunks(), child) for i, (_, child) in enumerate(node[1])]
    return pa.StructArray.from_arrays(columns, fields=list(_arrow_type(node)))


def _cast(array: pa.Array, node: Node) -> pa.Array:
    if node[0] == "nullable":
        return _cast(array, node[2])
    if node[0] == "record":
        if not isinstance(array, pa.StructArray) or [f.name for f in array.type] != [n for n, _ in node[1]]:
            raise Unsupported("a nested record's fields")
        children = [_cast(array.field(i), child) for i, (_, child) in enumerate(node[1])]
        mask = array.is_null() if array.null_count else None
        return pa.StructArray.from_arrays(children, fields=list(_arrow_type(node)), mask=mask)
    target = _arrow_type(node)
    if array.type.equals(target):
        return array
    if pa.types.is_dictionary(array.type):
        array = array.dictionary_decode()
    return pc.cast(array, target, safe=True)


def _varint_size(values: pa.Array) -> pa.Array:
    """The bytes of each value's zigzag varint (int64): z >= 2**(7k) exactly when |v| >= 2**(7k-1)."""
    values = pc.cast(values, pa.int64())
    magnitude = pc.if_else(pc.less(values, 0), pc.bit_wise_not(values), values)  # v, or -v-1 below 0
    size = pc.cast(pc.greater_equal(magnitude, 1 << 6), pa.int64())
    for k in range(2, 10):
        size = pc.add(size, pc.cast(pc.greater_equal(magnitude, 1 << (7 * k - 1)), pa.int64()))
    return pc.add(size, 1)


class _Check:
    """The walk over one batch's columns: positions in the block and the checks at them."""

    def __init__(self, body: pa.Buffer, length: int) -> None:
        self.bytes = pa.Array.from_buffers(pa.uint8(), body.size, [None, body])
        self.length = length

    def verify(self, struct: pa.StructArray, node: Node, starts: pa.Array, ends: pa.Array) -> None:
        at = self.walk(struct, node, starts, None)
        if pc.all(pc.equal(at, ends), skip_nulls=False).as_py() is not True:  # null: a value missing
            raise Unsupported("a record's size is not its payload's length")

    def byte(self, at: pa.Array, plus: int = 0) -> pa.Array:
        # positions past the block (absent values after the last record) read the padding
        return pc.take(self.bytes, pc.min_element_wise(pc.add(at, plus), self.length))

    def refuse(self, bad: pa.Array, present: pa.Array | None) -> None:
        if present is not None:
            bad = pc.and_kleene(present, bad)
        if bad.null_count or pc.any(bad).as_py():
            raise Unsupported("a value polars and fastavro read differently")

    def walk(self, array: pa.Array, node: Node, at: pa.Array, present: pa.Array | None) -> pa.Array:
        """Positions after the value (those where it is absent, as they were)."""
        kind = node[0]
        if kind == "record":
            for i, (_, child) in enumerate(node[1]):
                at = self.walk(array.field(i), child, at, present)
            return at
        if kind == "nullable":
            valid = array.is_valid()
            branch = pc.if_else(valid, 2 * (1 - node[1]), 2 * node[1])  # zigzag of the branch index
            self.refuse(pc.not_equal(self.byte(at), pc.cast(branch, pa.uint8())), present)
            at = self.advance(at, pa.scalar(1, pa.int64()), present)
            inner = valid if present is None else pc.and_(present, valid)
            return self.walk(array, node[2], at, inner)
        if kind == "enum":
            size = _varint_size(pc.index_in(array, value_set=pa.array(node[1], pa.string())))
        else:
            _, avro, logical, _ = node
            if avro == "boolean":
                self.refuse(pc.not_equal(self.byte(at), pc.cast(array, pa.uint8())), present)
                size = pa.scalar(1, pa.int64())
            elif avro in ("float", "double"):
                size = pa.scalar(4 if avro == "float" else 8, pa.int64())
            elif avro in ("string", "bytes"):
                length = pc.binary_length(array)
                size = pc.add(_varint_size(length), pc.cast(length, pa.int64()))
            else:
                number = array if logical is None else pc.cast(array, _SCALARS[avro])
                size = _varint_size(number)
                if avro == "int":  # polars wraps a longer int to 32 bits: its 5th byte tells
                    self.refuse(pc.and_(pc.equal(size, 5), pc.greater(self.byte(at, 4), 0x0F)), present)
                else:  # a 10-byte long's last byte holds only its 64th bit
                    self.refuse(pc.and_(pc.equal(size, 10), pc.not_equal(self.byte(at, 9), 1)), present)
                if logical is not None:
                    low, high = _RANGES[logical]
                    self.refuse(pc.or_(pc.less(number, low), pc.greater(number, high)), present)
        return self.advance(at, size, present)

    def advance(self, at: pa.Array, size: pa.Array | pa.Scalar, present: pa.Array | None) -> pa.Array:
        moved = pc.add(at, size)
        return moved if present is None else pc.if_else(present, moved, at)


def widen(array: pa.Array, target: pa.DataType) -> pa.Array:
    """The batch's array as the column's (merged) type, where pa.array of the per-record values would give
    the same: structs by field name (a field the batch lacks is null), int32 -> int64, float -> double.
    Unsupported for anything else (a conflict: each record then fails as it does one by one)."""
    if array.type.equals(target):
        return array
    if pa.types.is_struct(array.type) and pa.types.is_struct(target):
        struct: pa.StructArray = array  # type: ignore[assignment]
        mine = {f.name: i for i, f in enumerate(array.type)}
        children = [
            widen(struct.field(mine[f.name]), f.type) if f.name in mine else pa.nulls(len(array), f.type)
            for f in target
        ]
        mask = array.is_null() if array.null_count else None
        return pa.StructArray.from_arrays(children, fields=list(target), mask=mask)
    if (array.type, target) in ((pa.int32(), pa.int64()), (pa.float32(), pa.float64())):
        return pc.cast(array, target)
    raise Unsupported(f"{array.type} as {target}")
