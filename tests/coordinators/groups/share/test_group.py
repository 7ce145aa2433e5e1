"""The share group's pure parts: the "simple" assignor (several members per partition when members
outnumber partitions, one member per partition otherwise) and the group's epochs, targets and saved
form. No Redis."""

from __future__ import annotations

from collections import Counter

from schooner.coordinators.groups.modern.group import TopicInfo, TopicPartition
from schooner.coordinators.groups.share.assignor import assign_shared
from schooner.coordinators.groups.share.group import ShareGroup, ShareGroupState, ShareMember

T = TopicInfo("tid", 1)


def _members(*ids: str, topics: tuple[str, ...] = ("t",)) -> dict[str, frozenset[str]]:
    return {m: frozenset(topics) for m in ids}


def _per_partition(assignment: dict[str, set[TopicPartition]]) -> Counter[TopicPartition]:
    return Counter(tp for tps in assignment.values() for tp in tps)


def test_more_members_than_partitions_share_a_partition() -> None:
    out = assign_shared(_members("a", "b", "c"), {"t": T}, {})
    assert out == {"a": {("tid", 0)}, "b": {("tid", 0)}, "c": {("tid", 0)}}


def test_every_member_gets_one_partition_and_partitions_are_shared_evenly() -> None:
    out = assign_shared(_members(*"abcde"), {"t": TopicInfo("tid", 2)}, {})
    assert all(len(tps) == 1 for tps in out.values())
    assert sorted(_per_partition(out).values()) == [2, 3]


def test_fewer_members_than_partitions_each_partition_goes_to_one_member() -> None:
    out = assign_shared(_members("a", "b"), {"t": TopicInfo("tid", 5)}, {})
    assert set(_per_partition(out).values()) == {1}
    assert set(_per_partition(out)) == {("tid", p) for p in range(5)}
    assert sorted(len(tps) for tps in out.values()) == [2, 3]


def test_a_member_that_joins_moves_as_little_as_the_balance_needs() -> None:
    info = TopicInfo("tid", 4)
    before = {"a": {("tid", 0), ("tid", 1)}, "b": {("tid", 2), ("tid", 3)}}
    out = assign_shared(_members("a", "b", "c"), {"t": info}, before)
    moved = sum(len(before[m] - out[m]) for m in before)
    assert moved == 1 and len(out["c"]) == 1
    assert set(_per_partition(out).values()) == {1}


def test_members_keep_their_partition_when_members_outnumber_partitions() -> None:
    info = TopicInfo("tid", 2)
    before = {"a": {("tid", 1)}, "b": {("tid", 0)}, "c": {("tid", 1)}}
    out = assign_shared(_members("a", "b", "c", "d"), {"t": info}, before)
    assert {m: out[m] for m in before} == before
    assert out["d"] == {("tid", 0)}, "the newcomer evens the counts"


def test_each_member_gets_only_topics_it_subscribes_to() -> None:
    members = {"a": frozenset({"x"}), "b": frozenset({"x", "y"}), "c": frozenset({"z"})}
    topics = {"x": TopicInfo("X", 1), "y": TopicInfo("Y", 2)}  # z does not exist
    out = assign_shared(members, topics, {})
    assert out == {"a": {("X", 0)}, "b": {("X", 0), ("Y", 0), ("Y", 1)}, "c": set()}


def test_the_extra_partitions_of_uneven_splits_go_to_different_members() -> None:
    topics = {name: TopicInfo(name.upper(), 3) for name in ("p", "q", "r", "s")}
    out = assign_shared(_members("a", "b", topics=tuple(topics)), topics, {})
    assert sorted(len(tps) for tps in out.values()) == [6, 6]


# -- the group --------------------------------------------------------------------------------------


def _group(*members: str, partitions: int = 1) -> ShareGroup:
    group = ShareGroup("g", topics={"t": TopicInfo("tid", partitions)})
    for m in members:
        group.members[m] = ShareMember(m, subscribed=("t",))
    group.group_epoch = 1
    group.compute_target()
    return group


def test_a_member_takes_its_target_at_once_with_the_target_epoch() -> None:
    group = _group("a", "b")
    a = group.members["a"]
    assert (a.epoch, a.assigned) == (0, {})
    group.reconcile(a)
    assert (a.previous_epoch, a.epoch, a.assigned) == (0, 1, {"tid": {0}})
    group.reconcile(group.members["b"])
    assert group.members["b"].assigned == {"tid": {0}}, "both read the one partition"
    assert group.state == ShareGroupState.STABLE


def test_removing_members_bumps_the_epoch_once_and_recomputes_the_target() -> None:
    group = _group("a", "b", "c", partitions=3)
    gone = group.remove(["a", "b", "nobody"])
    assert [m.member_id for m in gone] == ["a", "b"]
    assert (group.group_epoch, group.assignment_epoch) == (2, 2)
    assert group.members["c"].target == {"tid": {0, 1, 2}}
    assert group.remove(["nobody"]) == [] and group.group_epoch == 2
    group.remove(["c"])
    assert group.state == ShareGroupState.EMPTY and group.topics == {}


def test_the_saved_form_loads_back_the_same_group() -> None:
    group = _group("a", "b", partitions=2)
    for m in group.members.values():
        group.reconcile(m)
    group.members["a"].rack_id, group.members["a"].client_id = "r1", "cli"
    saved = group.to_saved()
    assert (saved["type"], saved["protocol_type"], saved["state"]) == ("share", "share", "Stable")
    loaded = ShareGroup.from_saved("g", {**saved, "owner_epoch": "7"})
    assert loaded.owner_epoch == "7" and loaded.topics == group.topics
    assert (loaded.group_epoch, loaded.assignment_epoch) == (1, 1)
    for m, member in group.members.items():
        back = loaded.members[m]
        assert (back.epoch, back.previous_epoch, back.assigned, back.target, back.rack_id) == (
            member.epoch, member.previous_epoch, member.assigned, member.target, member.rack_id
        )  # fmt: skip
        assert back.deadline > 0, "a loaded member's session starts afresh"
