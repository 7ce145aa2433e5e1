"""The partition log: appends through the append script, reads with XRANGE, offsets from entry IDs."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from . import entry, scripts
from .keys import Keyspace
from .lane import PipelinedLane
from .offsets import id_text, offset_of, offset_of_id
from .topics import Topic

APPENDED = 0
DUPLICATE = 1


class RecordLike(Protocol):
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]


@dataclass(frozen=True, slots=True)
class AppendResult:
    status: int  # APPENDED, DUPLICATE, or a negative Kafka error code
    base_offset: int
    last_offset: int
    append_time: int
    log_start_offset: int


@dataclass(frozen=True, slots=True)
class PartitionBounds:
    log_start_offset: int
    high_watermark: int
    # Lowest offset a reader may ask for: above every deleted entry, so an offset in the gap
    # before the first entry is still valid when nothing at or after it was removed.
    first_valid_offset: int = 0


@dataclass(frozen=True, slots=True)
class PartitionRead:
    entries: list[Any]  # raw XRANGE reply: [[id, [field, value, ...]], ...]
    log_start_offset: int
    high_watermark: int
    first_valid_offset: int


def estimated_size(records: Sequence[RecordLike]) -> int:
    """Bytes retention.bytes accounts for records that come without their batch's size."""
    return sum(len(r.value or b"") + len(r.key or b"") + 24 for r in records)


def append_args(
    topic: Topic,
    records: Sequence[RecordLike],
    *,
    producer_id: int,
    producer_epoch: int,
    base_sequence: int,
    size_bytes: int,
    channel: str,
    partition: int,
) -> list[Any]:
    args: list[Any] = [
        topic.sequence_bits,
        1 if topic.log_append_time else 0,
        producer_id,
        producer_epoch,
        base_sequence,
        len(records),
        topic.retention_ms,
        topic.retention_bytes,
        1 if topic.trim_approximate else 0,
        size_bytes,
        channel,
        f"{topic.name}:{partition}",
        str(topic.id),
        0,  # the batch's highest timestamp, filled in below
        0,  # and the index of its record
    ]
    # Per record: a shape (bit 1 key, 2 value, 4 headers, 8 same timestamp as the record before),
    # then the timestamp unless repeated, then the fields present. See append.lua.
    extend = args.extend
    previous_ts = None
    max_ts, max_index = -1, 0
    for index, r in enumerate(records):
        key, value, headers, ts = r.key, r.value, r.headers, r.timestamp
        if ts > max_ts:
            max_ts, max_index = ts, index
        shape = (key is not None) | ((value is not None) << 1) | (4 if headers else 0)
        if ts == previous_ts:
            if shape == 3:  # the common record: key and value, timestamp as before
                extend((11, key, value))
                continue
            if shape == 2:
                extend((10, value))
                continue
            args.append(shape | 8)
        else:
            previous_ts = ts
            if shape == 3:
                extend((3, ts, key, value))
                continue
            extend((shape, ts))
        if key is not None:
            args.append(key)
        if value is not None:
            args.append(value)
        if headers:
            args.append(entry.encode_headers(headers))
    args[13], args[14] = max_ts, max_index
    return args


async def append(
    redis: Any,
    ks: Keyspace,
    topic: Topic,
    partition: int,
    records: Sequence[RecordLike],
    *,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    size_bytes: int = 0,
    notify: bool = True,
) -> AppendResult:
    """One EVALSHA of append.lua: idempotence check, IDs, XADDs, retention, wake-up notice."""
    args = append_args(
        topic,
        records,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        size_bytes=size_bytes,
        channel=ks.appended_channel if notify else "",
        partition=partition,
    )
    reply = await scripts.run(redis, "append", ks.partition_keys(topic.name, partition), args)
    return parse_append_reply(reply, topic.sequence_bits)


async def send_append(
    lane: PipelinedLane,
    ks: Keyspace,
    topic: Topic,
    partition: int,
    records: Sequence[RecordLike],
    *,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    size_bytes: int = 0,
) -> asyncio.Future[AppendResult]:
    """Like append(), but on the pipelined lane: the script is sent before this returns (so calls keep
    their order), and the returned future resolves when Redis has run it."""
    args = append_args(
        topic,
        records,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        size_bytes=size_bytes,
        channel=ks.appended_channel,
        partition=partition,
    )
    reply = await lane.send_script("append", ks.partition_keys(topic.name, partition), args)
    result: asyncio.Future[AppendResult] = asyncio.get_running_loop().create_future()

    def parsed(f: asyncio.Future[Any]) -> None:
        if result.done():  # the caller was cancelled (its client left, or the broker stops)
            return
        exc = f.exception()
        if exc is not None:
            result.set_exception(exc)
        else:
            result.set_result(parse_append_reply(f.result(), topic.sequence_bits))

    reply.add_done_callback(parsed)
    return result


def parse_append_reply(reply: list[int], bits: int) -> AppendResult:
    status, base_ms, base_seq, last_ms, last_seq, append_ms, start_ms, start_seq = (int(x) for x in reply)
    if status < 0:
        return AppendResult(status, -1, -1, append_ms, -1)
    start = offset_of(start_ms, start_seq, bits) if start_ms >= 0 else 0
    return AppendResult(
        status, offset_of(base_ms, base_seq, bits), offset_of(last_ms, last_seq, bits), append_ms, start
    )


