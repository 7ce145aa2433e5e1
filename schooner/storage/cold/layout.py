"""The cold table's rows: stream entries to Arrow columns (archive) and back (read).

One Delta table per topic, partitioned by `partition`; one row per Kafka record, control records
(transaction markers) included, so that offsets, transactions and read_committed come back as the hot
tier gives them. docs/tiered-storage.md describes the columns for readers without Schooner.

Rows come back as stream entries, in XRANGE's shape ([id, [field, value, ...]]), with the fields the
append script writes (log/entry.py, log/transactions.py), so that the fetch codec encodes them as it
encodes entries read from Redis: the same records, byte for byte.

A topic whose table decodes its keys or values (schooner.table.key.mode / value.mode not raw) has, for
each decoded side, the struct under the side's own name (`value`, so that `SELECT value.name` reads a
field), the raw bytes as `value_raw`, and `value_schema_id` and `value_error` (cold/typed/). kafka_rows
maps such rows back to the raw names for the fetch path; a raw topic's table has today's columns only.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain
from operator import itemgetter
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ..log.entry import HEADERS, KEY, TIMESTAMP, VALUE, encode_headers, parse_fields
from ..log.transactions import CONTROL, TXN, AbortedTransaction
from ..offsets import OffsetCodec
from ..topics.metadata import Topic
from .source import ArchiveSlice, decoded_sides

PARTITION = "partition"
OFFSET = "offset"
TS = "timestamp"

HEADER_TYPE = pa.struct([pa.field("key", pa.string(), nullable=False), pa.field("value", pa.binary())])
SCHEMA = pa.schema(
    [
        pa.field(PARTITION, pa.int32(), nullable=False),
        pa.field(OFFSET, pa.int64(), nullable=False),
        pa.field(TS, pa.int64(), nullable=False),  # ms since the epoch, as Kafka's record timestamp
        pa.field("timestamp_type", pa.int8(), nullable=False),  # 0 CreateTime, 1 LogAppendTime
        pa.field("key", pa.binary()),  # null: a null key (distinct from empty)
        pa.field("value", pa.binary()),  # null: a tombstone or a control record
        pa.field("headers", pa.list_(pa.field("element", HEADER_TYPE, nullable=False)), nullable=False),
        pa.field("producer_id", pa.int64()),  # transactional records and markers only
        pa.field("producer_epoch", pa.int16()),
        pa.field("transactional", pa.bool_(), nullable=False),
        pa.field("control", pa.string()),  # "commit" / "abort" for a transaction marker, else null
        pa.field("aborted", pa.bool_(), nullable=False),  # a data record of an aborted transaction
    ]
)
# What a read needs (the partition is in the file's path, and known).
READ_COLUMNS = [f.name for f in SCHEMA if f.name != PARTITION]
READ_SCHEMA = pa.schema([SCHEMA.field(name) for name in READ_COLUMNS])
# Estimated cost of a record in a fetch response: the fetch codec's RECORD_OVERHEAD_BYTES.
RECORD_OVERHEAD_BYTES = 24


def to_table(
    entries: Sequence[Any],
    offsets: OffsetCodec,
    partition: int,
    log_append_time: bool,
    aborted: Sequence[AbortedTransaction],
    from_offset: int = 0,
) -> pa.Table:
    """The rows of the entries at or after from_offset. aborted must list every aborted transaction
    with records among them (ArchiveSlice.aborted)."""
    plain = _plain_table(entries, offsets, partition, log_append_time, from_offset)
    if plain is not None:
        return plain
    return entry_by_entry(entries, offsets, partition, log_append_time, aborted, from_offset)


RAW_SUFFIX = "_raw"
SCHEMA_ID_SUFFIX = "_schema_id"
ERROR_SUFFIX = "_error"


def archive_rows(topic: Topic, partition: int, piece: ArchiveSlice, from_offset: int = 0) -> pa.Table:
    """The table rows of an archive slice's records at or after from_offset, in every format's table:
    SCHEMA's columns, with each decoded side's typed columns (the struct left out while no schema types
    it: a table written with schema merging reads it as null there)."""
    rows = to_table(
        piece.entries, topic.offsets, partition, topic.log_append_time, piece.aborted, from_offset
    )
    sides = decoded_sides(topic)
    if not sides:
        return rows
    from .typed import decode_column  # the parsers load only for topics that decode

    docs = piece.schemas
    for side, mode in sides:
        raw = rows.column(side)
        found = decode_column(raw.to_pylist(), mode, docs.by_id, docs.references, docs.latest.get(side))
        rows = rows.set_column(rows.schema.get_field_index(side), side + RAW_SUFFIX, raw)
        if found.typed is not None:
            rows = rows.append_column(pa.field(side, found.typed.type), found.typed)
        rows = rows.append_column(side + SCHEMA_ID_SUFFIX, found.schema_ids)
        rows = rows.append_column(side + ERROR_SUFFIX, found.errors)
    return rows


def table_schema(topic: Topic) -> pa.Schema:
    """The columns a topic's table is made with: SCHEMA for a raw topic; for a decoded one, the raw bytes
    renamed and the schema id and error columns (the structs join with the first rows that have them)."""
    sides = [side for side, _ in decoded_sides(topic)]
    if not sides:
        return SCHEMA
    fields = [f.with_name(f.name + RAW_SUFFIX) if f.name in sides else f for f in SCHEMA]
    for side in sides:
        fields += [pa.field(side + SCHEMA_ID_SUFFIX, pa.int32()), pa.field(side + ERROR_SUFFIX, pa.string())]
    return pa.schema(fields)


def read_columns(topic: Topic) -> list[str]:
    """The columns a read takes from the topic's table (READ_COLUMNS, decoded sides' raw bytes)."""
    sides = [side for side, _ in decoded_sides(topic)]
    return [name + RAW_SUFFIX if name in sides else name for name in READ_COLUMNS] if sides else READ_COLUMNS


def kafka_rows(rows: pa.Table) -> pa.Table:
    """Rows read from a table as to_entries takes them (the Kafka record's columns under READ_COLUMNS'
    names, in their places), whatever else the table holds: a decoded side's raw bytes under its name,
    its typed columns left out."""
    names = rows.schema.names
    for side in ("key", "value"):
        raw = side + RAW_SUFFIX
        if raw in names:
            typed = [n for n in (side, side + SCHEMA_ID_SUFFIX, side + ERROR_SUFFIX) if n in names]
            rows = rows.drop_columns(typed)
            rows = rows.rename_columns([side if n == raw else n for n in rows.schema.names])
            names = rows.schema.names
    return rows


def _raw(table: pa.Table, side: str) -> pa.ChunkedArray:
    """A side's raw bytes, in either naming."""
    raw = side + RAW_SUFFIX
    return table.column(raw if raw in table.schema.names else side)


