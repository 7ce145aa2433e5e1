"""The share groups' "simple" assignor (KIP-932): partitions of the subscribed topics spread over the
members that subscribe to them. Pure: no Redis here.

Unlike a consumer group, a partition of a share group may go to several members at once: records are
acquired one by one, not partitions. So each topic is spread on its own:
- with at least as many partitions as subscribers, each partition goes to one member and the members'
  counts differ by one at most;
- with more subscribers than partitions, every subscriber gets exactly one partition and the partitions'
  counts of members differ by one at most.
Members keep what they held where the balance allows (fewer moves, fewer share sessions to reopen),
and the extra partition of an uneven split goes to the member with the least load over all topics.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

from ..modern.group import TopicInfo, TopicPartition

NAME = "simple"


def assign_shared(
    members: Mapping[str, frozenset[str]],
    topics: Mapping[str, TopicInfo],
    previous: Mapping[str, set[TopicPartition]],
) -> dict[str, set[TopicPartition]]:
    """member id -> its (topic id, partition) pairs. `members` maps each member to the topic names it
    subscribes to; `topics` holds those that exist; `previous` is the last assignment."""
    out: dict[str, set[TopicPartition]] = {m: set() for m in members}
    load: Counter[str] = Counter()
    for name in sorted(topics):
        info = topics[name]
        subscribers = sorted(m for m, names in members.items() if name in names)
        if not subscribers or info.partitions <= 0:
            continue
        held = {
            m: sorted(p for t, p in previous.get(m, ()) if t == info.id and 0 <= p < info.partitions)
            for m in subscribers
        }
        if len(subscribers) <= info.partitions:
            spread = _one_member_each(subscribers, info.partitions, held, load)
        else:
            spread = _one_partition_each(subscribers, info.partitions, held)
        for m, partitions in spread.items():
            out[m].update((info.id, p) for p in partitions)
            load[m] += len(partitions)
    return out


def _one_member_each(
    subscribers: list[str], partitions: int, held: Mapping[str, list[int]], load: Counter[str]
) -> dict[str, list[int]]:
    """Every partition to exactly one member; counts differ by one at most."""
    base, extra = divmod(partitions, len(subscribers))
    # The extra partitions go to the least loaded members so far; among equals, those that held more.
    order = sorted(subscribers, key=lambda m: (load[m], -len(held[m]), m))
    quota = {m: base + (1 if i < extra else 0) for i, m in enumerate(order)}
    taken: set[int] = set()
    spread: dict[str, list[int]] = {}
    for m in order:
        kept = [p for p in held[m] if p not in taken][: quota[m]]
        spread[m] = kept
        taken.update(kept)
    free = iter(p for p in range(partitions) if p not in taken)
    for m in order:
        while len(spread[m]) < quota[m]:
            spread[m].append(next(free))
    return spread


def _one_partition_each(
    subscribers: list[str], partitions: int, held: Mapping[str, list[int]]
) -> dict[str, list[int]]:
    """Every member gets one partition; each partition goes to base or base + 1 members."""
    base, extra = divmod(len(subscribers), partitions)
    # The partitions with more members are those most members held already (then the lowest).
    before = Counter(ps[0] for ps in held.values() if ps)
    order = sorted(range(partitions), key=lambda p: (-before[p], p))
    cap = {p: base + (1 if i < extra else 0) for i, p in enumerate(order)}
    count: Counter[int] = Counter()
    spread: dict[str, list[int]] = {}
    for m in subscribers:
        kept = next((p for p in held[m] if count[p] < cap[p]), None)
        if kept is not None:
            spread[m] = [kept]
            count[kept] += 1
    for m in subscribers:
        if m not in spread:
            p = min((p for p in range(partitions) if count[p] < cap[p]), key=lambda p: (count[p], p))
            spread[m] = [p]
            count[p] += 1
    return spread
