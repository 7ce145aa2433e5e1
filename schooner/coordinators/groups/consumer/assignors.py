"""Server-side assignors of the KIP-848 consumer protocol: "uniform" and "range".

An assignor maps every member to the partitions it should own at the new group epoch (the target
assignment). It sees each member's subscribed topics, the topics' partition counts, and the previous
target, so that "uniform" can leave partitions where they are when that keeps the balance.
Partitions are (topic id, partition) pairs: an id changes when a topic is deleted and created again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from ..modern.group import TopicInfo, TopicPartition


@dataclass(frozen=True, slots=True)
class MemberSpec:
    # Members are ordered by this key: the instance id of a static member, so that its place (and the
    # range it gets) survives a restart under a new member id; else the member id.
    key: str
    topics: frozenset[str]  # subscribed topic names that exist


Assignor = Callable[
    [Mapping[str, MemberSpec], Mapping[str, TopicInfo], Mapping[str, set[TopicPartition]]],
    dict[str, set[TopicPartition]],
]


def _order(members: Mapping[str, MemberSpec]) -> list[str]:
    return sorted(members, key=lambda m: (members[m].key, m))


def _partitions(topics: Mapping[str, TopicInfo], names: Iterable[str]) -> list[TopicPartition]:
    return [(topics[n].id, p) for n in sorted(names) if n in topics for p in range(topics[n].partitions)]


def _subscribers(members: Mapping[str, MemberSpec], topics: Mapping[str, TopicInfo]) -> dict[str, list[str]]:
    """Every subscribed topic that exists, by name (sorted), with its subscribers in member order."""
    order = _order(members)
    names = sorted({n for spec in members.values() for n in spec.topics if n in topics})
    return {name: [m for m in order if name in members[m].topics] for name in names}


def range_assignor(
    members: Mapping[str, MemberSpec],
    topics: Mapping[str, TopicInfo],
    previous: Mapping[str, set[TopicPartition]],
) -> dict[str, set[TopicPartition]]:
    """Per topic, its subscribers in order get contiguous ranges; the first ones get one more."""
    result: dict[str, set[TopicPartition]] = {m: set() for m in members}
    for name, subscribers in _subscribers(members, topics).items():
        base, extra = divmod(topics[name].partitions, len(subscribers))
        start = 0
        for i, m in enumerate(subscribers):
            count = base + (1 if i < extra else 0)
            result[m].update((topics[name].id, p) for p in range(start, start + count))
            start += count
    return result


def uniform_assignor(
    members: Mapping[str, MemberSpec],
    topics: Mapping[str, TopicInfo],
    previous: Mapping[str, set[TopicPartition]],
) -> dict[str, set[TopicPartition]]:
    """Counts differ by at most one between members with the same subscription; partitions stay put
    where that allows (fewer revocations on every change)."""
    if not members:
        return {}
    if len({spec.topics for spec in members.values()}) == 1:
        return _uniform_same_subscriptions(members, topics, previous)
    return _uniform_mixed_subscriptions(members, topics, previous)


def _uniform_same_subscriptions(
    members: Mapping[str, MemberSpec],
    topics: Mapping[str, TopicInfo],
    previous: Mapping[str, set[TopicPartition]],
) -> dict[str, set[TopicPartition]]:
    order = _order(members)
    every = _partitions(topics, next(iter(members.values())).topics)
    valid = set(every)
    base, extra = divmod(len(every), len(order))
    kept = {m: sorted(previous.get(m, set()) & valid) for m in order}
    # The extra partitions go first to members that already hold more than the base share.
    quota = dict.fromkeys(order, base)
    for m in sorted(order, key=lambda m: -len(kept[m]))[:extra]:
        quota[m] += 1
    result: dict[str, set[TopicPartition]] = {}
    taken: set[TopicPartition] = set()
    for m in order:
        mine = [tp for tp in kept[m] if tp not in taken][: quota[m]]
        result[m] = set(mine)
        taken.update(mine)
    free = iter(tp for tp in every if tp not in taken)
    # Hand out the rest round robin, so that each topic's new partitions spread over the members.
    hungry = [m for m in order if len(result[m]) < quota[m]]
    while hungry:
        for m in list(hungry):
            result[m].add(next(free))
            if len(result[m]) == quota[m]:
                hungry.remove(m)
    return result


def _uniform_mixed_subscriptions(
    members: Mapping[str, MemberSpec],
    topics: Mapping[str, TopicInfo],
    previous: Mapping[str, set[TopicPartition]],
) -> dict[str, set[TopicPartition]]:
    order = _order(members)
    rank = {m: i for i, m in enumerate(order)}
    name_of = {info.id: name for name, info in topics.items()}
    eligible = _subscribers(members, topics)
    result: dict[str, set[TopicPartition]] = {m: set() for m in order}
    taken: set[TopicPartition] = set()
    for m in order:
        for tp in sorted(previous.get(m, set())):
            name = name_of.get(tp[0], "")
            fits = name in members[m].topics and name in topics and tp[1] < topics[name].partitions
            if fits and tp not in taken:
                result[m].add(tp)
                taken.add(tp)
    for tp in _partitions(topics, eligible):
        if tp not in taken:
            owner = min(eligible[name_of[tp[0]]], key=lambda m: (len(result[m]), rank[m]))
            result[owner].add(tp)
    # Move partitions from fuller to emptier members that may take them, until no move helps.
    # Each move lowers the sum of squared counts, so this ends.
    moved = True
    while moved:
        moved = False
        for giver in sorted(order, key=lambda m: (-len(result[m]), rank[m])):
            for tp in sorted(result[giver], reverse=True):
                takers = [m for m in eligible[name_of[tp[0]]] if len(result[giver]) - len(result[m]) >= 2]
                if takers:
                    taker = min(takers, key=lambda m: (len(result[m]), rank[m]))
                    result[giver].remove(tp)
                    result[taker].add(tp)
                    moved = True
                    break
            if moved:
                break
    return result


ASSIGNORS: dict[str, Assignor] = {"uniform": uniform_assignor, "range": range_assignor}
DEFAULT_ASSIGNOR = "uniform"
