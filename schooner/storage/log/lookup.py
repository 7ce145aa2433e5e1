"""Offsets by time (ListOffsets): Kafka's rule on the partition log and its time index."""

from __future__ import annotations

from ..keys import Keyspace
from ..redis.calls import Steps, command
from ..topics.metadata import Topic
from .read import entry_timestamp

SCAN_COUNT = 500  # entries per round trip of the forward scan


def offset_for_timestamp(
    ks: Keyspace, topic: Topic, partition: int, timestamp: int
) -> Steps[tuple[int, int] | None]:
    """The earliest offset whose record timestamp is at or after the target, with that timestamp;
    None when no record qualifies.

    LogAppendTime on a timestamp-encoded topic: the entry ID is the time, so the scan starts at that
    ID. Otherwise (CreateTime, and every dense topic) the time index gives the first batch whose
    running maximum reached the target, and the scan starts there.
    """
    stream = ks.stream(topic.name, partition)
    start: bytes
    if topic.log_append_time and not topic.offsets.dense:
        start = b"%d-0" % max(timestamp, 0)
    else:
        found = yield [
            command("ZRANGEBYSCORE", ks.time_index(topic.name, partition), timestamp, "+inf", "LIMIT", 0, 1)
        ]
        if not found[0]:
            return None
        start = found[0][0]
    while True:
        (batch,) = yield [command("XRANGE", stream, start, topic.offsets.last_id, "COUNT", SCAN_COUNT)]
        if not batch:
            return None
        for entry_id, fields in batch:
            ts = entry_timestamp(fields, entry_id)
            if ts >= timestamp:
                return topic.offsets.offset_of_id(entry_id), ts
        start = b"(" + batch[-1][0]


def max_timestamp(ks: Keyspace, topic: Topic, partition: int) -> Steps[tuple[int, int] | None]:
    """The offset and timestamp of the record with the highest timestamp (ListOffsets -3)."""
    (max_id,) = yield [command("HGET", ks.partition_state(topic.name, partition), "max_ts_id")]
    if not max_id:
        return None
    (found,) = yield [command("XRANGE", ks.stream(topic.name, partition), max_id, max_id)]
    if not found:
        return None
    entry_id, fields = found[0]
    return topic.offsets.offset_of_id(entry_id), entry_timestamp(fields, entry_id)
