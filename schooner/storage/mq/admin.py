"""Read-mostly round trips for MQ administration: partition stats, groups, lag, and safe trimming.

A group here is a Redis consumer group on the partition streams, which a share group of the same name
(storage/share/partition.py) is too: the figures cover both kinds of consumer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..keys import Keyspace
from ..log import read as log_read
from ..redis.calls import Call, Steps, command, script, text
from ..topics.metadata import Topic

LAG_COUNT_LIMIT = 100_000


@dataclass(frozen=True, slots=True)
class PartitionStats:
    partition: int
    length: int
    first_offset: int | None  # None when the partition holds no entry
    last_offset: int | None
    high_watermark: int


@dataclass(frozen=True, slots=True)
class GroupInfo:
    name: str
    consumers: int
    pending: int
    last_delivered_id: str
    entries_read: int | None
    lag: int | None  # undelivered entries as Redis counts them; None when it cannot tell


@dataclass(frozen=True, slots=True)
class Lag:
    undelivered: int
    exact: bool  # False when the count stopped at the limit
    pending: int  # delivered, not yet acked
    # When the oldest unconsumed entry was appended: its ID's ms, or on a dense topic (whose IDs carry
    # no time) its timestamp field.
    oldest_unconsumed_ms: int | None

    @property
    def messages(self) -> int:
        return self.undelivered + self.pending


def stats(ks: Keyspace, topic: Topic, partition: int) -> Steps[PartitionStats]:
    """Entries, first and last offsets, and the high watermark (the log's own, which also holds on a dense
    partition ending in an `XADD *` entry: such an entry has no offset, so it is neither first nor last)."""
    offsets = topic.offsets
    (reply,) = yield [command("XINFO STREAM", ks.stream(topic.name, partition), on_error=lambda e: None)]
    if not reply:
        return PartitionStats(partition, 0, None, None, 0)
    info = _as_dict(reply)
    first, last = info.get("first-entry"), info.get("last-entry")
    bounds = yield from log_read.bounds(ks, topic, partition)
    return PartitionStats(
        partition,
        int(info.get("length") or 0),
        offsets.offset_of_id(first[0]) if first and offsets.numbered(first[0]) else None,
        offsets.offset_of_id(last[0]) if last and offsets.numbered(last[0]) else None,
        bounds.high_watermark,
    )


def groups(ks: Keyspace, topic: str, partition: int) -> Call[list[GroupInfo]]:
    """XINFO GROUPS of the partition's stream; [] when the stream does not exist."""
    return script("queue_groups", [ks.stream(topic, partition)], [], _parse_groups)


def is_share_group(ks: Keyspace, topic: str, group: str) -> Call[bool]:
    """Whether a share group (KIP-932) of that name has consumed the topic: then it is the same queue
    as the MQ group of that name (docs/share-groups.md)."""
    return command("SISMEMBER", ks.share_topics(group), topic, parse=lambda r: int(r) == 1)


def lag(
    ks: Keyspace, topic: str, partition: int, group: str, limit: int = LAG_COUNT_LIMIT
) -> Call[Lag | None]:
    """None when the group does not exist on the partition."""
    return script("queue_lag", [ks.stream(topic, partition)], [group, limit], _parse_lag)


def trim(ks: Keyspace, topic: Topic, partition: int, before_offset: int) -> Call[tuple[int, int]]:
    """Removes entries below the offset, but none a group still needs (nor, on a tiered topic, any not
    yet archived to the cold tier). Returns (removed, bound offset)."""
    offsets = topic.offsets
    tiered = 1 if topic.remote_storage else 0
    return script(
        "queue_trim",
        ks.partition_keys(topic.name, partition),
        [offsets.id_text(max(before_offset, 0)), tiered, offsets.script_arg],
        lambda r: (int(r[0]), offsets.offset_of_id(r[1])),
    )


def _as_dict(reply: Any) -> dict[str, Any]:
    if isinstance(reply, dict):
        return {text(k): v for k, v in reply.items()}
    return {text(reply[i]): reply[i + 1] for i in range(0, len(reply) - 1, 2)}


def _opt_int(value: Any) -> int | None:
    return None if value is None else int(value)


def _parse_groups(reply: Any) -> list[GroupInfo]:
    out = []
    for flat in reply or []:
        g = _as_dict(flat)
        out.append(
            GroupInfo(
                text(g["name"]),
                int(g["consumers"]),
                int(g["pending"]),
                text(g["last-delivered-id"]),
                _opt_int(g.get("entries-read")),
                _opt_int(g.get("lag")),
            )
        )
    return out


def _parse_lag(reply: Any) -> Lag | None:
    if isinstance(reply, int):
        return None
    undelivered, exact, pending, oldest, timestamp = reply
    oldest_ms = int(oldest.split(b"-")[0]) if oldest else None
    if oldest_ms == 0:
        oldest_ms = int(timestamp) if timestamp.lstrip(b"-").isdigit() else None
    return Lag(int(undelivered), bool(int(exact)), int(pending), oldest_ms)
