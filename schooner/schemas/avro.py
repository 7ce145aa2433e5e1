"""Avro schemas: parsed by Apache's `avro` library, payloads decoded by fastavro.

A reference's text defines named types (records, enums, fixed) that the schema uses by full name. Every text
is parsed into one `avro.name.Names`, dependencies first, so the schema's fields resolve to those types; the
canonical text still writes them by name only, never inlined.

Compatibility follows the resolution rules of the Avro specification, walked here rather than taken from
`avro.compatibility`, whose result keeps the kinds of incompatibility apart from their (unordered) messages
and locations, drops locations under unions and matches only fully qualified aliases.
"""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from typing import Any, cast

import avro.io
import avro.schema
import fastavro
import fastavro.schema
from avro.name import Names
from avro.schema import (
    ArraySchema,
    EnumSchema,
    FixedSchema,
    MapSchema,
    NamedSchema,
    RecordSchema,
    Schema,
    UnionSchema,
)

from .parsed import AVRO, Dependency, ParsedSchema, SchemaError

__all__ = ["AvroSchema", "parse"]

# fastavro reads a top-level union or name again on every call, and cannot resolve a referenced name then, so
# the schema is read as the one field of a record (encoded the same). "-" keeps the name out of Avro's names.
_WRAPPER = "schooner-top"

# (writer's type, reader's type) that the reader reads by promotion.
_PROMOTIONS = {("int", "long"), ("int", "float"), ("int", "double"), ("long", "float"), ("long", "double")}
_PROMOTIONS |= {("float", "double"), ("string", "bytes"), ("bytes", "string")}
_INT_BITS = {"int": 32, "long": 64}

_Issue = tuple[str, tuple[str, ...], str]  # kind, path in the reader's schema, reason


def parse(text: str, references: Sequence[Dependency] = ()) -> AvroSchema:
    """The schema in `text`, with the named types its references define; SchemaError when it is not one."""
    names = Names()
    fast_names: dict[str, Any] = {}  # fastavro's own registry of the same named types
    for ref in references:
        _load(ref.text, names, fast_names, f"reference {ref.name!r}", wrap=False)
    referenced = dict(names.names)  # before the schema's own types join them
    schema, fast = _load(text, names, fast_names, "schema", wrap=True)
    return AvroSchema(schema, referenced, fast)


def _load(text: str, names: Names, fast_names: dict[str, Any], what: str, wrap: bool) -> tuple[Schema, Any]:
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as e:
        raise SchemaError(f"Invalid {what}: not JSON ({e})") from None
    try:
        known = names.get_name(data, None) if isinstance(data, str) else None  # a text may name a type
        schema = known if known is not None else avro.schema.make_avsc_object(data, names)
        _check_defaults(schema)
        if wrap:
            data = {"type": "record", "name": _WRAPPER, "fields": [{"name": "v", "type": data}]}
        fast = fastavro.parse_schema(data, named_schemas=fast_names)
    except SchemaError as e:
        raise SchemaError(f"Invalid {what}: {e}") from None
    except fastavro.schema.UnknownType as e:  # its text is the bare name
        raise SchemaError(f"Invalid {what}: unknown type {e}") from None
    # The parsers' reasons come as many types, some not theirs (a TypeError on odd JSON).
    except Exception as e:
        raise SchemaError(f"Invalid {what}: {_reason(e)}") from None
    return schema, fast


