"""Removing old records: DeleteRecords, and the retention pass (the only place retention.ms applies)."""

from __future__ import annotations

from ..keys import Keyspace
from ..redis.calls import Call, script
from ..topics.metadata import Topic


def delete_records(ks: Keyspace, topic: Topic, partition: int, before_offset: int) -> Call[int]:
    """Removes every entry below the offset; the reply is the new log start offset."""
    offsets = topic.offsets

    def start(reply: list[int]) -> int:
        ms, seq = int(reply[0]), int(reply[1])
        return offsets.offset_of(ms, seq) if ms >= 0 else before_offset

    keys = ks.partition_keys(topic.name, partition)
    return script("log_delete_records", keys, [offsets.id_text(before_offset)], start)


def has_retention(topic: Topic) -> bool:
    """Whether the retention pass trims the topic in Redis: a tiered topic's records leave Redis only
    once archived, through the archiver (cold/marks.py trim_hot)."""
    return not topic.remote_storage and (topic.retention_ms >= 0 or topic.retention_bytes >= 0)


def apply_retention(ks: Keyspace, topic: Topic, partition: int) -> Call[int]:
    """The retention pass over one partition: trims by retention.ms and retention.bytes; the reply is
    how many entries were removed."""
    args = [
        topic.retention_ms,
        topic.retention_bytes,
        1 if topic.trim_approximate else 0,
        1 if topic.offsets.dense else 0,
    ]
    return script("log_retention", ks.partition_keys(topic.name, partition), args, int)
