"""Kafka consumer group state in Redis (one hash per group), so any broker can take a group over.

A broker claims a group (bumping its owner epoch) before it coordinates it; every later write names
that owner and epoch, so a broker that lost the group can no longer write (see commits.py too).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..keys import Keyspace
from ..redis.calls import Call, Steps, command, script, text

MEMBERS_PRESENT = -1  # delete(): the group still has members


def _text_map(raw: Any) -> dict[str, str]:
    if isinstance(raw, dict):
        return {text(k): text(v) for k, v in raw.items()}
    return {text(raw[i]): text(raw[i + 1]) for i in range(0, len(raw), 2)}


def claim(ks: Keyspace, group_id: str, broker_id: int) -> Call[dict[str, str]]:
    """Become the owner (bumping the owner epoch) and read the saved state, in one script."""
    return script("group_claim", [ks.group(group_id)], [broker_id], _text_map)


def save(
    ks: Keyspace, group_id: str, broker_id: int, owner_epoch: str, state: Mapping[str, Any]
) -> Steps[bool]:
    """Writes the state unless another broker has claimed the group meanwhile; the group index rides
    the same round trip (it may sit in another Redis Cluster slot)."""
    args: list[Any] = [broker_id, owner_epoch]
    for key, value in state.items():
        args += [key, value]
    saved, _ = yield [
        script("group_save", [ks.group(group_id)], args, bool),
        command("SADD", ks.group_ids, group_id),
    ]
    return bool(saved)


def delete(ks: Keyspace, group_id: str) -> Steps[int]:
    """1 deleted, 0 no such group, MEMBERS_PRESENT when the group has members."""
    keys = [ks.group(group_id), ks.group_offsets(group_id)]
    (result,) = yield [script("group_delete", keys, [], int)]
    if result < 0:
        return MEMBERS_PRESENT
    yield [command("SREM", ks.group_ids, group_id)]
    return 1 if result else 0


def exists(ks: Keyspace, group_id: str) -> Call[bool]:
    return command("EXISTS", ks.group(group_id), ks.group_offsets(group_id), parse=bool)


def list_ids(ks: Keyspace) -> Call[list[str]]:
    return command("SMEMBERS", ks.group_ids, parse=lambda ids: sorted(text(g) for g in ids))


def load_state(ks: Keyspace, group_id: str) -> Call[dict[str, str]]:
    return command("HGETALL", ks.group(group_id), parse=_text_map)


def load_states(ks: Keyspace, group_ids: Iterable[str]) -> Steps[dict[str, dict[str, str]]]:
    ids = list(group_ids)
    raws = yield [load_state(ks, g) for g in ids]
    return dict(zip(ids, raws, strict=True))
