"""Fair shares of a topic's partitions among a group's live members (pure; the engine applies it).

Each member may hold ceil(partitions / live members). It prefers the partitions p with
p % members == its index among the sorted member ids, so members rarely contend for the same ones, and
an over-share member gives up the partitions it does not prefer first.
"""

from __future__ import annotations

import math
from collections.abc import Collection


def share(partitions: int, live_members: int) -> int:
    return math.ceil(partitions / max(live_members, 1))


def preferred(partitions: int, live: list[str], me: str) -> list[int]:
    if me not in live:
        return []
    index, n = live.index(me), len(live)
    return [p for p in range(partitions) if p % n == index]


def to_release(owned: Collection[int], limit: int, prefer: list[int]) -> list[int]:
    """The partitions to give up so that at most `limit` stay: the least preferred, highest first."""
    excess = len(owned) - limit
    if excess <= 0:
        return []
    wanted = set(prefer)
    return sorted(owned, key=lambda p: (p in wanted, -p))[:excess]


def to_acquire(partitions: int, owned: Collection[int], prefer: list[int]) -> list[int]:
    """Partitions worth trying, in order: preferred ones first, then any other not held."""
    rest = [p for p in range(partitions) if p not in owned and p not in prefer]
    return [p for p in prefer if p not in owned] + rest
