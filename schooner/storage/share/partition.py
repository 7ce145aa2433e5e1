"""Share partitions (KIP-932) on Redis consumer groups.

A share group's state on one topic-partition is the Redis consumer group of the same name on the
partition's stream: XREADGROUP acquires, the pending entries list is the in-flight window, an entry's
idle time is its acquisition lock and its delivery counter the delivery count; XACK accepts; a release
sets the idle time past any lock, so the next acquire (XPENDING IDLE on the lock duration, then XCLAIM)
takes it again. Archived records leave the window counted, and with a dead-letter queue become dead
letters in the MQ library's format (storage/mq/dead_letters.py), so `schooner.mq`'s admin lists and
replays them. An MQ group of the same name on the same topic is the very same queue.

The scripts are share_*.lua; each touches only the partition's slot.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..keys import Keyspace
from ..redis.calls import Call, command, script, text
from ..topics.metadata import Topic

NOT_THIS_TOPIC = -3
INVALID_RECORD_STATE = -1

GAP, ACCEPT, RELEASE, REJECT, RENEW = 0, 1, 2, 3, 4
ACK_TYPES = frozenset((GAP, ACCEPT, RELEASE, REJECT, RENEW))
# A share member's name in the Redis consumer group: the prefix tells an MQ member taking over a
# partition which pending entries are a share consumer's (left to their locks) and which an MQ member's.
CONSUMER_PREFIX = "share:"
RELEASE_MAX = 100_000  # most records one member can hold on a partition (far above any window)


@dataclass(frozen=True, slots=True)
class Limits:
    """The group configs that govern acquisition (coordinators/groups/share/config.py resolves them)."""

    lock_ms: int
    delivery_limit: int
    max_locks: int
    read_committed: bool
    dead_letters: bool  # archived records become dead letters (the group has a DLQ topic)


@dataclass(frozen=True, slots=True)
class Acquired:
    status: int  # 0 or NOT_THIS_TOPIC
    created: bool  # the share partition was initialized by this acquire
    entries: list[tuple[bytes, list[Any]]]  # (entry ID, flat fields), oldest first
    deliveries: list[int]  # delivery count of each entry, this delivery included
    dead_lettered: list[bytes]  # IDs archived into the dead-letter stream


@dataclass(frozen=True, slots=True)
class AckBatch:
    first_offset: int
    last_offset: int
    types: tuple[int, ...]  # one per offset, or one for the whole batch


@dataclass(frozen=True, slots=True)
class Acknowledged:
    ok: bool  # False: some offset was not acquired by the member (INVALID_RECORD_STATE), nothing settled
    settled: int
    dead_lettered: list[bytes]


@dataclass(frozen=True, slots=True)
class ShareState:
    start_offset: int
    in_flight: int
    lag: int  # records not yet accepted or archived; -1 when unknown
    archived: int
    dead_lettered: int


def acquire(
    ks: Keyspace,
    topic: Topic,
    partition: int,
    group: str,
    member: str,
    max_records: int,
    limits: Limits,
    start: str | int,
) -> Call[Acquired]:
    """start: where a new share partition begins, "$" (latest), "0" (earliest) or an offset."""
    name = topic.name
    keys = [
        ks.stream(name, partition),
        ks.partition_state(name, partition),
        ks.txn_open(name, partition),
        ks.aborted(name, partition),
        ks.share_partition(name, partition, group),
        ks.mq_dead_letters(name, partition),
        ks.mq_lease(name, partition, group),
    ]
    args = [
        group, CONSUMER_PREFIX + member, max_records, limits.lock_ms, limits.delivery_limit, limits.max_locks,
        _flag(limits.read_committed), topic.offsets.script_arg, str(topic.id),
        start if isinstance(start, str) else _id_before(topic, start),
        _flag(limits.dead_letters), name, partition,
    ]  # fmt: skip
    return script("share_acquire", keys, args, _parse_acquired)


def acknowledge(
    ks: Keyspace,
    topic: Topic,
    partition: int,
    group: str,
    member: str,
    batches: Sequence[AckBatch],
    limits: Limits,
) -> Call[Acknowledged]:
    """Settles the member's acquired records; all or nothing (see share_acknowledge.lua)."""
    name = topic.name
    codec = topic.offsets
    keys = [
        ks.stream(name, partition),
        ks.share_partition(name, partition, group),
        ks.mq_dead_letters(name, partition),
    ]
    args: list[Any] = [
        group, CONSUMER_PREFIX + member, limits.lock_ms, limits.delivery_limit, codec.script_arg,
        _flag(limits.dead_letters), name, partition,
    ]  # fmt: skip
    for b in batches:
        args += [
            codec.id_text(b.first_offset),
            codec.id_text(b.last_offset),
            b.first_offset,
            "".join(str(t) for t in b.types),
        ]
    return script("share_acknowledge", keys, args, _parse_acknowledged)


