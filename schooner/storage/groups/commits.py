"""Committed offsets of Kafka consumer groups: one hash per group, "topic:partition" -> JSON."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..keys import Keyspace
from ..redis.calls import Steps, command, script, text
from ..topic_partition import TopicPartition


@dataclass(frozen=True, slots=True)
class CommittedOffset:
    offset: int
    leader_epoch: int
    metadata: str | None
    commit_ms: int


@dataclass(frozen=True, slots=True)
class Owner:
    """The broker coordinating a group and the owner epoch it got from claiming it (state.claim)."""

    broker_id: int
    epoch: str


def _field(topic: str, partition: int) -> str:
    return f"{topic}:{partition}"


def commit(
    ks: Keyspace,
    group_id: str,
    owner: Owner,
    offsets: Mapping[TopicPartition, tuple[int, int, str | None]],
) -> Steps[bool]:
    """Stores every partition's offset in one script, fenced by the owner epoch: False, and nothing
    written, when another broker has claimed the group since. The group index rides the same round trip."""
    now = int(time.time() * 1000)
    args: list[Any] = [owner.broker_id, owner.epoch]
    for (t, p), (o, e, m) in offsets.items():
        args += [_field(t, p), json.dumps({"offset": o, "leader_epoch": e, "metadata": m, "commit_ms": now})]
    if not offsets:
        return True
    stored, _ = yield [
        script("group_commit", [ks.group(group_id), ks.group_offsets(group_id)], args, bool),
        command("SADD", ks.group_ids, group_id),
    ]
    return bool(stored)


def _decode(items: Iterable[tuple[str, bytes]]) -> dict[TopicPartition, CommittedOffset]:
    out: dict[TopicPartition, CommittedOffset] = {}
    for field, value in items:
        topic, _, partition = field.rpartition(":")
        data = json.loads(value)
        out[TopicPartition(topic, int(partition))] = CommittedOffset(
            data["offset"], data.get("leader_epoch", -1), data.get("metadata"), data.get("commit_ms", -1)
        )
    return out


def fetch(
    ks: Keyspace, group_id: str, partitions: Iterable[TopicPartition] | None = None
) -> Steps[dict[TopicPartition, CommittedOffset]]:
    """Committed offsets of the given partitions (all when None). One round trip, none for no partitions."""
    key = ks.group_offsets(group_id)
    if partitions is None:
        (raw,) = yield [command("HGETALL", key)]
        return _decode((text(k), v) for k, v in raw.items())
    wanted = [_field(t, p) for t, p in partitions]
    if not wanted:
        return {}
    (values,) = yield [command("HMGET", key, *wanted)]
    return _decode((f, v) for f, v in zip(wanted, values, strict=True) if v is not None)


def delete_offsets(ks: Keyspace, group_id: str, partitions: Iterable[TopicPartition]) -> Steps[int]:
    fields = [_field(t, p) for t, p in partitions]
    if not fields:
        return 0
    (removed,) = yield [command("HDEL", ks.group_offsets(group_id), *fields, parse=int)]
    return int(removed)
