"""Blocking round trips of the Spark data source's reader (schooner/spark), beyond those in sync.py.

Ranges are in Kafka offsets, start inclusive and end exclusive, as Spark's offsets are: an end is the
offset after the last record of a range. Offsets have gaps, so counts of records come from the
entries themselves, never from subtracting offsets.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .entry import parse_fields
from .keys import Keyspace
from .log import PartitionBounds, bounds_from_info
from .offsets import id_text, offset_of_id
from .topics import Topic


def bounds_of(redis: Any, ks: Keyspace, partitions: Sequence[tuple[Topic, int]]) -> list[PartitionBounds]:
    """The bounds of many partitions in one pipelined round trip (sync.bounds does one)."""
    if not partitions:
        return []
    pipe = redis.pipeline(transaction=False)
    for topic, p in partitions:
        pipe.execute_command("XINFO STREAM", ks.stream(topic.name, p))
        pipe.hget(ks.partition_state(topic.name, p), "valid_from")
    replies = pipe.execute(raise_on_error=False)
    out = []
    for i, (topic, _) in enumerate(partitions):
        info, valid_from = replies[2 * i], replies[2 * i + 1]
        valid = None if isinstance(valid_from, Exception) else valid_from
        out.append(bounds_from_info(info, topic.sequence_bits, valid))
    return out


def range_start(topic: Topic, start: int, exclusive: bool = False) -> bytes:
    """The XRANGE start argument for an offset (or for just after it)."""
    text = id_text(max(start, 0), topic.sequence_bits)
    return b"(" + text if exclusive else text


def read_range(
    redis: Any, ks: Keyspace, topic: Topic, partition: int, start: bytes, end: int, count: int
) -> list[Any]:
    """One XRANGE: up to `count` raw entries from the start argument (see range_start) below `end`."""
    if end <= 0:
        return []
    stop = b"(" + id_text(end, topic.sequence_bits)
    return (
        redis.execute_command("XRANGE", ks.stream(topic.name, partition), start, stop, "COUNT", count) or []
    )


def read_range_and_bounds(
    redis: Any, ks: Keyspace, topic: Topic, partition: int, start: int, end: int, count: int
) -> tuple[list[Any], PartitionBounds]:
    """read_range from an offset plus the partition's bounds, in one pipelined round trip. The bounds
    are read after the entries, so a trim that removed entries the read missed shows in them."""
    stream = ks.stream(topic.name, partition)
    pipe = redis.pipeline(transaction=False)
    stop = b"(" + id_text(max(end, 0), topic.sequence_bits)
    pipe.execute_command("XRANGE", stream, range_start(topic, start), stop, "COUNT", count)
    pipe.execute_command("XINFO STREAM", stream)
    pipe.hget(ks.partition_state(topic.name, partition), "valid_from")
    entries, info, valid_from = pipe.execute(raise_on_error=False)
    if isinstance(entries, Exception):
        raise entries
    valid = None if isinstance(valid_from, Exception) else valid_from
    return (entries or []) if end > 0 else [], bounds_from_info(info, topic.sequence_bits, valid)


def next_ends(
    redis: Any, ks: Keyspace, wanted: Sequence[tuple[Topic, int, int, int, int]]
) -> list[tuple[int, int]]:
    """For each (topic, partition, start, end, n): how many records lie in [start, end), up to n, and the
    offset just after the last of them (start when there are none). One pipelined round trip.

    The entries themselves are fetched: Redis cannot count stream entries between two IDs without
    walking them, and a server-side walk measured no cheaper than the transfer.
    """
    pipe = redis.pipeline(transaction=False)
    for topic, p, start, end, n in wanted:
        stop = b"(" + id_text(max(end, 0), topic.sequence_bits)
        pipe.execute_command(
            "XRANGE", ks.stream(topic.name, p), range_start(topic, start), stop, "COUNT", max(n, 1)
        )
    out = []
    for (topic, _, start, end, n), reply in zip(wanted, pipe.execute(raise_on_error=False), strict=True):
        if isinstance(reply, Exception) or not reply or end <= start or n <= 0:
            out.append((0, start))
        else:
            out.append((len(reply), offset_of_id(reply[-1][0], topic.sequence_bits) + 1))
    return out


def entries_in_ms(
    redis: Any, ks: Keyspace, topic: Topic, partition: int, probes: Sequence[int], below: int
) -> list[int]:
    """For each millisecond in probes: how many entries the log holds in it below offset `below`.

    The count is the last entry's sequence + 1: the broker and Redis's own `*` number the entries of
    a millisecond from 0. Entries never change once written, so for a fixed range this answer is the
    same every time it is asked, unlike XLEN. One pipelined round trip of XREVRANGE COUNT 1.
    """
    bits = topic.sequence_bits
    mask = (1 << bits) - 1
    last = max(below - 1, 0)
    pipe = redis.pipeline(transaction=False)
    for ms in probes:
        top = min((ms << bits) | mask, last)
        pipe.execute_command(
            "XREVRANGE", ks.stream(topic.name, partition), id_text(top, bits), b"%d-0" % ms, "COUNT", 1
        )
    counts = []
    for reply in pipe.execute(raise_on_error=False):
        if isinstance(reply, Exception) or not reply:
            counts.append(0)
        else:
            counts.append((offset_of_id(reply[0][0], bits) & mask) + 1)
    return counts


def offset_for_timestamp(
    redis: Any, ks: Keyspace, topic: Topic, partition: int, timestamp: int
) -> int | None:
    """Kafka's ListOffsets rule, blocking (log.offset_for_timestamp is its asyncio twin): the earliest
    offset whose record timestamp is at or after the target, or None when no record qualifies."""
    bits = topic.sequence_bits
    stream = ks.stream(topic.name, partition)
    start: bytes
    if topic.log_append_time:
        start = b"%d-0" % max(timestamp, 0)
    else:
        found = redis.zrangebyscore(ks.time_index(topic.name, partition), timestamp, "+inf", start=0, num=1)
        if not found:
            return None
        start = found[0]
    while True:
        batch = redis.execute_command("XRANGE", stream, start, "+", "COUNT", 500)
        if not batch:
            return None
        for entry_id, fields in batch:
            ts = parse_fields(fields)[0]
            if ts < 0:
                ts = int(entry_id.split(b"-", 1)[0])
            if ts >= timestamp:
                return offset_of_id(entry_id, bits)
        start = b"(" + batch[-1][0]