def entry_by_entry(
    entries: Sequence[Any],
    offsets: OffsetCodec,
    partition: int,
    log_append_time: bool,
    aborted: Sequence[AbortedTransaction],
    from_offset: int = 0,
) -> pa.Table:
    """to_table for any entries, one at a time."""
    bits, shift = offsets.bits, offsets.shift
    offs: list[int] = []
    stamps: list[int] = []
    keys: list[bytes | None] = []
    values: list[bytes | None] = []
    headers: list[list[tuple[str, bytes | None]]] = []
    # Transaction facts, kept sparse: row index -> (pid, epoch, control, aborted).
    txns: dict[int, tuple[int, int, str | None, bool]] = {}
    any_headers = False
    for entry_id, fields in entries:
        ms, _, seq = entry_id.partition(b"-")
        offset = ((int(ms) << bits) | int(seq)) - shift
        if offset < from_offset:
            continue
        # The entry the broker writes most: timestamp, key, value.
        if len(fields) == 6 and fields[0] == TIMESTAMP and fields[2] == KEY and fields[4] == VALUE:
            offs.append(offset)
            stamps.append(int(fields[1]))
            keys.append(fields[3])
            values.append(fields[5])
            headers.append([])
            continue
        timestamp, key, value, hs = parse_fields(fields)
        if timestamp < 0:  # a plain writer's entry without one: the ID's ms, as the fetch codec does
            timestamp = int(ms)
        txn = control = None
        for i in range(0, len(fields) - 1, 2):
            if fields[i] == TXN:
                txn = fields[i + 1]
            elif fields[i] == CONTROL:
                control = fields[i + 1]
        if txn is not None:
            pid_text, _, epoch_text = txn.partition(b":")
            pid = int(pid_text)
            dropped = control is None and any(
                a.producer_id == pid and a.first_offset <= offset < a.last_offset for a in aborted
            )
            txns[len(offs)] = (pid, int(epoch_text), control.decode() if control else None, dropped)
        offs.append(offset)
        stamps.append(timestamp)
        keys.append(key)
        values.append(value)
        headers.append(hs)
        any_headers = any_headers or bool(hs)
    columns = (pa.array(offs, pa.int64()), pa.array(stamps, pa.int64()), pa.array(keys, pa.binary()))
    return _columns(
        partition, *columns, pa.array(values, pa.binary()), headers, any_headers, txns, log_append_time
    )


