"""The hot side's record of the cold tier: how far each tiered partition is archived, where its cold
records start, the claim of the broker that archives it, and the trim of Redis below what is archived.

The marks are two fields of the partition's state hash (docs/key-layout.md): `archived_end`, the offset
after the last record a committed Delta version holds (written only after that commit, and only ever
raised, so it is never ahead of the table), and `cold_start`, the cold tier's first offset. ListOffsets,
Fetch, the metrics and the MQ library's trim read them in one HMGET, never the table. Redis is trimmed
(tier_trim.lua) only below `archived_end`, read inside the script that trims.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..keys import Keyspace
from ..redis.calls import Call, command, script
from ..topics.metadata import Topic

CLAIM_MS = 10_000  # an archiver that stops renewing (a dead broker) frees its partitions after this


@dataclass(frozen=True, slots=True)
class TierMarks:
    archived_end: int | None  # None: nothing archived yet
    cold_start: int | None  # None: the cold tier holds none of the partition
    bytes: int = 0  # the partition's running totals of appended bytes and records (sizes for retention)
    records: int = 0

    @property
    def average_record_bytes(self) -> float:
        return self.bytes / self.records if self.records > 0 else 0.0


def _number(value: Any) -> int | None:
    return int(value) if value not in (None, b"", "") else None


def _marks(reply: Any) -> TierMarks:
    ended, start, size, count = reply
    return TierMarks(_number(ended), _number(start), _number(size) or 0, _number(count) or 0)


def marks(ks: Keyspace, topic: Topic, partition: int) -> Call[TierMarks]:
    """The partition's marks: one HMGET."""
    state = ks.partition_state(topic.name, partition)
    return command("HMGET", state, "archived_end", "cold_start", "bytes", "records", parse=_marks)


def marks_of(ks: Keyspace, partitions: Sequence[tuple[Topic, int]]) -> list[Call[TierMarks]]:
    """marks() of many partitions, to send together."""
    return [marks(ks, topic, p) for topic, p in partitions]


def _recorded(reply: Any) -> TierMarks | None:
    if not reply:
        return None
    return TierMarks(_number(reply[0]), _number(reply[1]))


def record(
    ks: Keyspace,
    topic: Topic,
    partition: int,
    archived_end: int = -1,
    first: int | None = None,
    trimmed_below: int | None = None,
) -> Call[TierMarks | None]:
    """Raises the archived end (after a committed archive step), sets the cold start when the cold tier
    had none (`first`), moves it up after a cold trim; the marks after, or None when the topic was
    deleted or made again meanwhile. tier_record.lua."""
    args = [
        str(topic.id),
        archived_end,
        "" if first is None else first,
        "" if trimmed_below is None else trimmed_below,
    ]
    return script("tier_record", [ks.partition_state(topic.name, partition)], args, _recorded)


def trim_hot(
    ks: Keyspace, topic: Topic, partition: int, local_ms: int, local_bytes: int, to_archived_end: bool = False
) -> Call[int]:
    """Trims the partition's stream to what local.retention.ms / .bytes keep (-1: no bound), or with
    `to_archived_end` everything archived (Redis nears its memory limit), never at or past the archived
    end; the entries removed. tier_trim.lua, which runs when Redis refuses other writes."""
    keys = [
        ks.stream(topic.name, partition),
        ks.partition_state(topic.name, partition),
        ks.time_index(topic.name, partition),
        ks.aborted(topic.name, partition),
    ]
    args = [
        str(topic.id),
        local_ms,
        local_bytes,
        1 if topic.trim_approximate else 0,
        topic.offsets.script_arg,
        1 if to_archived_end else 0,
    ]
    return script("tier_trim", keys, args, int)


def claim(ks: Keyspace, topic: Topic, partition: int, token: str, ttl_ms: int = CLAIM_MS) -> Call[bool]:
    """Takes or renews the claim to archive the partition: True while the token holds it."""
    return script("tier_claim", [ks.archiver(topic.name, partition)], [token, ttl_ms], lambda r: int(r) == 1)


def release(ks: Keyspace, topic: Topic, partition: int, token: str) -> Call[bool]:
    """Gives the claim back if it is still the token's (a broker that stops, or no longer owns it)."""
    return script("lease_release", [ks.archiver(topic.name, partition)], [token], lambda r: int(r) == 1)