def state(ks: Keyspace, topic: Topic, partition: int, group: str) -> Call[ShareState | None]:
    """None when the group has no share partition there (never fetched, or deleted)."""
    name = topic.name
    keys = [ks.stream(name, partition), ks.share_partition(name, partition, group)]
    return script("share_state", keys, [group, topic.offsets.script_arg], _parse_state)


def reset(ks: Keyspace, topic: Topic, partition: int, group: str, start_offset: int | None) -> Call[int]:
    """Starts the share partition over at start_offset (the next record delivered is the first at or
    after it), or deletes it when start_offset is None. 1 done, 0 nothing to delete, NOT_THIS_TOPIC."""
    name = topic.name
    keys = [
        ks.stream(name, partition),
        ks.share_partition(name, partition, group),
        ks.partition_state(name, partition),
    ]
    after = "" if start_offset is None else _id_before(topic, start_offset)
    return script("share_reset", keys, [group, after, str(topic.id)], int)


def release_member(ks: Keyspace, topic: Topic, partition: int, group: str, member: str) -> Call[int]:
    """Releases every record the member holds there (its session closed); returns how many."""
    return script(
        "share_release",
        [ks.stream(topic.name, partition)],
        [group, CONSUMER_PREFIX + member, RELEASE_MAX],
        int,
    )


def register_topics(ks: Keyspace, group: str, topics: Sequence[str]) -> Call[int]:
    return command("SADD", ks.share_topics(group), *topics, parse=int)


def unregister_topics(ks: Keyspace, group: str, topics: Sequence[str]) -> Call[int]:
    return command("SREM", ks.share_topics(group), *topics, parse=int)


def topics(ks: Keyspace, group: str) -> Call[list[str]]:
    return command("SMEMBERS", ks.share_topics(group), parse=lambda r: sorted(text(t) for t in r))


def forget_group(ks: Keyspace, group: str) -> Call[int]:
    return command("DEL", ks.share_topics(group), parse=int)


def _id_before(topic: Topic, offset: int) -> str:
    if offset <= 0:
        return "0-0"
    return text(topic.offsets.id_text(offset - 1))


def _flag(on: bool) -> str:
    return "1" if on else "0"


def _parse_acquired(reply: Any) -> Acquired:
    if isinstance(reply, int):
        return Acquired(reply, False, [], [], [])
    created, rows, dead = reply
    entries = [(row[0], list(row[1] or [])) for row in rows]
    return Acquired(0, int(created) == 1, entries, [int(row[2]) for row in rows], list(dead))


def _parse_acknowledged(reply: Any) -> Acknowledged:
    if isinstance(reply, int):
        return Acknowledged(False, 0, [])
    dead, settled = reply
    return Acknowledged(True, int(settled), list(dead))


def _parse_state(reply: Any) -> ShareState | None:
    if not reply:
        return None
    start, in_flight, lag, archived, dead = reply
    return ShareState(int(start), int(in_flight), int(lag), int(archived), int(dead))
