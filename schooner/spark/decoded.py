"""The decoded columns (keyFormat / valueFormat): reader schemas resolved on the driver, records decoded on
executors with their writers' schemas from the registry in Redis.

On the driver, the subject's latest live version is the reader schema; its Spark type (decoding.py) is the
type of `<field>Decoded`, beside `<field>SchemaId` and `<field>DecodeError`. On executors each record is
decoded with the schema its id names (fetched by id, kept per process: ids are never reused) and fitted to
the reader's type. A record that does not decode gets a null value and the reason, never a failed task;
the registry unreachable does fail the task (Spark retries it).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import pyarrow as pa
from pyspark.sql.types import DataType, IntegerType, StringType, StructField, StructType

from ..schemas import AVRO, JSON, Dependency, ParsedSchema, SchemaError, parse, wire
from ..storage.blocking_store import BlockingStore
from ..storage.schemas import registry
from .decoding import Column, column_for
from .options import Decode, OptionError
from .reading import store_for
from .schema import kafka_schema

SCHEMA_TYPES = {"avro": AVRO, "json": JSON}
MAX_SCHEMA_ID = 2**31 - 1  # the SchemaId column is an int
_MAX_WRITERS = 10_000  # writer schemas kept per process

_writers: dict[tuple[str, str, int], ParsedSchema] = {}


@dataclass(frozen=True, slots=True)
class ReaderSchema:
    """A decoded column's reader schema, as the driver resolved it (small, shipped to executors)."""

    field: str  # "key" or "value"
    subject: str
    version: int
    schema_id: int
    schema_type: str  # AVRO or JSON
    text: str
    references: tuple[Dependency, ...] = ()

    def parsed(self) -> ParsedSchema:
        return _parsed(self.schema_type, self.text, self.references)

    def column(self) -> Column:
        return _column(self.schema_type, self.text, self.references)


@lru_cache(maxsize=64)
def _parsed(schema_type: str, text: str, references: tuple[Dependency, ...]) -> ParsedSchema:
    return parse(schema_type, text, references)


@lru_cache(maxsize=64)
def _column(schema_type: str, text: str, references: tuple[Dependency, ...]) -> Column:
    return column_for(_parsed(schema_type, text, references))


def decoded_fields(reader: ReaderSchema) -> list[StructField]:
    f = reader.field
    return [
        StructField(f"{f}Decoded", reader.column().type),
        StructField(f"{f}SchemaId", IntegerType()),
        StructField(f"{f}DecodeError", StringType()),
    ]


def row_schema(include_headers: bool, readers: Sequence[ReaderSchema]) -> StructType:
    """The Kafka row schema, then each decoded column's three."""
    fields = list(kafka_schema(include_headers).fields)
    for reader in readers:
        fields += decoded_fields(reader)
    return StructType(fields)


def _load(
    store: BlockingStore, schema_id: int
) -> tuple[registry.StoredSchema, tuple[Dependency, ...]] | None:
    stored = store.run(registry.schema(store.ks, schema_id))
    if stored is None:
        return None
    deps = store.drive(registry.dependencies(store.ks, stored.references))
    return stored, tuple(Dependency(name, text) for name, text in deps)


def resolve(store: BlockingStore, decode: Decode, declared: DataType | None = None) -> ReaderSchema:
    """The reader schema: the subject's latest live version. With `declared` (the type the query was
    planned with), the newest version of that type, so a query planned before a new version was
    registered reads as planned."""
    want = SCHEMA_TYPES[decode.format]
    held = store.run(registry.versions(store.ks, decode.subject))
    live = [v for v in held if not v.deleted]
    if not live:
        raise OptionError(
            f"{decode.field}Format={decode.format}: subject {decode.subject!r} has no live version in the "
            f"schema registry (keyspace {store.ks.prefix!r}); register a schema or set {decode.field}Subject"
        )
    candidates = (
        [live[-1]] if declared is None else [*reversed(live), *(v for v in reversed(held) if v.deleted)]
    )
    for version in candidates:
        found = _load(store, version.schema_id)
        if found is None:
            continue
        stored, deps = found
        if stored.schema_type != want:
            if declared is None:
                raise OptionError(
                    f"{decode.field}Format={decode.format}: subject {decode.subject!r} holds a "
                    f"{stored.schema_type} schema (version {version.version}), not {want}"
                )
            continue
        reader = ReaderSchema(
            decode.field, decode.subject, version.version, version.schema_id, want, stored.schema, deps
        )
        try:
            spark_type = reader.column().type
        except (SchemaError, LookupError) as e:
            raise OptionError(f"subject {decode.subject!r} version {version.version}: {e}") from None
        if declared is None or spark_type == declared:
            return reader
    raise OptionError(
        f"no version of subject {decode.subject!r} has the type {decode.field}Decoded was planned with; "
        "load the DataFrame again"
    )