# The entries the broker writes for plain records: a timestamp, the key (when not null) and the value.
_PLAIN_SHAPES = {6: (TIMESTAMP, KEY, VALUE), 4: (TIMESTAMP, VALUE)}


def _plain_table(
    entries: Sequence[Any], offsets: OffsetCodec, partition: int, log_append_time: bool, from_offset: int
) -> pa.Table | None:
    """to_table when every entry is a plain record of one shape (most slices), with no Python step per
    record: the fields are sliced out of one flat list and parsed by Arrow. None for any other slice
    (headers, transactions, mixed shapes, a field Arrow cannot parse): entry_by_entry takes those.
    It halves the archiver's cost per record, which runs on the broker's interpreter."""
    n = len(entries)
    fields = list(map(itemgetter(1), entries))
    width = len(fields[0]) if n else 0
    names = _PLAIN_SHAPES.get(width)
    if names is None or list(map(len, fields)) != [width] * n:
        return None
    flat = list(chain.from_iterable(fields))
    if any(flat[2 * i :: width].count(name) != n for i, name in enumerate(names)):
        return None
    try:
        ids = pc.split_pattern(pa.array(list(map(itemgetter(0), entries)), pa.binary()), b"-")
        ms = pc.list_element(ids, 0).cast(pa.string()).cast(pa.int64())
        seq = pc.list_element(ids, 1).cast(pa.string()).cast(pa.int64())
        stamps = pa.array(flat[1::width], pa.binary()).cast(pa.string()).cast(pa.int64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    if offsets.dense:
        if pc.max(ms).as_py() != 0:  # a foreign entry: its offset is not seq - 1
            return None
        offs = pc.subtract(seq, offsets.shift)
    else:
        offs = pc.subtract(pc.bit_wise_or(pc.shift_left(ms, offsets.bits), seq), offsets.shift)
    if width == 4:  # as parse_fields: a timestamp below 0 is the ID's ms
        stamps = pc.if_else(pc.less(stamps, 0), ms, stamps)
    keys = pa.array(flat[3::width], pa.binary()) if width == 6 else pa.nulls(n, pa.binary())
    values = pa.array(flat[width - 1 :: width], pa.binary())
    table = _columns(partition, offs, stamps, keys, values, [[]] * n, False, {}, log_append_time)
    if n and offsets.offset_of_id(entries[0][0]) < from_offset:
        table = table.filter(pc.greater_equal(table.column(OFFSET), from_offset))
    return table


def _columns(
    partition: int,
    offs: pa.Array,
    stamps: pa.Array,
    keys: pa.Array,
    values: pa.Array,
    headers: list[list[tuple[str, bytes | None]]],
    any_headers: bool,
    txns: dict[int, tuple[int, int, str | None, bool]],
    log_append_time: bool,
) -> pa.Table:
    n = len(offs)
    header_field = SCHEMA.field("headers")
    if any_headers:
        header_col = pa.array(
            [[{"key": k, "value": v} for k, v in hs] for hs in headers], type=header_field.type
        )
    else:  # every list empty: n + 1 zero offsets, no values
        header_col = pa.ListArray.from_arrays(
            pa.array([0] * (n + 1), pa.int32()), pa.array([], HEADER_TYPE), type=header_field.type
        )
    if txns:
        pids = [txns[i][0] if i in txns else None for i in range(n)]
        epochs = [txns[i][1] if i in txns else None for i in range(n)]
        transactional = [i in txns for i in range(n)]
        controls = [txns[i][2] if i in txns else None for i in range(n)]
        dropped = [i in txns and txns[i][3] for i in range(n)]
        txn_cols = [
            pa.array(pids, pa.int64()),
            pa.array(epochs, pa.int16()),
            pa.array(transactional, pa.bool_()),
            pa.array(controls, pa.string()),
            pa.array(dropped, pa.bool_()),
        ]
    else:
        no = pa.repeat(pa.scalar(False), n)
        txn_cols = [pa.nulls(n, pa.int64()), pa.nulls(n, pa.int16()), no, pa.nulls(n, pa.string()), no]
    return pa.Table.from_arrays(
        [
            pa.repeat(pa.scalar(partition, pa.int32()), n),
            offs,
            stamps,
            pa.repeat(pa.scalar(1 if log_append_time else 0, pa.int8()), n),
            keys,
            values,
            header_col,
            *txn_cols,
        ],
        schema=SCHEMA,
    )


def payload_bytes(table: pa.Table) -> int:
    """The bytes of the rows' keys, values, and header keys and values (what the metrics count as
    archived)."""
    headers = pc.list_flatten(table.column("headers"))
    parts = [
        _raw(table, "key"),
        _raw(table, "value"),
        pc.struct_field(headers, "key"),
        pc.struct_field(headers, "value"),
    ]
    return sum(int(pc.sum(pc.binary_length(p)).as_py() or 0) for p in parts)


def fetch_sizes(table: pa.Table) -> pa.Array:
    """Each row's estimated cost in a fetch response (RECORD_OVERHEAD_BYTES plus key and value)."""
    key = pc.fill_null(pc.binary_length(_raw(table, "key")), 0)
    value = pc.fill_null(pc.binary_length(_raw(table, "value")), 0)
    return pc.add(pc.add(key, value), RECORD_OVERHEAD_BYTES)


def to_entries(table: pa.Table, offsets: OffsetCodec) -> list[Any]:
    """The rows as stream entries, in offset order, with the fields the append script writes."""
    offs = table.column(OFFSET).to_pylist()
    stamps = table.column(TS).to_pylist()
    keys = table.column("key").to_pylist()
    values = table.column("value").to_pylist()
    plain = (
        not pc.any(table.column("transactional")).as_py()
        and (pc.sum(pc.list_value_length(table.column("headers"))).as_py() or 0) == 0
    )
    ids = [b"0-%d" % (o + 1) for o in offs] if offsets.dense else [offsets.id_text(o) for o in offs]
    if plain:
        out: list[Any] = []
        for entry_id, ts, key, value in zip(ids, stamps, keys, values, strict=True):
            fields = [TIMESTAMP, b"%d" % ts]
            if key is not None:
                fields += (KEY, key)
            if value is not None:
                fields += (VALUE, value)
            out.append([entry_id, fields])
        return out
    return _general_entries(table, ids, stamps, keys, values)


def _general_entries(
    table: pa.Table, ids: list[bytes], stamps: list[int], keys: list[Any], values: list[Any]
) -> list[Any]:
    headers = table.column("headers").to_pylist()
    pids = table.column("producer_id").to_pylist()
    epochs = table.column("producer_epoch").to_pylist()
    transactional = table.column("transactional").to_pylist()
    controls = table.column("control").to_pylist()
    out: list[Any] = []
    for i, entry_id in enumerate(ids):
        fields = [TIMESTAMP, b"%d" % stamps[i]]
        if controls[i] is not None:  # a marker: timestamp, control, txn (log_txn_marker.lua)
            fields += (CONTROL, controls[i].encode(), TXN, b"%d:%d" % (pids[i], epochs[i]))
            out.append([entry_id, fields])
            continue
        if keys[i] is not None:
            fields += (KEY, keys[i])
        if values[i] is not None:
            fields += (VALUE, values[i])
        if headers[i]:
            fields += (HEADERS, encode_headers([(h["key"], h["value"]) for h in headers[i]]))
        if transactional[i]:
            fields += (TXN, b"%d:%d" % (pids[i], epochs[i]))
        out.append([entry_id, fields])
    return out


def aborted_in(table: pa.Table, end: int) -> tuple[AbortedTransaction, ...]:
    """The aborted transactions with records among the rows, for a read_committed fetch: each run of a
    producer's aborted records up to its abort marker (or `end`, when the marker is past the rows).
    A run's first offset is its first row here, which is all a consumer needs: it drops the producer's
    records from there to the marker."""
    if not table.num_rows or pc.sum(table.column("aborted")).as_py() in (None, 0, False):
        # Markers alone need no entry.
        return ()
    offs = table.column(OFFSET).to_pylist()
    pids = table.column("producer_id").to_pylist()
    dropped = table.column("aborted").to_pylist()
    controls = table.column("control").to_pylist()
    runs: dict[int, int] = {}
    out: list[AbortedTransaction] = []
    for offset, pid, is_dropped, control in zip(offs, pids, dropped, controls, strict=True):
        if is_dropped and pid not in runs:
            runs[pid] = offset
        elif control is not None and pid in runs:
            out.append(AbortedTransaction(pid, runs.pop(pid), offset))
    out.extend(AbortedTransaction(pid, first, end) for pid, first in runs.items())
    out.sort(key=lambda a: a.first_offset)
    return tuple(out)
