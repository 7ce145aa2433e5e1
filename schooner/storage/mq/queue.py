"""Consumer-group delivery on a partition stream: group creation, lease-checked XREADGROUP, XAUTOCLAIM
of a departed member's pending entries, XACK, and XPENDING.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..keys import Keyspace
from ..redis.calls import Call, command, script, text
from ..topics.metadata import Topic

LATEST = "$"
EARLIEST = "0"

LEASE_LOST = -1
NO_GROUP = -2
NOT_THIS_TOPIC = -3


@dataclass(frozen=True, slots=True)
class Delivery:
    entry_id: bytes
    fields: list[bytes]  # flat [field, value, ...] as the stream holds them
    deliveries: int  # how often the group has delivered the entry, this time included


@dataclass(frozen=True, slots=True)
class ReadReply:
    status: int  # 0, LEASE_LOST or NO_GROUP
    entries: list[Delivery]


@dataclass(frozen=True, slots=True)
class ClaimReply:
    status: int  # 0, LEASE_LOST or NO_GROUP
    cursor: bytes  # b"0-0" once every pending entry has been claimed
    entries: list[Delivery]


@dataclass(frozen=True, slots=True)
class PendingEntry:
    entry_id: bytes
    consumer: str
    idle_ms: int
    deliveries: int


def create_group(ks: Keyspace, topic: Topic, partition: int, group: str, start: str = LATEST) -> Call[int]:
    """1 created, 0 existed, NOT_THIS_TOPIC when the partition is not this topic's any more."""
    return script(
        "queue_group_create",
        [ks.stream(topic.name, partition), ks.partition_state(topic.name, partition)],
        [group, start, str(topic.id)],
        int,
    )


def destroy_group(ks: Keyspace, topic: str, partition: int, group: str) -> Call[int]:
    return command(
        "XGROUP", "DESTROY", ks.stream(topic, partition), group, parse=_int_or_zero, on_error=lambda e: 0
    )


def read(ks: Keyspace, topic: str, partition: int, group: str, member: str, count: int) -> Call[ReadReply]:
    """New entries for the member, only while it holds the partition's lease."""
    return script(
        "queue_read",
        [ks.stream(topic, partition), ks.mq_lease(topic, partition, group)],
        [group, member, count],
        _parse_read,
    )


def claim(
    ks: Keyspace, topic: str, partition: int, group: str, member: str, cursor: bytes, count: int
) -> Call[ClaimReply]:
    """Takes over up to count pending entries of the group, oldest first, with their delivery counts."""
    return script(
        "queue_claim",
        [ks.stream(topic, partition), ks.mq_lease(topic, partition, group)],
        [group, member, cursor, count],
        _parse_claim,
    )


def ack(ks: Keyspace, topic: str, partition: int, group: str, entry_ids: list[bytes]) -> Call[int]:
    return command("XACK", ks.stream(topic, partition), group, *entry_ids, parse=int)


def pending(
    ks: Keyspace, topic: str, partition: int, group: str, start: bytes | str = "-", count: int = 1000
) -> Call[list[PendingEntry]]:
    """Pending entries from start on, in ID order (XPENDING, extended form)."""
    stream = ks.stream(topic, partition)
    return command("XPENDING", stream, group, start, "+", count, parse=_parse_pending, parse_detail=True)


def _parse_read(reply: Any) -> ReadReply:
    if isinstance(reply, int):
        return ReadReply(reply, [])
    return ReadReply(0, [Delivery(e[0], list(e[1] or []), 1) for e in reply])


def _parse_claim(reply: Any) -> ClaimReply:
    if isinstance(reply, int):
        return ClaimReply(reply, b"0-0", [])
    cursor, entries = reply
    return ClaimReply(0, cursor, [Delivery(e[0], list(e[1] or []), int(e[2])) for e in entries])


def _parse_pending(reply: Any) -> list[PendingEntry]:
    out = []
    for item in reply or []:
        if isinstance(item, dict):
            out.append(
                PendingEntry(
                    item["message_id"],
                    text(item["consumer"]),
                    int(item["time_since_delivered"]),
                    int(item["times_delivered"]),
                )
            )
        else:
            out.append(PendingEntry(item[0], text(item[1]), int(item[2]), int(item[3])))
    return out


def _int_or_zero(reply: Any) -> int:
    return int(reply or 0)
