"""A column of keys or values decoded to its typed columns: the struct (null where a record did not
decode, or is null), the schema id each was read by, and why a record did not decode.

  schema_id_prefix: each record by the id after its magic byte 0 (Confluent's wire format);
  schema_latest: each by the subject's latest schema; a record that starts with the wire header of a
  registered id has it skipped (and, for Avro, is read from that writer's schema into the latest).

Several schemas in one column (a subject's versions) give one struct: the union of their types by field
name (fits.merge). A record whose value does not fit that type is an error like any other.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import reduce
from typing import Any

import pyarrow as pa

from ...schemas.registry import StoredSchema
from ...topics.config import SCHEMA_ID_PREFIX, SCHEMA_LATEST
from . import avro_batch
from .codecs import Codec, Decode, codec
from .fits import merge

HEADER = 5  # the magic byte 0 and a 4-byte schema id


@dataclass(frozen=True, slots=True)
class Decoded:
    typed: pa.Array | None  # None: no schema types it (no record named a registered one)
    schema_ids: pa.Array  # int32
    errors: pa.Array  # string


def decode_column(
    values: Sequence[bytes | None],
    mode: str,
    schemas: Mapping[int, StoredSchema],
    references: Mapping[int, Sequence[tuple[str, str]]],
    latest: int | None = None,
) -> Decoded:
    """The typed columns of the raw values (mode: SCHEMA_ID_PREFIX or SCHEMA_LATEST)."""
    n = len(values)
    ids: list[int | None] = [None] * n
    errors: list[str | None] = [None] * n
    out: list[Any] = [None] * n
    codecs: dict[int, Codec] = {}

    def codec_of(schema_id: int) -> Codec | None:
        found = codecs.get(schema_id)
        if found is None and schema_id in schemas:
            found = codecs[schema_id] = codec(schemas[schema_id], references.get(schema_id, ()))
        return found

    batches: list[tuple[list[int], pa.StructArray, Decode, int, int]] = []  # rows, their struct, how

    def one_by_one(rows: list[int], decode: Decode, used: int, skip: int) -> None:
        for i in rows:
            try:
                out[i] = decode(values[i][skip:])  # type: ignore[index]  # grouped: not None
            except Exception as exc:  # bad bytes: whatever the decoder raises on them
                errors[i] = f"not a record of schema id {used}: {_reason(exc)}"

    # The records by their first 5 bytes (most slices hold one schema's records: a few groups).
    by_header: dict[bytes, list[int]] = {}
    for i, value in enumerate(values):
        if value is not None:
            found_rows = by_header.get(value[:HEADER])
            if found_rows is None:
                by_header[value[:HEADER]] = [i]
            else:
                found_rows.append(i)
    reader = codec_of(latest) if mode == SCHEMA_LATEST and latest is not None else None
    for header, rows in by_header.items():
        writer_id = int.from_bytes(header[1:], "big") if len(header) == HEADER and header[0] == 0 else None
        writer = codec_of(writer_id) if writer_id is not None else None
        skip = HEADER
        if mode == SCHEMA_ID_PREFIX:
            why = None
            if writer_id is None:
                why = "no schema id: the record does not start with the magic byte 0 and an id"
            elif writer is None:
                why = f"schema id {writer_id} is not registered"
            if why is not None or writer is None or writer_id is None:
                for i in rows:
                    errors[i] = why
                continue
            decode, used = writer.decode, writer_id
        elif mode == SCHEMA_LATEST:
            if reader is None or latest is None:
                for i in rows:
                    errors[i] = "the subject has no schema"
                continue
            if writer_id is not None and writer is not None:
                decode, used = reader.reading(writer_id, writer), writer_id
            else:
                decode, used, skip = reader.decode, latest, 0
        else:
            raise ValueError(f"not a decoding mode: {mode!r}")
        for i in rows:
            ids[i] = used
        # Many records of one schema read by its own decoder (no resolution to another): in batch.
        owner = writer if mode == SCHEMA_ID_PREFIX else reader
        if (
            len(rows) >= avro_batch.MIN_BATCH
            and owner is not None
            and decode is owner.decode
            and avro_batch.supported(owner.avro)
        ):
            struct = avro_batch.batch_decode(owner.avro, [values[i][skip:] for i in rows])  # type: ignore[arg-type,index]
            if struct is not None:
                batches.append((rows, struct, decode, used, skip))
                continue
        one_by_one(rows, decode, used, skip)
    types = [c.arrow_type for c in codecs.values() if c.arrow_type is not None]
    if reader is not None and reader.arrow_type is not None:
        types = [reader.arrow_type]  # every record is read into the latest schema's shape
    typed = None
    if types:
        arrow_type = reduce(merge, types)
        parts: list[tuple[list[int], pa.Array]] = []
        for rows, struct, decode, used, skip in batches:
            try:
                parts.append((rows, avro_batch.widen(struct, arrow_type)))
            except avro_batch.Unsupported:  # a conflict of versions' types: each record's own error
                one_by_one(rows, decode, used, skip)
        if len(parts) == 1 and len(parts[0][0]) == n:
            typed = parts[0][1]  # the common case: one schema's records, all read in batch
        else:
            typed = _assemble(_array(out, arrow_type, errors), parts)
    return Decoded(typed, pa.array(ids, pa.int32()), pa.array(errors, pa.string()))


def _assemble(one_by_one: pa.Array, parts: list[tuple[list[int], pa.Array]]) -> pa.Array:
    """The records decoded one by one (null where read in batch) with each batch's in their rows."""
    if not parts:
        return one_by_one
    index = list(range(len(one_by_one)))
    base = len(one_by_one)
    for rows, part in parts:
        for j, i in enumerate(rows):
            index[i] = base + j
        base += len(part)
    return pa.concat_arrays([one_by_one] + [part for _, part in parts]).take(pa.array(index, pa.int64()))


def _array(values: list[Any], arrow_type: pa.DataType, errors: list[str | None]) -> pa.Array:
    """pa.array of the values; one that does not fit the type is made null, its reason in errors."""
    try:
        return pa.array(values, type=arrow_type)
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        pass
    for i, value in enumerate(values):
        if value is None:
            continue
        try:
            pa.array([value], type=arrow_type)
        except (pa.ArrowException, TypeError, ValueError, OverflowError) as exc:
            values[i] = None
            errors[i] = f"the decoded record does not fit the table's column type: {_reason(exc)}"
    return pa.array(values, type=arrow_type)


def _reason(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