def _reason(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


# The attribute order Avro's Java library writes a schema in (what Confluent's registry serves): the avro
# package writes a field's "type" before its "name".
_FIRST_KEYS = ("type", "name", "namespace", "doc", "fields", "symbols", "items", "values", "size")
_FIELD_FIRST_KEYS = ("name", "type", "doc", "default")


def _in_avro_order(tree: Any, field: bool = False) -> Any:
    if isinstance(tree, list):
        return [_in_avro_order(item) for item in tree]
    if not isinstance(tree, dict):
        return tree
    first = _FIELD_FIRST_KEYS if field else _FIRST_KEYS
    keys = [k for k in first if k in tree] + [k for k in tree if k not in first]
    ordered = {}
    for key in keys:
        value = tree[key]
        if key == "fields" and isinstance(value, list):
            ordered[key] = [_in_avro_order(f, field=True) for f in value]
        elif key in ("type", "items", "values") or (key == "fields"):
            ordered[key] = _in_avro_order(value)
        else:
            ordered[key] = value  # defaults and custom properties are data, not schemas
    return ordered


class AvroSchema:
    """A parsed Avro schema (ParsedSchema), with the named types it takes from its references."""

    schema_type = AVRO

    def __init__(self, schema: Schema, referenced: dict[str, NamedSchema], fast: Any) -> None:
        self.schema = schema
        self._fast = fast
        # fastavro's compiled reader has no bound on nesting (it overflows the C stack) nor on items of no
        # bytes; avro's slower reader bounds both, so it reads the schemas where a payload can reach them.
        self._bounded = _risky(schema)
        tree = _in_avro_order(self._render(referenced))
        self._canonical = json.dumps(tree, separators=(",", ":"), ensure_ascii=False)
        self._normalized = json.dumps(tree, separators=(",", ":"), ensure_ascii=False, sort_keys=True)

    def _render(self, known: dict[str, NamedSchema]) -> Any:
        # to_json records each named type it writes out in `names`, and writes one found there by name only.
        names = Names()
        names.names = dict(known)
        return self.schema.to_json(names)

    def canonical(self) -> str:
        return self._canonical

    def normalized(self) -> str:
        # to_json spells names in full and writes {"type": "string"} as "string"; sorted keys do the rest.
        return self._normalized

    def fingerprint_text(self) -> str:
        return self._canonical

    def record_names(self) -> Sequence[str]:
        return [self.schema.fullname] if isinstance(self.schema, NamedSchema) else []

    def formatted(self, fmt: str) -> str | None:
        if fmt != "resolved":
            return None
        return json.dumps(_in_avro_order(self._render({})), separators=(",", ":"), ensure_ascii=False)

    def decode(self, payload: bytes) -> object:
        buf = io.BytesIO(payload)
        try:
            if self._bounded:
                datum = avro.io.DatumReader(self.schema).read(avro.io.BinaryDecoder(buf))
            else:
                datum = cast(dict[str, Any], fastavro.schemaless_reader(buf, self._fast, None))["v"]
        except EOFError:
            raise SchemaError("Invalid payload: it ends within the datum") from None
        except RecursionError:
            raise SchemaError("Invalid payload: the datum nests too deeply") from None
        except Exception as e:  # what a reader raises on bad bytes is not part of its API
            raise SchemaError(f"Invalid payload: {_reason(e)}") from None
        if buf.tell() != len(payload):
            raise SchemaError(f"Invalid payload: {len(payload) - buf.tell()} bytes left after the datum")
        return datum

    def read_issues(self, writer: ParsedSchema) -> list[str]:
        if not isinstance(writer, AvroSchema):
            return [f"TYPE_MISMATCH at /: the writer's schema is {writer.schema_type}, not {AVRO}"]
        issues = _Resolution().issues(self.schema, writer.schema)
        return [f"{kind} at /{'/'.join(path)}: {reason}" for kind, path, reason in issues]


def _children(s: Schema) -> list[Schema]:
    if isinstance(s, ArraySchema):
        return [s.items]
    if isinstance(s, MapSchema):
        return [s.values]
    if isinstance(s, UnionSchema):
        return list(s.schemas)
    if isinstance(s, RecordSchema):
        return [f.type for f in s.fields]
    return []


def _check_defaults(schema: Schema) -> None:
    """SchemaError for a field whose default is not a value of its type (the avro library does not check)."""
    seen: set[int] = set()
    todo = [schema]
    while todo:
        s = todo.pop()
        if id(s) in seen:
            continue
        seen.add(id(s))
        if isinstance(s, RecordSchema):
            for f in s.fields:
                if f.has_default and not _fits(f.type, f.default):
                    default, kind = json.dumps(f.default), _kind(f.type)
                    raise SchemaError(
                        f"field {f.name!r} of {s.fullname}: default {default} does not fit type {kind}"
                    )
        todo += _children(s)


def _fits(s: Schema, value: object) -> bool:
    """Whether a default (as JSON gives it) is a value of the schema."""
    if s.type == "null":
        return value is None
    if s.type == "boolean":
        return isinstance(value, bool)
    if s.type in _INT_BITS:
        bound = 1 << (_INT_BITS[s.type] - 1)
        return isinstance(value, int) and not isinstance(value, bool) and -bound <= value < bound
    if s.type in ("float", "double"):
        return isinstance(value, int | float) and not isinstance(value, bool)
    if s.type in ("string", "bytes", "fixed"):
        return isinstance(value, str)  # bytes and fixed defaults are strings of code points 0-255
    if isinstance(s, EnumSchema):
        return value in s.symbols
    if isinstance(s, ArraySchema):
        return isinstance(value, list) and all(_fits(s.items, v) for v in value)
    if isinstance(s, MapSchema):
        return isinstance(value, dict) and all(_fits(s.values, v) for v in value.values())
    if isinstance(s, UnionSchema):
        return any(_fits(b, value) for b in s.schemas)  # Avro 1.12: any branch, no longer only the first
    if isinstance(s, RecordSchema):
        return isinstance(value, dict) and all(
            _fits(f.type, value[f.name]) if f.name in value else f.has_default for f in s.fields
        )
    return True


def _risky(schema: Schema) -> bool:
    """Whether a payload can drive a reader without bound: through a recursive type (nesting as deep as the
    payload is long) or an array of items that take no bytes (a count with nothing behind it)."""
    empty: dict[int, bool] = {}  # schemas walked: can a value of it take no bytes?
    walking: set[int] = set()

    def walk(s: Schema) -> bool:
        if id(s) in walking:
            return True
        if id(s) in empty:
            return False
        walking.add(id(s))
        kids = _children(s)
        if any(walk(k) for k in kids):
            return True
        walking.discard(id(s))
        if isinstance(s, ArraySchema) and empty[id(s.items)]:
            return True
        empty[id(s)] = (
            s.type == "null"
            or (isinstance(s, FixedSchema) and s.size == 0)
            or (isinstance(s, RecordSchema) and all(empty[id(k)] for k in kids))
        )
        return False

    return walk(schema)


def _kind(s: Schema) -> str:
    return f"{s.type} {s.fullname}" if isinstance(s, NamedSchema) else str(s.type)


def _under(prefix: tuple[str, ...], issues: list[_Issue]) -> list[_Issue]:
    return [(kind, prefix + path, reason) for kind, path, reason in issues]


def _aliases(prop: object) -> list[str]:
    return [a for a in prop if isinstance(a, str)] if isinstance(prop, list) else []


def _same_name(reader: NamedSchema, writer: NamedSchema) -> bool:
    # The specification compares unqualified names; an alias without a dot is in the reader's namespace.
    if reader.name == writer.name:
        return True
    space = reader.namespace
    qualified = {a if "." in a or not space else f"{space}.{a}" for a in _aliases(reader.get_prop("aliases"))}
    return writer.fullname in qualified


class _Resolution:
    """Avro's schema resolution, walked over a reader and a writer schema together: every reason the reader
    cannot read what the writer wrote, each with its path in the reader's schema."""

    def __init__(self) -> None:
        # Pairs walked, or being walked: a recursive type meets its own pair again and takes it as readable
        # (the walk under way decides), and a type used twice is walked once.
        self._met: dict[tuple[int, int], list[_Issue]] = {}

    def issues(self, reader: Schema, writer: Schema) -> list[_Issue]:
        key = (id(reader), id(writer))
        if key not in self._met:
            self._met[key] = []
            self._met[key] = self._walk(reader, writer)
        return self._met[key]

    def _reads(self, reader: UnionSchema, writer: Schema) -> bool:
        return any(not self.issues(b, writer) for b in reader.schemas)

    def _walk(self, r: Schema, w: Schema) -> list[_Issue]:
        gap = "the reader's union has no branch for the writer's "
        if isinstance(w, UnionSchema) and isinstance(r, UnionSchema):
            branches = enumerate(w.schemas)
            return [
                ("MISSING_UNION_BRANCH", (str(i),), gap + _kind(b))
                for i, b in branches
                if not self._reads(r, b)
            ]
        if isinstance(w, UnionSchema):
            return [issue for b in w.schemas for issue in self.issues(r, b)]  # whichever branch was written
        if isinstance(r, UnionSchema):
            return [] if self._reads(r, w) else [("MISSING_UNION_BRANCH", (), gap + _kind(w))]
        if r.type != w.type:
            if (w.type, r.type) in _PROMOTIONS:
                return []
            return [("TYPE_MISMATCH", (), f"the reader's {_kind(r)} cannot read the writer's {_kind(w)}")]
        found: list[_Issue] = []
        if isinstance(r, NamedSchema) and isinstance(w, NamedSchema) and not _same_name(r, w):
            reason = f"the reader's {r.fullname} is neither named nor aliased {w.fullname}"
            found.append(("NAME_MISMATCH", ("name",), reason))
        if isinstance(r, FixedSchema) and isinstance(w, FixedSchema) and r.size != w.size:
            reason = f"the reader's size is {r.size}, the writer's {w.size}"
            found.append(("FIXED_SIZE_MISMATCH", ("size",), reason))
        elif isinstance(r, EnumSchema) and isinstance(w, EnumSchema):
            missing = [s for s in w.symbols if s not in r.symbols]
            if missing and r.get_prop("default") is None:
                reason = f"the reader has no default for the writer's symbols {', '.join(missing)}"
                found.append(("MISSING_ENUM_SYMBOLS", ("symbols",), reason))
        elif isinstance(r, RecordSchema) and isinstance(w, RecordSchema):
            found += self._fields(r, w)
        elif isinstance(r, ArraySchema) and isinstance(w, ArraySchema):
            found += _under(("items",), self.issues(r.items, w.items))
        elif isinstance(r, MapSchema) and isinstance(w, MapSchema):
            found += _under(("values",), self.issues(r.values, w.values))
        return found

    def _fields(self, reader: RecordSchema, writer: RecordSchema) -> list[_Issue]:
        found: list[_Issue] = []
        by_name = {f.name: f for f in writer.fields}
        for i, field in enumerate(reader.fields):
            names = [field.name, *_aliases(field.get_prop("aliases"))]  # the reader's aliases name old fields
            match = next((by_name[n] for n in names if n in by_name), None)
            if match is not None:
                found += _under(("fields", str(i), "type"), self.issues(field.type, match.type))
            elif not field.has_default:
                reason = f"the reader's field {field.name!r} has no default and the writer has no such field"
                found.append(("READER_FIELD_MISSING_DEFAULT_VALUE", ("fields", str(i)), reason))
        return found
