"""The sink: rows with value (and key, headers, topic, partition) appended through the append script.

Exactly-once per micro-batch (docs/spark.md): each Spark task appends what it has for one topic
partition in ONE append, as an idempotent producer whose id is derived from (query id, Spark
partition) and whose epoch is the batch id, with sequences from 0. A replay of the batch - a Spark
task retry, or the whole batch after a crash, also one between these writes and Spark's commit - sends
the same producer id, epoch and sequences, and the append script answers "duplicate" without
writing. One append per (task, topic partition) keeps this true whatever order the rows arrive in.
"""

from __future__ import annotations

import hashlib
import logging
import struct
import time
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceArrowWriter, DataSourceStreamArrowWriter, WriterCommitMessage
from pyspark.sql.types import ArrayType, BinaryType, IntegerType, LongType, StringType, StructType

from ..storage.blocking_store import BlockingStore
from ..storage.log.append import (
    APPENDED,
    DUPLICATE,
    INVALID_PRODUCER_EPOCH,
    OUT_OF_ORDER_SEQUENCE,
    RecordBatch,
)
from ..storage.log.entry import Record
from ..storage.topics.metadata import Topic
from .options import OptionError, SinkOptions
from .reading import store_for

log = logging.getLogger(__name__)

PRODUCER_ID_BASE = 1 << 62  # above any id the broker's counter hands out; below 2**63
BATCH_WRITE_CHUNK = 10_000  # records per append of a batch (not streaming) write

QUERY_ID = "sql.streaming.queryId"  # Spark's local properties, seen by every task of a micro-batch
BATCH_ID = "streaming.sql.batchId"


class SinkError(RuntimeError):
    pass


@dataclass(frozen=True, slots=True)
class SinkCommit(WriterCommitMessage):
    appended: int  # records
    duplicates: int  # records of units that were already in the log
    units: int  # appends, one per (task, topic partition)


def check_sink_schema(schema: StructType, opts: SinkOptions) -> None:
    """Kafka's sink rules: value required; key, headers, topic, partition optional."""
    types = {f.name.lower(): f.dataType for f in schema.fields}
    if "value" not in types:
        raise OptionError("the sink needs a value column (binary or string)")
    for name in ("key", "value"):
        if name in types and not isinstance(types[name], BinaryType | StringType):
            raise OptionError(f"the {name} column must be binary or string, not {types[name].simpleString()}")
    if "topic" in types and not isinstance(types["topic"], StringType):
        raise OptionError("the topic column must be a string")
    if "topic" not in types and not opts.topic:
        raise OptionError("set the topic option or give the rows a topic column")
    if "partition" in types and not isinstance(types["partition"], IntegerType | LongType):
        raise OptionError("the partition column must be an int")
    headers = types.get("headers")
    if headers is not None:
        element = headers.elementType if isinstance(headers, ArrayType) else None
        names = {f.name: f.dataType for f in element.fields} if isinstance(element, StructType) else {}
        if not (isinstance(names.get("key"), StringType) and isinstance(names.get("value"), BinaryType)):
            raise OptionError("the headers column must be array<struct<key:string,value:binary>>")


def producer_id(scope: str, spark_partition: int) -> int:
    digest = hashlib.sha256(f"{scope}/{spark_partition}".encode()).digest()
    return PRODUCER_ID_BASE | (int.from_bytes(digest[:8], "big") >> 2)


def murmur2(data: bytes) -> int:
    """Kafka's murmur2 (its default partitioner's hash), as a signed 32-bit number."""
    m, mask = 0x5BD1E995, 0xFFFFFFFF
    length = len(data)
    h = (0x9747B28C ^ length) & mask
    body = length & ~3
    for (k,) in struct.iter_unpack("<I", data[:body]):
        k = (k * m) & mask
        k ^= k >> 24
        h = ((h * m) & mask) ^ ((k * m) & mask)
    rest = length & 3
    if rest == 3:
        h ^= data[body + 2] << 16
    if rest >= 2:
        h ^= data[body + 1] << 8
    if rest >= 1:
        h = ((h ^ data[body]) * m) & mask
    h ^= h >> 13
    h = (h * m) & mask
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def default_partition(key: bytes | None, value: bytes | None, partitions: int) -> int:
    """Kafka's choice for a keyed record. A record without a key goes by its value instead of Kafka's
    sticky choice, so a replayed batch sends every record to the same partition as before."""
    data = key if key is not None else value
    return (murmur2(data) & 0x7FFFFFFF) % partitions if data is not None else 0


def _as_bytes(values: list[Any]) -> list[bytes | None]:
    return [v.encode() if isinstance(v, str) else v for v in values]


class _Topics:
    def __init__(self, store: BlockingStore) -> None:
        self.store = store
        self.known: dict[str, Topic] = {}

    def get(self, name: str) -> Topic:
        topic = self.known.get(name)
        if topic is None:
            topic = self.store.topic(name)
            if topic is None:
                raise SinkError(
                    f"unknown topic {name!r} (create it first, e.g. with schooner.spark.ensure_topic)"
                )
            self.known[name] = topic
        return topic


