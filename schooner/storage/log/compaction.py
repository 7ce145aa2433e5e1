"""Log compaction of topics whose cleanup.policy has compact (see scripts/log_compact.lua).

One broker at a time compacts a partition: it claims the partition's compactor key with SET NX PX and
its token, each step checks and renews the claim, and it gives the claim back when done. A step is
one script over at most `limit` entries, so an append waits for at most one step. Whether a pass
begins (min.cleanable.dirty.ratio, max.compaction.lag.ms) and where it must stop (min.compaction.lag.ms,
the last stable offset) is decided inside the script, against the partition as it is at that moment.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..keys import Keyspace
from ..redis.calls import Call, command, script
from ..topics.metadata import Topic

STEP_ENTRIES = 500  # entries one step examines: a few milliseconds of Redis time
CLAIM_MS = 10_000  # a compactor that stops renewing (a dead broker) frees the partition after this


@dataclass(frozen=True, slots=True)
class CompactionStep:
    scanned: int  # entries examined
    removed: int  # entries deleted: superseded records and expired tombstones
    more: bool  # there is more to do now (the step stopped at its limit)
    lost_claim: bool = False  # the claim lapsed: another broker may be compacting the partition
    dirty: int = 0  # entries after the cleaned point, before the step
    total: int = 0  # entries in the partition, before the step


def _step(reply: Any) -> CompactionStep:
    if int(reply[0]) < 0:
        return CompactionStep(0, 0, False, lost_claim=True)
    scanned, removed, more, dirty, total = (int(r) for r in reply)
    return CompactionStep(scanned, removed, bool(more), dirty=dirty, total=total)


def claim(ks: Keyspace, topic: Topic, partition: int, token: str, ttl_ms: int = CLAIM_MS) -> Call[bool]:
    """True when the caller now compacts the partition."""
    key = ks.compactor(topic.name, partition)
    return command("SET", key, token, "NX", "PX", ttl_ms, parse=bool)


def release(ks: Keyspace, topic: Topic, partition: int, token: str) -> Call[bool]:
    """Gives the claim back if it is still the caller's (compare and delete)."""
    return script("lease_release", [ks.compactor(topic.name, partition)], [token], lambda r: int(r) == 1)


def step(
    ks: Keyspace,
    topic: Topic,
    partition: int,
    token: str,
    limit: int = STEP_ENTRIES,
    ttl_ms: int = CLAIM_MS,
) -> Call[CompactionStep]:
    name = topic.name
    keys = [
        ks.stream(name, partition),
        ks.partition_state(name, partition),
        ks.compaction_keys(name, partition),
        ks.tombstones(name, partition),
        ks.compactor(name, partition),
        ks.txn_open(name, partition),
        ks.aborted(name, partition),
        ks.compaction_aborts(name, partition),
    ]
    args = [
        token,
        ttl_ms,
        limit,
        topic.min_compaction_lag_ms,
        topic.delete_retention_ms,
        topic.offsets.last_id,
        topic.offsets.script_arg,
        repr(topic.min_cleanable_dirty_ratio),
        topic.max_compaction_lag_ms,
    ]
    return script("log_compact", keys, args, _step)
