"""An append through append.lua as a Call, so the MQ library pipelines appends like its other round trips.

Arguments and reply are built and parsed by log.py's own helpers: an MQ append is the broker's append.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from .calls import Call, script
from .entry import Header
from .keys import Keyspace
from .log import AppendResult, RecordLike, append_args, estimated_size, parse_append_reply
from .topics import Topic

MAX_BATCH = 1000  # records per script call, as the broker's produce path


@dataclass(slots=True)
class Record:
    """A record to append (a log.RecordLike, whose attributes are plain, so not frozen)."""

    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[Header] = field(default_factory=list)


def append(
    ks: Keyspace,
    topic: Topic,
    partition: int,
    records: Sequence[RecordLike],
    *,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    notify: bool = True,
) -> Call[AppendResult]:
    args = append_args(
        topic,
        records,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        size_bytes=estimated_size(records),
        channel=ks.appended_channel if notify else "",
        partition=partition,
    )
    bits = topic.sequence_bits
    return script(
        "append", ks.partition_keys(topic.name, partition), args, lambda r: parse_append_reply(r, bits)
    )
