"""The KIP-848 server assignors and the reconciliation rules, as pure functions (no broker needed)."""

from __future__ import annotations

import itertools
import random

from schooner.coordinators.groups.consumer.assignors import MemberSpec, range_assignor, uniform_assignor
from schooner.coordinators.groups.consumer.group import ConsumerGroup, ConsumerMember, MemberState
from schooner.coordinators.groups.modern.group import TopicInfo

TOPICS = {"a": TopicInfo("id-a", 7), "b": TopicInfo("id-b", 5), "c": TopicInfo("id-c", 1)}


def _spec(*topics: str, key: str = "") -> MemberSpec:
    return MemberSpec(key, frozenset(topics))


def _check_complete(result: dict[str, set[tuple[str, int]]], members: dict[str, MemberSpec]) -> None:
    owned = [tp for tps in result.values() for tp in tps]
    assert len(owned) == len(set(owned)), "a partition given twice"
    wanted = {
        (TOPICS[n].id, p) for s in members.values() for n in s.topics for p in range(TOPICS[n].partitions)
    }
    assert set(owned) == wanted
    by_id = {t.id: n for n, t in TOPICS.items()}
    for m, tps in result.items():
        assert all(by_id[t] in members[m].topics for t, _ in tps), "a partition of a topic not subscribed"


def test_uniform_same_subscriptions_is_balanced_and_sticky() -> None:
    members = {f"m{i}": _spec("a", "b", key=f"m{i}") for i in range(3)}
    first = uniform_assignor(members, TOPICS, {})
    _check_complete(first, members)
    assert sorted(len(v) for v in first.values()) == [4, 4, 4]
    members["m3"] = _spec("a", "b", key="m3")
    second = uniform_assignor(members, TOPICS, first)
    _check_complete(second, members)
    assert sorted(len(v) for v in second.values()) == [3, 3, 3, 3]
    assert all(second[m] <= first[m] for m in first)  # the old members only gave partitions up
    del members["m0"]
    third = uniform_assignor(members, TOPICS, second)
    _check_complete(third, members)
    assert sorted(len(v) for v in third.values()) == [4, 4, 4]
    assert all(second[m] <= third[m] for m in third)  # nobody lost a partition to the leaving one's heirs


def test_uniform_mixed_subscriptions_balances_what_it_can() -> None:
    rng = random.Random(7)
    for _ in range(200):
        members = {
            f"m{i}": _spec(*rng.sample(sorted(TOPICS), rng.randint(1, 3)), key=f"m{i}")
            for i in range(rng.randint(2, 6))
        }
        result = uniform_assignor(members, TOPICS, {})
        _check_complete(result, members)
        # No partition could move to a member that may take it and has two fewer.
        by_id = {t.id: n for n, t in TOPICS.items()}
        for giver, taker in itertools.permutations(members, 2):
            if len(result[giver]) - len(result[taker]) >= 2:
                assert all(by_id[t] not in members[taker].topics for t, _ in result[giver])


def test_range_gives_each_topic_in_contiguous_ranges() -> None:
    members = {"x": _spec("a", "c", key="B"), "y": _spec("a", "b", key="A")}
    result = range_assignor(members, TOPICS, {})
    _check_complete(result, members)
    # "y" sorts first (key "A"): the first range of each topic, and the extra partition.
    assert sorted(p for t, p in result["y"] if t == "id-a") == [0, 1, 2, 3]
    assert sorted(p for t, p in result["x"] if t == "id-a") == [4, 5, 6]
    assert {tp for tp in result["y"] if tp[0] == "id-b"} == {("id-b", p) for p in range(5)}
    assert ("id-c", 0) in result["x"]


def test_reconciliation_revokes_before_it_assigns() -> None:
    group = ConsumerGroup("g", topics={"a": TopicInfo("id-a", 4)})
    a = group.members["a"] = ConsumerMember("a", subscribed=("a",))
    group.group_epoch = 1
    group.compute_target()
    group.reconcile(a, {})
    assert (a.epoch, a.assigned) == (1, {"id-a": {0, 1, 2, 3}})
    b = group.members["b"] = ConsumerMember("b", subscribed=("a",))
    group.group_epoch = 2
    group.compute_target()
    group.reconcile(b, {})
    assert (b.epoch, b.state, b.assigned) == (2, MemberState.UNRELEASED, {})
    group.reconcile(a, None)  # a has not said what it owns: it must revoke first
    assert (a.epoch, a.state) == (1, MemberState.UNREVOKED)
    assert a.assigned == {"id-a": {0, 1}} and a.revoking == {"id-a": {2, 3}}
    group.reconcile(b, {})
    assert b.assigned == {}  # still held by a
    group.reconcile(a, {"id-a": {0, 1}})
    assert (a.epoch, a.state, a.previous_epoch) == (2, MemberState.STABLE, 1)
    group.reconcile(b, {})
    assert (b.state, b.assigned) == (MemberState.STABLE, {"id-a": {2, 3}})
    assert group.state.value == "Stable"
    # Saved and loaded again (a coordinator taking over), nothing is lost.
    loaded = ConsumerGroup.from_saved("g", group.to_saved())
    assert {m: (x.epoch, x.assigned, x.target) for m, x in loaded.members.items()} == {
        m: (x.epoch, x.assigned, x.target) for m, x in group.members.items()
    }
    assert (loaded.group_epoch, loaded.assignment_epoch, loaded.topics) == (2, 2, group.topics)
