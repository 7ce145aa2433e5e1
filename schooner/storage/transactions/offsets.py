"""Offsets a consumer group commits inside a transaction (TxnOffsetCommit). They wait in a hash in the
group's slot, keyed by producer, and become the group's committed offsets only when the transaction
commits (group_txn_offsets.lua); OffsetFetch asking for stable offsets sees them as pending."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping
from typing import Any

from ..keys import Keyspace
from ..redis.calls import Call, command, script, text
from ..topic_partition import TopicPartition


def stage(
    ks: Keyspace,
    group_id: str,
    producer_id: int,
    offsets: Mapping[TopicPartition, tuple[int, int, str | None]],
) -> list[Call[Any]]:
    """Calls that keep the offsets until the transaction ends (and index the group)."""
    if not offsets:
        return []
    now = int(time.time() * 1000)
    args: list[Any] = []
    for (t, p), (o, e, m) in offsets.items():
        value = {"offset": o, "leader_epoch": e, "metadata": m, "commit_ms": now}
        args += [f"{producer_id}|{t}:{p}", json.dumps(value)]
    return [command("HSET", ks.group_txn_offsets(group_id), *args), command("SADD", ks.group_ids, group_id)]


def end(ks: Keyspace, group_id: str, producer_id: int, commit: bool) -> Call[int]:
    keys = [ks.group_txn_offsets(group_id), ks.group_offsets(group_id)]
    return script("group_txn_offsets", keys, [producer_id, 1 if commit else 0], int)


def pending(
    ks: Keyspace, group_id: str, partitions: Iterable[TopicPartition] | None
) -> Call[set[TopicPartition]]:
    """The partitions (of those asked, or all) with an offset waiting on an open transaction."""
    wanted = None if partitions is None else set(partitions)

    def parse(reply: list[Any]) -> set[TopicPartition]:
        out = set()
        for raw in reply:
            _, _, tp = text(raw).partition("|")
            topic, _, p = tp.rpartition(":")
            key = TopicPartition(topic, int(p))
            if wanted is None or key in wanted:
                out.add(key)
        return out

    return command("HKEYS", ks.group_txn_offsets(group_id), parse=parse)
