"""Partition leases of MQ groups, and the member registry that fair shares are computed from.

A lease is one key per (topic, partition, group) holding the owner's token, with a PX lifetime:
acquired with SET NX PX, renewed and released only by its owner (compare-and-set scripts).
"""

from __future__ import annotations

from typing import Any

from ..keys import Keyspace
from ..redis.calls import Call, command, script, text


def acquire(ks: Keyspace, topic: str, partition: int, group: str, token: str, ttl_ms: int) -> Call[bool]:
    return script("lease_acquire", [ks.mq_lease(topic, partition, group)], [token, ttl_ms], _is_one)


def renew(ks: Keyspace, topic: str, partition: int, group: str, token: str, ttl_ms: int) -> Call[bool]:
    return script("lease_renew", [ks.mq_lease(topic, partition, group)], [token, ttl_ms], _is_one)


def release(ks: Keyspace, topic: str, partition: int, group: str, token: str) -> Call[bool]:
    return script("lease_release", [ks.mq_lease(topic, partition, group)], [token], _is_one)


def holder(ks: Keyspace, topic: str, partition: int, group: str) -> Call[str | None]:
    """The member id that holds the lease, or None."""
    return command("GET", ks.mq_lease(topic, partition, group), parse=_opt)


def remaining_ms(ks: Keyspace, topic: str, partition: int, group: str) -> Call[int]:
    """PTTL of the lease: -2 when nobody holds it."""
    return command("PTTL", ks.mq_lease(topic, partition, group), parse=int)


def heartbeat(ks: Keyspace, topic: str, group: str, member: str, ttl_ms: int) -> Call[list[str]]:
    """Registers the member until now + ttl, drops lapsed members; returns the live ones, sorted."""
    return script(
        "lease_heartbeat",
        [ks.mq_members(topic, group), ks.mq_groups(topic)],
        [member, ttl_ms, group],
        lambda r: [text(m) for m in r],
    )


def leave(ks: Keyspace, topic: str, group: str, member: str) -> Call[int]:
    return command("ZREM", ks.mq_members(topic, group), member, parse=int)


def members(ks: Keyspace, topic: str, group: str) -> Call[list[tuple[str, int]]]:
    """(member id, heartbeat expiry in ms) of every registered member, lapsed ones included."""
    return command("ZRANGE", ks.mq_members(topic, group), 0, -1, "WITHSCORES", parse=_with_scores)


def groups(ks: Keyspace, topic: str) -> Call[list[str]]:
    return command("SMEMBERS", ks.mq_groups(topic), parse=lambda r: sorted(text(g) for g in r))


def _with_scores(reply: Any) -> list[tuple[str, int]]:
    if reply and isinstance(reply[0], (list, tuple)):
        return [(text(m), int(float(s))) for m, s in reply]
    return [(text(reply[i]), int(float(reply[i + 1]))) for i in range(0, len(reply), 2)]


def _is_one(reply: Any) -> bool:
    return int(reply) == 1


def _opt(reply: Any) -> str | None:
    return None if reply is None else text(reply)
