"""Appends to the partition log: one EVALSHA of log_append.lua per batch.

The script checks the idempotent producer's sequence, assigns the entry IDs, runs the XADDs, trims for
retention.bytes (retention.ms is the retention pass's, retention.py) and publishes the wake-up notice,
all in one round trip (see scripts/log_append.lua).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import groupby
from typing import Any, Protocol

from ...config import compiled_enabled
from ..keys import Keyspace
from ..offsets import OffsetCodec
from ..redis.calls import Call, Steps, command, script, text
from ..topics.metadata import Topic
from . import entry
from .entry import RecordLike
from .notices import Notice, notice_args

APPENDED = 0
DUPLICATE = 1
# Refusals come back as negated Kafka error codes, so ErrorCode(-status) names them.
UNKNOWN_PARTITION = -3  # the partition is not stamped with this topic id (deleted, re-created, unstamped)
OUT_OF_ORDER_SEQUENCE = -45
INVALID_PRODUCER_EPOCH = -47
# A dense topic whose stream got an ID with ms > 0 from a plain `XADD key *`: Redis accepts no ID 0-n
# after it (XSETID cannot go below a deleted ID either), so appends stop until the partition is repaired.
FOREIGN_ID = -56

_HEADER = 19  # log_append.lua's arguments before the records
# Whether log_append.lua may call the stream module's SCHOONER.XADDRUN (where the server has it): not when
# SCHOONER_COMPILED=0 turns the compiled fast paths off, so the script's own XADDs run on any server.
_USE_MODULE = b"1" if compiled_enabled() else b"0"
MAX_BATCH = 1000  # records per script call from the MQ library and the Spark sink, as a produce batch


@dataclass(frozen=True, slots=True)
class AppendResult:
    status: int  # APPENDED, DUPLICATE, or a negated Kafka error code
    base_offset: int
    last_offset: int
    append_time: int
    log_start_offset: int
    # With KAFKA_STORAGE_ERROR: the `*` entry ID that stops a dense topic's appends.
    foreign_id: str = ""
    # Transactions open in the partition after this append (-1: not known).
    open_transactions: int = -1


class PlainRecords(Protocol):
    """A batch whose records all have a value, no headers, and all or none a key, as columns (the
    protocol's PlainRecords fits): what the append needs, without a record object per record."""

    @property
    def keyed(self) -> bool: ...
    @property
    def runs(self) -> Sequence[tuple[int, int]]: ...  # (count, timestamp) of each run of one timestamp
    @property
    def fields(self) -> Sequence[bytes]: ...  # each record's value, or its key then its value
    @property
    def max_timestamp(self) -> int: ...
    @property
    def max_index(self) -> int: ...  # the first record with max_timestamp


class Batch(Protocol):
    """A batch to append: the protocol's ProducedBatch fits, as does RecordBatch."""

    @property
    def records(self) -> Sequence[RecordLike]: ...
    @property
    def producer_id(self) -> int: ...
    @property
    def producer_epoch(self) -> int: ...
    @property
    def base_sequence(self) -> int: ...
    @property
    def size_bytes(self) -> int: ...
    @property
    def plain(self) -> PlainRecords | None: ...
    @property
    def codec(self) -> int: ...  # the producer's compression codec (0: none)


@dataclass(frozen=True, slots=True)
class RecordBatch:
    records: Sequence[RecordLike]
    producer_id: int = -1
    producer_epoch: int = -1
    base_sequence: int = -1
    size_bytes: int = 0
    plain: PlainRecords | None = None
    codec: int = 0


def estimated_size(records: Sequence[RecordLike]) -> int:
    """Bytes retention.bytes accounts for records that come without their batch's size."""
    return sum(len(r.value or b"") + len(r.key or b"") + 24 for r in records)


def append_args(
    topic: Topic, partition: int, batch: Batch, notice: Notice, transactional_id: str | None = None
) -> list[Any]:
    """log_append.lua's ARGV: the batch's header values, then its records in runs of one shape and
    timestamp (a count, the shape, the timestamp, then the runs' fields; see log_append.lua).
    transactional_id: the producing request's, for a transactional batch; None for any other."""
    records = batch.records
    channel, message, spublish = notice
    args: list[Any] = [
        topic.offsets.script_arg,
        1 if topic.log_append_time else 0,
        batch.producer_id,
        batch.producer_epoch,
        batch.base_sequence,
        len(records),
        topic.retention_ms,
        topic.redis_retention_bytes,
        1 if topic.trim_approximate else 0,
        batch.size_bytes or estimated_size(records),  # 0: a batch that came without its size
        channel,
        message,
        str(topic.id),
        -1,  # the batch's highest timestamp, filled in below
        0,  # and the index of its record
        transactional_id or "",
        spublish,
        batch.codec,
        _USE_MODULE,
    ]
    plain = batch.plain
    if plain is not None:  # the common batch, already in columns: no step per record here either
        if plain.max_timestamp > -1:
            args[13], args[14] = plain.max_timestamp, plain.max_index
        args += _column_runs(plain.keyed, plain.runs, plain.fields)
    elif records:
        stamps = [r.timestamp for r in records]
        max_ts = max(stamps)
        if max_ts > -1:  # the first record that has it, as the time index expects
            args[13], args[14] = max_ts, stamps.index(max_ts)
        args += _uniform_runs(records, stamps) or _mixed_runs(records)
    # All bytes: the lane's encoder then joins them without a step per argument (redis/resp.py).
    args[:_HEADER] = [a if isinstance(a, bytes) else str(a).encode() for a in args[:_HEADER]]
    return args


def _column_runs(keyed: bool, runs: Sequence[tuple[int, int]], fields: Sequence[bytes | None]) -> list[Any]:
    """The script's runs from a uniform batch's columns: (count, timestamp) runs, and each record's value,
    or its key then its value when keyed."""
    shape, width = (b"3", 2) if keyed else (b"2", 1)
    out: list[Any] = []
    start = 0
    for count, ts in runs:
        end = start + count * width
        out += (b"%d" % count, shape, b"%d" % ts)
        out += fields[start:end]
        start = end
    return out


def _uniform_runs(records: Sequence[RecordLike], stamps: list[int]) -> list[Any] | None:
    """The common batch, where every record has a value, no headers, and all or none a key: its runs
    come from whole-batch list operations (run in C), with no Python step per record. None otherwise."""
    values = [r.value for r in records]
    if None in values or any([r.headers for r in records]):
        return None
    n = len(values)
    keys = [r.key for r in records]
    unkeyed = keys.count(None)
    if unkeyed == n:
        fields = values
    elif unkeyed == 0:
        fields = [b""] * (2 * n)
        fields[0::2] = keys
        fields[1::2] = values
    else:
        return None
    runs = [(len(list(group)), ts) for ts, group in groupby(stamps)]
    return _column_runs(unkeyed == 0, runs, fields)


def _mixed_runs(records: Sequence[RecordLike]) -> list[Any]:
    """Runs of records of one shape and timestamp, record by record (nulls, headers, mixed keys)."""
    out: list[Any] = []
    append = out.append
    count_at, previous = -1, None
    for r in records:
        key, value, headers = r.key, r.value, r.headers
        shape = (key is not None) | ((value is not None) << 1) | (4 if headers else 0)
        run = (shape, r.timestamp)
        if run == previous:
            out[count_at] += 1
        else:
            if count_at >= 0:
                out[count_at] = b"%d" % out[count_at]
            count_at, previous = len(out), run
            out += (1, b"%d" % shape, b"%d" % r.timestamp)
        if key is not None:
            append(key)
        if value is not None:
            append(value)
        if headers:
            append(entry.encode_headers(headers))
    if count_at >= 0:
        out[count_at] = b"%d" % out[count_at]
    return out


def append(
    ks: Keyspace,
    topic: Topic,
    partition: int,
    batch: Batch,
    *,
    notify: bool = True,
    sharded: bool = False,
    transactional_id: str | None = None,
    origin: str = "",
) -> Call[AppendResult]:
    """The append of one batch; a size_bytes of 0 is estimated from the records. `sharded` (on a Redis
    Cluster) sends the wake-up notice on the partition's sharded channel (see notices.py);
    `transactional_id` is the producing request's, for a transactional batch; `origin` tags the notice
    as the appending broker's own."""
    notice = notice_args(ks, topic.name, partition, notify, sharded, origin)
    args = append_args(topic, partition, batch, notice, transactional_id)
    offsets = topic.offsets
    return script(
        "log_append", ks.partition_keys(topic.name, partition), args, lambda r: parse_append_reply(r, offsets)
    )


def append_restamped(
    ks: Keyspace,
    topic: Topic,
    partition: int,
    batch: Batch,
    *,
    sharded: bool = False,
    transactional_id: str | None = None,
) -> Steps[AppendResult | None]:
    """After UNKNOWN_PARTITION: stamps the partition and appends again, in one round trip, when the
    topic still has this id and partition (a create interrupted before its second step). None otherwise."""
    raw = yield [command("HMGET", ks.topic(topic.name), "id", "partitions")]
    topic_id, partitions = raw[0]
    if topic_id is None or uuid.UUID(topic_id.decode()) != topic.id or partition >= int(partitions):
        return None
    stamp: Call[int] = command("HSET", ks.partition_state(topic.name, partition), "topic_id", str(topic.id))
    replies = yield [
        stamp,
        append(ks, topic, partition, batch, sharded=sharded, transactional_id=transactional_id),
    ]
    result: AppendResult = replies[1]
    return result


def parse_append_reply(reply: list[Any], offsets: OffsetCodec) -> AppendResult:
    status, base_ms, base_seq, last_ms, last_seq, append_ms, start_ms, start_seq = (int(x) for x in reply[:8])
    if status < 0:
        return AppendResult(status, -1, -1, append_ms, -1, text(reply[8]))
    start = offsets.offset_of(start_ms, start_seq) if start_ms >= 0 else 0
    return AppendResult(
        status,
        offsets.offset_of(base_ms, base_seq),
        offsets.offset_of(last_ms, last_seq),
        append_ms,
        start,
        open_transactions=int(reply[9]) if len(reply) > 9 else -1,
    )
