"""How many bytes each partition's log holds (DescribeLogDirs).

The append script keeps running totals of appended batch bytes and records in the partition state
hash (`bytes`, `records`). Those only grow, so a partition's size is its entry count times the
average appended record size: it grows with appends and shrinks with retention and DeleteRecords.
A stream written only by plain Redis clients has no totals; its size is what Redis says the stream
takes in memory (MEMORY USAGE), or 0 where the server refuses that command.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..keys import Keyspace
from ..redis.calls import Call, Steps, command
from ..topic_partition import TopicPartition


def _number(value: Any) -> int:
    return int(value) if value is not None else 0


def _no_size(_: Exception) -> int:
    return 0


def partition_sizes(ks: Keyspace, partitions: Sequence[TopicPartition]) -> Steps[dict[TopicPartition, int]]:
    """One pipelined round trip for the totals and entry counts; a second only for streams that
    plain Redis clients alone wrote."""
    calls: list[Call[Any]] = []
    for tp in partitions:
        calls.append(command("HMGET", ks.partition_state(tp.topic, tp.partition), "bytes", "records"))
        calls.append(command("XLEN", ks.stream(tp.topic, tp.partition), parse=_number))
    replies = yield calls
    sizes: dict[TopicPartition, int] = {}
    untracked: list[TopicPartition] = []
    for i, tp in enumerate(partitions):
        (total, records), entries = replies[2 * i], replies[2 * i + 1]
        total, records = _number(total), _number(records)
        if records > 0:
            sizes[tp] = total * entries // records
        else:
            sizes[tp] = 0
            if entries > 0:
                untracked.append(tp)
    if untracked:
        usage = yield [
            command("MEMORY", "USAGE", ks.stream(tp.topic, tp.partition), parse=_number, on_error=_no_size)
            for tp in untracked
        ]
        sizes.update(zip(untracked, usage, strict=True))
    return sizes