def bounds_from_info(info: Any, bits: int, valid_from: bytes | None = None) -> PartitionBounds:
    """Log start and high watermark from an XINFO STREAM reply (or the error a missing stream gives).

    valid_from is the state hash's record of the lowest ID not yet removed by retention or
    DeleteRecords (XTRIM leaves no trace in the stream itself).
    """
    if isinstance(info, Exception) or not info:
        return PartitionBounds(0, 0)
    fields = info if isinstance(info, dict) else dict(zip(info[::2], info[1::2], strict=False))
    if not int(fields.get(b"entries-added", 1)) and fields.get(b"last-generated-id") in (b"0-0", None):
        return PartitionBounds(0, 0)
    high = offset_of_id(fields[b"last-generated-id"], bits) + 1
    first = fields.get(b"first-entry")
    start = offset_of_id(first[0], bits) if first else high
    valid = min(offset_of_id(valid_from, bits), start) if valid_from else 0
    return PartitionBounds(start, high, valid)


async def bounds(redis: Any, ks: Keyspace, topic: Topic, partition: int) -> PartitionBounds:
    """One pipelined round trip: XINFO STREAM (first entry, last generated ID) and the valid-from mark."""
    async with redis.pipeline(transaction=False) as pipe:
        pipe.execute_command("XINFO STREAM", ks.stream(topic.name, partition))
        pipe.hget(ks.partition_state(topic.name, partition), "valid_from")
        info, valid_from = await pipe.execute(raise_on_error=False)
    return bounds_from_info(info, topic.sequence_bits, valid_from)


async def read(
    redis: Any, ks: Keyspace, topic: Topic, partition: int, offset: int, max_entries: int
) -> PartitionRead:
    """One pipelined round trip: XRANGE from the offset's ID, and the bounds as in bounds()."""
    stream = ks.stream(topic.name, partition)
    async with redis.pipeline(transaction=False) as pipe:
        pipe.execute_command(
            "XRANGE", stream, id_text(offset, topic.sequence_bits), "+", "COUNT", max_entries
        )
        pipe.execute_command("XINFO STREAM", stream)
        pipe.hget(ks.partition_state(topic.name, partition), "valid_from")
        entries, info, valid_from = await pipe.execute(raise_on_error=False)
    if isinstance(entries, Exception):
        raise entries
    if isinstance(valid_from, Exception):
        raise valid_from
    b = bounds_from_info(info, topic.sequence_bits, valid_from)
    return PartitionRead(entries or [], b.log_start_offset, b.high_watermark, b.first_valid_offset)


def entry_timestamp(fields: list[bytes], entry_id: bytes) -> int:
    for i in range(0, len(fields) - 1, 2):
        if fields[i] == entry.TIMESTAMP:
            try:
                return int(fields[i + 1])
            except ValueError:
                break
    return int(entry_id.split(b"-", 1)[0])


async def offset_for_timestamp(
    redis: Any, ks: Keyspace, topic: Topic, partition: int, timestamp: int
) -> tuple[int, int] | None:
    """Kafka's rule: the earliest offset whose record timestamp is at or after the target.

    LogAppendTime: the entry ID is the time, so the scan starts at that ID. CreateTime: the time
    index gives the first batch whose running maximum reached the target, and the scan starts there.
    Returns (offset, timestamp) or None when no record qualifies.
    """
    bits = topic.sequence_bits
    stream = ks.stream(topic.name, partition)
    if topic.log_append_time:
        start = f"{max(timestamp, 0)}-0".encode()
    else:
        found = await redis.zrangebyscore(
            ks.time_index(topic.name, partition), timestamp, "+inf", start=0, num=1
        )
        if not found:
            return None
        start = found[0]
    while True:
        batch = await redis.execute_command("XRANGE", stream, start, "+", "COUNT", 500)
        if not batch:
            return None
        for entry_id, fields in batch:
            ts = entry_timestamp(fields, entry_id)
            if ts >= timestamp:
                return offset_of_id(entry_id, bits), ts
        last = batch[-1][0]
        start = b"(" + last


async def max_timestamp(redis: Any, ks: Keyspace, topic: Topic, partition: int) -> tuple[int, int] | None:
    """The offset and timestamp of the record with the highest timestamp (ListOffsets -3)."""
    max_id = await redis.hget(ks.partition_state(topic.name, partition), "max_ts_id")
    if not max_id:
        return None
    found = await redis.execute_command("XRANGE", ks.stream(topic.name, partition), max_id, max_id)
    if not found:
        return None
    entry_id, fields = found[0]
    return offset_of_id(entry_id, topic.sequence_bits), entry_timestamp(fields, entry_id)


async def delete_records(redis: Any, ks: Keyspace, topic: Topic, partition: int, before_offset: int) -> int:
    """Removes every entry below the offset; returns the new log start offset."""
    reply = await scripts.run(
        redis,
        "delete_records",
        ks.partition_keys(topic.name, partition),
        [id_text(before_offset, topic.sequence_bits)],
    )
    ms, seq = int(reply[0]), int(reply[1])
    return offset_of(ms, seq, topic.sequence_bits) if ms >= 0 else before_offset


async def apply_retention(redis: Any, ks: Keyspace, topic: Topic, partition: int) -> int:
    """Retention for a partition that may get no appends; returns how many entries were removed."""
    if topic.retention_ms < 0 and topic.retention_bytes < 0:
        return 0
    removed = await scripts.run(
        redis,
        "trim",
        ks.partition_keys(topic.name, partition),
        [topic.retention_ms, topic.retention_bytes, 1 if topic.trim_approximate else 0],
    )
    return int(removed)