def resolve_all(
    url: str, keyspace: str, decodes: Sequence[Decode], schema: StructType | None = None
) -> tuple[ReaderSchema, ...]:
    """Every decoded column's reader schema; with `schema`, the ones it was planned with."""
    if not decodes:
        return ()
    store = store_for(url, keyspace)
    found = []
    for decode in decodes:
        name = f"{decode.field}Decoded"
        declared = schema[name].dataType if schema is not None and name in schema.names else None
        found.append(resolve(store, decode, declared))
    return tuple(found)


class Decoder:
    """One decoded column of one task: its three Arrow arrays from a batch's raw keys or values."""

    def __init__(self, reader: ReaderSchema, store: BlockingStore, url: str) -> None:
        from pyspark.sql.pandas.types import to_arrow_type

        self.reader = reader
        self.store = store
        self._where = (url, store.ks.prefix)
        column = reader.column()
        self._fit = column.fit
        self._type = to_arrow_type(column.type, timezone="UTC")
        self._failed: dict[int, str] = {}  # ids that did not load, this task: the reason

    def _writer(self, schema_id: int) -> ParsedSchema | str:
        if schema_id == self.reader.schema_id:
            return self.reader.parsed()
        key = (*self._where, schema_id)
        found = _writers.get(key)
        if found is not None:
            return found
        if schema_id in self._failed:
            return self._failed[schema_id]
        try:
            loaded = _load(self.store, schema_id)
            if loaded is None:
                raise LookupError(f"schema id {schema_id} is not in the schema registry")
            stored, deps = loaded
            if stored.schema_type != self.reader.schema_type:
                raise LookupError(
                    f"schema id {schema_id} is a {stored.schema_type} schema, not {self.reader.schema_type}"
                )
            parsed = parse(stored.schema_type, stored.schema, deps)
        except (LookupError, SchemaError) as e:  # registry.MissingReference is a LookupError
            self._failed[schema_id] = str(e)
            return str(e)
        if len(_writers) >= _MAX_WRITERS:
            _writers.clear()
        _writers[key] = parsed
        return parsed

    def _decode(self, data: bytes) -> tuple[int | None, Any, str | None]:
        schema_id = wire.schema_id(data)
        if schema_id is None:
            return None, None, "not in the schema registry's wire format: no magic byte 0 and schema id"
        if schema_id > MAX_SCHEMA_ID:
            return None, None, f"schema id {schema_id} is not in the schema registry"
        writer = self._writer(schema_id)
        if isinstance(writer, str):
            return schema_id, None, writer
        try:
            value = writer.decode(data[wire.HEADER :])
            return schema_id, value if self._fit is None else self._fit(value), None
        except SchemaError as e:
            return schema_id, None, str(e)
        except Exception as e:  # a fit that failed on a writer's value: that record's, not the query's
            return schema_id, None, f"the value does not fit the {self.reader.field}Decoded column: {e}"

    def arrays(self, raw: Iterable[bytes | None]) -> list[pa.Array]:
        ids: list[int | None] = []
        values: list[Any] = []
        errors: list[str | None] = []
        for data in raw:
            if data is None:  # a tombstone (or no key) decodes to null, and is no error
                ids.append(None)
                values.append(None)
                errors.append(None)
                continue
            schema_id, value, error = self._decode(data)
            ids.append(schema_id)
            values.append(value)
            errors.append(error)
        try:
            decoded = pa.array(values, type=self._type)
        except (pa.ArrowException, TypeError, ValueError, OverflowError):
            decoded = self._one_by_one(values, errors)
        return [decoded, pa.array(ids, pa.int32()), pa.array(errors, pa.string())]

    def _one_by_one(self, values: list[Any], errors: list[str | None]) -> pa.Array:
        """The values Arrow takes, each alone; the others null, with the reason."""
        for i, value in enumerate(values):
            try:
                pa.array([value], type=self._type)
            except (pa.ArrowException, TypeError, ValueError, OverflowError) as e:
                values[i] = None
                errors[i] = f"the value does not fit the {self.reader.field}Decoded column: {e}"
        return pa.array(values, type=self._type)


def decode_batches(
    batches: Iterator[pa.RecordBatch],
    readers: Sequence[ReaderSchema],
    url: str,
    keyspace: str,
    include_headers: bool,
) -> Iterator[pa.RecordBatch]:
    """The batches with the decoded columns added."""
    if not readers:
        yield from batches
        return
    from pyspark.sql.pandas.types import to_arrow_schema

    schema = to_arrow_schema(row_schema(include_headers, readers), timezone="UTC")
    store = store_for(url, keyspace)
    decoders = [Decoder(reader, store, url) for reader in readers]
    for batch in batches:
        columns = list(batch.columns)
        for decoder in decoders:
            columns += decoder.arrays(batch.column(decoder.reader.field).to_pylist())
        yield pa.RecordBatch.from_arrays(columns, schema=schema)
