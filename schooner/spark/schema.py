"""The row schema of Spark's Kafka source, and stream entries turned into Arrow record batches.

Spark checks that a batch's Arrow schema equals the declared one exactly, so the Arrow schema is
derived from the Spark schema with Spark's own converter.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from itertools import chain
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from ..storage.log.entry import HEADERS, KEY, TIMESTAMP, VALUE, decode_headers
from ..storage.log.transactions import CONTROL, TXN
from ..storage.offsets import OffsetCodec

CREATE_TIME = 0  # timestampType, as Kafka numbers it
LOG_APPEND_TIME = 1

HEADER_TYPE = ArrayType(StructType([StructField("key", StringType()), StructField("value", BinaryType())]))


def kafka_schema(include_headers: bool) -> StructType:
    fields = [
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", TimestampType()),
        StructField("timestampType", IntegerType()),
    ]
    if include_headers:
        fields.append(StructField("headers", HEADER_TYPE))
    return StructType(fields)


@cache
def arrow_schema(include_headers: bool) -> pa.Schema:
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(kafka_schema(include_headers), timezone="UTC")


def _split_fields(entries: list[Any]) -> tuple[list[bytes], list[Any], list[Any], list[Any], list[Any], bool]:
    """IDs, keys, values, timestamps and raw headers of raw XRANGE entries (None where absent), and
    whether any entry has a transaction field (a transactional record or a marker).

    Entries written by one writer mostly share one layout (the append script writes timestamp, key,
    value, headers in that order). When all share the first entry's, the columns are plain slices of
    the flattened fields, with no Python loop per entry, and the layout alone answers the last question.
    """
    if not entries:
        return [], [], [], [], [], False
    ids = [e[0] for e in entries]
    fields = [e[1] for e in entries]
    n = len(ids)
    layout = fields[0][::2]
    width = len(fields[0])
    flat = list(chain.from_iterable(fields)) if set(map(len, fields)) == {width} else []
    if flat and all(flat[2 * i :: width].count(name) == n for i, name in enumerate(layout)):
        where = {name: 2 * i + 1 for i, name in enumerate(layout)}

        def column(name: bytes) -> list[Any]:
            return flat[where[name] :: width] if name in where else [None] * n

        txn = TXN in where or CONTROL in where
        return ids, column(KEY), column(VALUE), column(TIMESTAMP), column(HEADERS), txn
    keys: list[Any] = []
    values: list[Any] = []
    stamps: list[Any] = []
    headers: list[Any] = []
    txn = False
    for entry_fields in fields:
        named = dict(zip(entry_fields[::2], entry_fields[1::2], strict=False))  # unknown fields are skipped
        stamps.append(named.get(TIMESTAMP))
        keys.append(named.get(KEY))
        values.append(named.get(VALUE))
        headers.append(named.get(HEADERS))
        txn = txn or TXN in named or CONTROL in named
    return ids, keys, values, stamps, headers, txn


def _header_array(raw: list[Any]) -> pa.Array:
    rows: list[Any] = []
    for data in raw:
        if not data:
            rows.append(None)  # as Kafka's source: no headers is null
            continue
        try:
            rows.append([{"key": name, "value": value} for name, value in decode_headers(data)])
        except (ValueError, IndexError):
            rows.append(None)
    return pa.array(rows, type=arrow_schema(True).field("headers").type)


def entries_to_batch(
    entries: list[Any],
    topic: str,
    partition: int,
    offset_codec: OffsetCodec,
    timestamp_type: int,
    include_headers: bool,
    settle: Callable[[list[Any]], list[Any]] | None = None,
) -> pa.RecordBatch:
    """One Arrow record batch of Kafka rows from a raw XRANGE reply. The per-entry Python work is only
    picking fields apart; offsets and timestamps are computed column-wise in Arrow.

    settle: given when the reply holds entries of transactions (markers, records of transactional
    producers), it keeps the data records to show (storage/log/transactions.committed_entries). It is
    called only then, so a partition without transactions pays nothing for it."""
    ids, keys, values, stamps, headers, txn = _split_fields(entries)
    if txn and settle is not None:
        ids, keys, values, stamps, headers, _ = _split_fields(settle(entries))
    n = len(ids)
    id_parts = pc.split_pattern(pa.array(ids, pa.binary()), b"-")
    ms = pc.cast(pc.cast(pc.list_element(id_parts, 0), pa.string()), pa.int64())
    seq = pc.cast(pc.cast(pc.list_element(id_parts, 1), pa.string()), pa.int64())
    if offset_codec.dense:  # reads of a dense topic end at ms 0: offset = seq - 1
        offsets = pc.subtract(seq, 1)
    else:
        offsets = pc.bit_wise_or(pc.shift_left(ms, offset_codec.bits), seq)
    # An entry without a timestamp field (a plain XADD) has its ID's milliseconds as its timestamp.
    record_ms = pc.coalesce(pc.cast(pc.cast(pa.array(stamps, pa.binary()), pa.string()), pa.int64()), ms)
    schema = arrow_schema(include_headers)
    columns = [
        pa.array(keys, pa.binary()),
        pa.array(values, pa.binary()),
        pa.repeat(pa.scalar(topic, pa.string()), n),
        pa.repeat(pa.scalar(partition, pa.int32()), n),
        offsets,
        pc.cast(pc.multiply(record_ms, 1000), schema.field("timestamp").type),
        pa.repeat(pa.scalar(timestamp_type, pa.int32()), n),
    ]
    if include_headers:
        columns.append(_header_array(headers))
    return pa.RecordBatch.from_arrays(columns, schema=schema)