def group_rows(
    batches: Iterable[pa.RecordBatch], opts: SinkOptions, topics: _Topics
) -> dict[tuple[str, int], list[Record]]:
    """The rows of a task, grouped by the topic partition they go to, in arrival order."""
    units: dict[tuple[str, int], list[Record]] = {}
    for batch in batches:
        cols = {name.lower(): batch.column(i) for i, name in enumerate(batch.schema.names)}
        n = batch.num_rows
        values = _as_bytes(cols["value"].to_pylist())
        keys = _as_bytes(cols["key"].to_pylist()) if "key" in cols else [None] * n
        targets = [opts.topic] * n if opts.topic else cols["topic"].to_pylist()
        parts = cols["partition"].to_pylist() if "partition" in cols else [None] * n
        headers = cols["headers"].to_pylist() if "headers" in cols else [None] * n
        now = int(time.time() * 1000)
        for key, value, name, part, hdrs in zip(keys, values, targets, parts, headers, strict=True):
            if name is None:
                raise SinkError("a row has a null topic")
            topic = topics.get(name)
            if part is None:
                part = default_partition(key, value, topic.partitions)
            elif not 0 <= part < topic.partitions:
                raise SinkError(
                    f"partition {part} is out of range for {name} ({topic.partitions} partitions)"
                )
            record = Record(now, key, value, [(h["key"], h["value"]) for h in hdrs] if hdrs else [])
            units.setdefault((name, part), []).append(record)
    return units


def append_units(
    store: BlockingStore,
    topics: _Topics,
    units: dict[tuple[str, int], list[Record]],
    pid: int,
    epoch: int,
    chunk: int | None = None,
) -> SinkCommit:
    """Appends each unit as idempotent producer (pid, epoch), in chunks of `chunk` (None: all at once)."""
    appended = duplicates = calls = 0
    for (name, part), records in sorted(units.items()):
        topic = topics.get(name)
        size = chunk or len(records)
        for first in range(0, len(records), size):
            piece = records[first : first + size]
            batch = RecordBatch(piece, producer_id=pid, producer_epoch=epoch, base_sequence=first)
            result = store.append(topic, part, batch)
            calls += 1
            if result.status == APPENDED:
                appended += len(piece)
            elif result.status in (DUPLICATE, OUT_OF_ORDER_SEQUENCE, INVALID_PRODUCER_EPOCH):
                # Out of order: same epoch, other sequences, so this unit is already in. Invalid
                # epoch: a later batch already wrote here, so this is an old replay.
                duplicates += len(piece)
            else:
                raise SinkError(f"append to {name}-{part} failed with Kafka error {-result.status}")
    return SinkCommit(appended, duplicates, calls)


def _task() -> Any:
    from pyspark import TaskContext

    ctx = TaskContext.get()
    if ctx is None:
        raise SinkError("the sink's write runs only inside a Spark task")
    return ctx


class SchoonerStreamWriter(DataSourceStreamArrowWriter):
    def __init__(self, opts: SinkOptions, schema: StructType) -> None:
        self.opts = opts

    def write(self, iterator: Iterator[pa.RecordBatch]) -> SinkCommit:
        ctx = _task()
        query, batch = ctx.getLocalProperty(QUERY_ID), ctx.getLocalProperty(BATCH_ID)
        if not query or batch is None:
            raise SinkError("no streaming query id or batch id in the task: is this a streaming write?")
        store = store_for(self.opts.redis_url, self.opts.keyspace)
        topics = _Topics(store)
        units = group_rows(iterator, self.opts, topics)
        pid = producer_id(f"query:{query}", ctx.partitionId())
        return append_units(store, topics, units, pid, int(batch))

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        done = [m for m in messages if isinstance(m, SinkCommit)]
        appended, duplicates = sum(m.appended for m in done), sum(m.duplicates for m in done)
        if duplicates:
            log.info(
                "batch %d: %d records appended, %d already there (a replay)", batchId, appended, duplicates
            )

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        # Appends already made stay: the batch runs again and its appends then come back as duplicates.
        log.warning("batch %d aborted; it is written again, without duplicates, when it is replayed", batchId)


class SchoonerBatchWriter(DataSourceArrowWriter):
    """df.write: one idempotent producer per Spark task, so a retry of the task does not write twice."""

    def __init__(self, opts: SinkOptions, schema: StructType) -> None:
        self.opts = opts
        self.job = uuid.uuid4().hex  # made once on the driver, shipped to every task

    def write(self, iterator: Iterator[pa.RecordBatch]) -> SinkCommit:
        store = store_for(self.opts.redis_url, self.opts.keyspace)
        topics = _Topics(store)
        units = group_rows(iterator, self.opts, topics)
        pid = producer_id(f"job:{self.job}", _task().partitionId())
        return append_units(store, topics, units, pid, 0, chunk=BATCH_WRITE_CHUNK)
