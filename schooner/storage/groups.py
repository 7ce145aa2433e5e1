"""Consumer group state and committed offsets in Redis, so any broker can take a group over."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from . import scripts
from .keys import Keyspace


@dataclass(frozen=True, slots=True)
class CommittedOffset:
    offset: int
    leader_epoch: int
    metadata: str | None
    commit_ms: int


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


async def claim(redis: Any, ks: Keyspace, group_id: str, broker_id: int) -> dict[str, str]:
    """One script: become the owner (bumping the owner epoch) and read the saved state."""
    flat = await scripts.run(redis, "group_claim", [ks.group(group_id)], [broker_id])
    if isinstance(flat, dict):
        return {_text(k): _text(v) for k, v in flat.items()}
    return {_text(flat[i]): _text(flat[i + 1]) for i in range(0, len(flat), 2)}


async def save(
    redis: Any, ks: Keyspace, group_id: str, broker_id: int, owner_epoch: str, state: Mapping[str, Any]
) -> bool:
    """One script: write the state unless another broker has claimed the group meanwhile."""
    args: list[Any] = [broker_id, owner_epoch]
    for key, value in state.items():
        args += [key, value]
    saved = await scripts.run(redis, "group_save", [ks.group(group_id)], args)
    if saved:
        await redis.sadd(ks.group_ids, group_id)
    return bool(saved)


async def delete(redis: Any, ks: Keyspace, group_id: str) -> int:
    """1 deleted, 0 no such group, -1 the group has members."""
    keys = [ks.group(group_id), ks.group_offsets(group_id)]
    result = int(await scripts.run(redis, "group_delete", keys, []))
    if result >= 0:
        await redis.srem(ks.group_ids, group_id)
    return result if result < 0 else (1 if result else 0)


async def exists(redis: Any, ks: Keyspace, group_id: str) -> bool:
    return bool(await redis.exists(ks.group(group_id), ks.group_offsets(group_id)))


async def list_ids(redis: Any, ks: Keyspace) -> list[str]:
    return sorted(_text(g) for g in await redis.smembers(ks.group_ids))


async def load_states(redis: Any, ks: Keyspace, group_ids: Iterable[str]) -> dict[str, dict[str, str]]:
    ids = list(group_ids)
    async with redis.pipeline(transaction=False) as pipe:
        for g in ids:
            pipe.hgetall(ks.group(g))
        raws = await pipe.execute()
    return {g: {_text(k): _text(v) for k, v in raw.items()} for g, raw in zip(ids, raws, strict=True)}


def _field(topic: str, partition: int) -> str:
    return f"{topic}:{partition}"


async def commit(
    redis: Any, ks: Keyspace, group_id: str, offsets: Mapping[tuple[str, int], tuple[int, int, str | None]]
) -> None:
    """One HSET of every partition's offset (atomic for the whole commit), then the group index."""
    now = int(time.time() * 1000)
    mapping = {
        _field(t, p): json.dumps({"offset": o, "leader_epoch": e, "metadata": m, "commit_ms": now})
        for (t, p), (o, e, m) in offsets.items()
    }
    if mapping:
        await redis.hset(ks.group_offsets(group_id), mapping=mapping)
        await redis.sadd(ks.group_ids, group_id)


async def fetch(
    redis: Any, ks: Keyspace, group_id: str, partitions: Iterable[tuple[str, int]] | None = None
) -> dict[tuple[str, int], CommittedOffset]:
    """Committed offsets of the given partitions (all when None)."""
    key = ks.group_offsets(group_id)
    if partitions is None:
        raw = await redis.hgetall(key)
        items = [(_text(k), v) for k, v in raw.items()]
    else:
        wanted = [_field(t, p) for t, p in partitions]
        values = await redis.hmget(key, wanted) if wanted else []
        items = [(f, v) for f, v in zip(wanted, values, strict=True) if v is not None]
    out: dict[tuple[str, int], CommittedOffset] = {}
    for field, value in items:
        topic, _, partition = field.rpartition(":")
        data = json.loads(value)
        out[(topic, int(partition))] = CommittedOffset(
            data["offset"], data.get("leader_epoch", -1), data.get("metadata"), data.get("commit_ms", -1)
        )
    return out


async def delete_offsets(
    redis: Any, ks: Keyspace, group_id: str, partitions: Iterable[tuple[str, int]]
) -> None:
    fields = [_field(t, p) for t, p in partitions]
    if fields:
        await redis.hdel(ks.group_offsets(group_id), *fields)


# -- blocking twins, for the CLI ------------------------------------------------------------------
def list_ids_sync(redis: Any, ks: Keyspace) -> list[str]:
    return sorted(_text(g) for g in redis.smembers(ks.group_ids))


def load_state_sync(redis: Any, ks: Keyspace, group_id: str) -> dict[str, str]:
    return {_text(k): _text(v) for k, v in redis.hgetall(ks.group(group_id)).items()}


def committed_sync(redis: Any, ks: Keyspace, group_id: str) -> dict[tuple[str, int], CommittedOffset]:
    out: dict[tuple[str, int], CommittedOffset] = {}
    for field, value in redis.hgetall(ks.group_offsets(group_id)).items():
        topic, _, partition = _text(field).rpartition(":")
        data = json.loads(value)
        out[(topic, int(partition))] = CommittedOffset(
            data["offset"], data.get("leader_epoch", -1), data.get("metadata"), data.get("commit_ms", -1)
        )
    return out
