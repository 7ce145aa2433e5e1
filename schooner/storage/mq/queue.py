"""Consumer-group delivery on a partition stream: group creation, lease-checked XREADGROUP, the claim of
a departed member's pending entries (XPENDING, XCLAIM), XACK, and XPENDING.

A share group of the same name is the same Redis consumer group, so the same queue
(docs/share-groups.md): its members' pending entries are theirs until their locks lapse, and the claim
leaves them alone.

Transactions (storage/log/transactions.py) are settled in the read and claim scripts themselves, in the
round trip that delivers: markers are acked unseen, and read committed (the default) also acks the
records of aborted transactions unseen and reads only below the last stable offset. So an entry a
handler gets is final, and an open transaction's records stay unread, not pending, until it ends.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..keys import Keyspace
from ..redis.calls import Call, command, script, text
from ..share.partition import CONSUMER_PREFIX as SHARE_CONSUMER_PREFIX
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
    skipped: int = 0  # entries acked unseen (markers, aborted records): there may be more to read


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


def create_group(
    ks: Keyspace, topic: Topic, partition: int, group: str, start: str = LATEST, committed: bool = True
) -> Call[int]:
    """1 created, 0 existed, NOT_THIS_TOPIC when the partition is not this topic's any more.
    committed: LATEST is the last stable offset (an open transaction's records are still to come)."""
    name = topic.name
    return script(
        "queue_group_create",
        [ks.stream(name, partition), ks.partition_state(name, partition), ks.txn_open(name, partition)],
        [group, start, str(topic.id), _flag(committed)],
        int,
    )


def destroy_group(ks: Keyspace, topic: str, partition: int, group: str) -> Call[int]:
    return command(
        "XGROUP", "DESTROY", ks.stream(topic, partition), group, parse=_int_or_zero, on_error=lambda e: 0
    )


def read(
    ks: Keyspace, topic: Topic, partition: int, group: str, member: str, count: int, committed: bool = True
) -> Call[ReadReply]:
    """New entries for the member, only while it holds the partition's lease. committed (Kafka's
    read_committed): no aborted records, and nothing at or past the last stable offset."""
    name = topic.name
    keys = [
        ks.stream(name, partition),
        ks.mq_lease(name, partition, group),
        ks.txn_open(name, partition),
        ks.aborted(name, partition),
    ]
    return script(
        "queue_read", keys, [group, member, count, _flag(committed), topic.offsets.script_arg], _parse_read
    )


def claim(
    ks: Keyspace,
    topic: Topic,
    partition: int,
    group: str,
    member: str,
    cursor: bytes,
    count: int,
    committed: bool = True,
) -> Call[ClaimReply]:
    """Takes over up to count pending entries of the group, oldest first, with their delivery counts;
    none that a share consumer holds."""
    name = topic.name
    keys = [ks.stream(name, partition), ks.mq_lease(name, partition, group), ks.aborted(name, partition)]
    args = [group, member, cursor, count, _flag(committed), topic.offsets.script_arg, SHARE_CONSUMER_PREFIX]
    return script("queue_claim", keys, args, _parse_claim)


def ack(ks: Keyspace, topic: str, partition: int, group: str, entry_ids: list[bytes]) -> Call[int]:
    return command("XACK", ks.stream(topic, partition), group, *entry_ids, parse=int)


def pending(
    ks: Keyspace, topic: str, partition: int, group: str, start: bytes | str = "-", count: int = 1000
) -> Call[list[PendingEntry]]:
    """Pending entries from start on, in ID order (XPENDING, extended form); none where the group does
    not exist (a share group exists only on the partitions its members have fetched)."""
    stream = ks.stream(topic, partition)
    return command(
        "XPENDING", stream, group, start, "+", count,
        parse=_parse_pending, on_error=_none_without_group, parse_detail=True,
    )  # fmt: skip


def _flag(on: bool) -> str:
    return "1" if on else "0"


def _parse_read(reply: Any) -> ReadReply:
    if isinstance(reply, int):
        return ReadReply(reply, [])
    entries, skipped = reply
    return ReadReply(0, [Delivery(e[0], e[1] or [], 1) for e in entries], int(skipped))  # hiredis: lists


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


def _none_without_group(error: Exception) -> list[PendingEntry]:
    if "NOGROUP" in str(error):
        return []
    raise error


def _int_or_zero(reply: Any) -> int:
    return int(reply or 0)
