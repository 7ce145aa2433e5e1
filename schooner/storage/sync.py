"""Blocking forms of the storage round trips, for the MQ library and the Spark data source.

Each function mirrors its asyncio twin in log.py / topics.py and shares its pure helpers, so the
broker and the blocking callers append and read exactly alike.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from . import scripts
from .keys import Keyspace
from .log import (
    AppendResult,
    PartitionBounds,
    PartitionRead,
    RecordLike,
    append_args,
    bounds_from_info,
    estimated_size,
    parse_append_reply,
)
from .offsets import id_text
from .topics import Topic, decode_topic


def load_topic(
    redis: Any, ks: Keyspace, name: str, defaults: Mapping[str, str] | None = None
) -> Topic | None:
    raw = redis.hgetall(ks.topic(name))
    return decode_topic(raw, defaults or {}) if raw else None


def load_topics(redis: Any, ks: Keyspace, defaults: Mapping[str, str] | None = None) -> list[Topic]:
    names = sorted(n.decode() for n in redis.smembers(ks.topic_names))
    pipe = redis.pipeline(transaction=False)
    for name in names:
        pipe.hgetall(ks.topic(name))
    return [decode_topic(raw, defaults or {}) for raw in pipe.execute() if raw]


def append(
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
    """One EVALSHA of append.lua, as log.append."""
    args = append_args(
        topic,
        records,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        size_bytes=size_bytes or estimated_size(records),
        channel=ks.appended_channel if notify else "",
        partition=partition,
    )
    reply = scripts.run_sync(redis, "append", ks.partition_keys(topic.name, partition), args)
    return parse_append_reply(reply, topic.sequence_bits)


def bounds(redis: Any, ks: Keyspace, topic: Topic, partition: int) -> PartitionBounds:
    pipe = redis.pipeline(transaction=False)
    pipe.execute_command("XINFO STREAM", ks.stream(topic.name, partition))
    pipe.hget(ks.partition_state(topic.name, partition), "valid_from")
    info, valid_from = pipe.execute(raise_on_error=False)
    return bounds_from_info(info, topic.sequence_bits, valid_from)


def read(
    redis: Any, ks: Keyspace, topic: Topic, partition: int, offset: int, max_entries: int
) -> PartitionRead:
    """XRANGE from the offset's ID plus the bounds, in one pipelined round trip (as log.read)."""
    stream = ks.stream(topic.name, partition)
    pipe = redis.pipeline(transaction=False)
    pipe.execute_command("XRANGE", stream, id_text(offset, topic.sequence_bits), "+", "COUNT", max_entries)
    pipe.execute_command("XINFO STREAM", stream)
    pipe.hget(ks.partition_state(topic.name, partition), "valid_from")
    entries, info, valid_from = pipe.execute(raise_on_error=False)
    if isinstance(entries, Exception):
        raise entries
    b = bounds_from_info(info, topic.sequence_bits, None if isinstance(valid_from, Exception) else valid_from)
    return PartitionRead(entries or [], b.log_start_offset, b.high_watermark, b.first_valid_offset)
