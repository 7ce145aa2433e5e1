"""The classic group's transitions (coordinators/groups/classic/group.py) as plain calls: no Redis, no
event loop, time passed in. Each test checks the state a transition leaves and the effects it asks for."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from schooner.coordinators.groups.classic.group import (
    SAVE,
    Answer,
    ArmTimer,
    Effect,
    Group,
    GroupSettings,
    GroupState,
    JoinRequest,
    JoinResult,
    Step,
    SyncResult,
    Wait,
    check_commit,
    expire,
    heartbeat,
    join,
    leave,
    rebalance_timeout,
    restart,
    sync,
)

SETTINGS = GroupSettings(min_session_ms=10, max_session_ms=300_000, initial_rebalance_delay_ms=3000)
RANGE = (("range", b"range-meta"),)
SESSION_MS, REBALANCE_MS = 10_000, 5_000


def _req(
    member_id: str = "",
    instance_id: str | None = None,
    protocols: tuple[tuple[str, bytes], ...] = RANGE,
    require_known_member: bool = False,
) -> JoinRequest:
    return JoinRequest(
        "g", member_id, instance_id, "client", "host", SESSION_MS, REBALANCE_MS, "consumer", protocols,
        require_known_member,
    )  # fmt: skip


def _stable(*member_ids: str, instances: dict[str, str] | None = None, now: float = 0.0) -> Group:
    """A group in generation 1, Stable, with members named as given (the first leads), each assigned
    its own id as bytes."""
    group = Group("g")
    for m in member_ids:
        join(group, _req(instance_id=(instances or {}).get(m)), m, now, SETTINGS)
    rebalance_timeout(group, now + 3)
    assert group.leader == member_ids[0]
    for m in member_ids[1:]:
        sync(group, m, None, 1, {}, now + 3)
    sync(group, member_ids[0], None, 1, {m: m.encode() for m in member_ids}, now + 3)
    assert group.state == GroupState.STABLE
    return group


def _answers(step: Step[Any] | list[Effect]) -> dict[str, JoinResult | SyncResult]:
    effects = step.effects if isinstance(step, Step) else step
    return {e.member_id: e.result for e in effects if isinstance(e, Answer)}


def test_a_new_group_waits_out_the_initial_delay_then_starts_generation_one() -> None:
    group = Group("g")
    first = join(group, _req(), "m1", 100.0, SETTINGS)
    assert first.reply == Wait("m1")
    assert group.state == GroupState.PREPARING_REBALANCE
    assert first.effects == (ArmTimer(3.0),)  # the initial delay (shorter than the rebalance timeout)
    second = join(group, _req(), "m2", 101.0, SETTINGS)
    assert second == Step(Wait("m2")), "all joined, but a new group still waits out the initial delay"

    effects = rebalance_timeout(group, 103.0)
    assert effects[0] == SAVE, "the generation is saved before anyone hears of it"
    assert group.state == GroupState.COMPLETING_REBALANCE and group.generation == 1
    answers = _answers(effects)
    leader, follower = answers["m1"], answers["m2"]
    assert isinstance(leader, JoinResult) and isinstance(follower, JoinResult)
    assert (leader.generation, leader.leader, leader.protocol_name) == (1, "m1", "range")
    assert [(m, md) for m, _, md in leader.members] == [("m1", b"range-meta"), ("m2", b"range-meta")]
    assert follower.members == [] and follower.leader == "m1"
    assert rebalance_timeout(group, 104.0) == [], "a late timer does nothing outside a rebalance"


def test_a_new_member_gets_its_id_first_when_the_client_asks_for_it() -> None:
    group = Group("g")
    step = join(group, _req(require_known_member=True), "new-1", 5.0, SETTINGS)
    assert step.reply == JoinResult(ErrorCode.member_id_required, "new-1")
    assert group.pending == {"new-1": 5.0} and not group.members and group.state == GroupState.EMPTY
    refused = join(group, _req("other", require_known_member=True), "x", 6.0, SETTINGS)
    assert refused.reply == JoinResult(ErrorCode.unknown_member_id, "other")
    again = join(group, _req("new-1", require_known_member=True), "x", 6.0, SETTINGS)
    assert again.reply == Wait("new-1") and "new-1" in group.members and not group.pending


def test_followers_sync_waits_for_the_leaders_assignments() -> None:
    group = Group("g")
    join(group, _req(), "m1", 0.0, SETTINGS)
    join(group, _req(), "m2", 0.0, SETTINGS)
    rebalance_timeout(group, 3.0)
    assert sync(group, "m2", None, 1, {}, 3.0).reply == Wait("m2")
    assert sync(group, "m2", None, 0, {}, 3.0).reply == SyncResult(ErrorCode.illegal_generation)
    assert sync(group, "nobody", None, 1, {}, 3.0).reply == SyncResult(ErrorCode.unknown_member_id)

    step = sync(group, "m1", None, 1, {"m1": b"a1", "m2": b"a2"}, 3.5)
    assert group.state == GroupState.STABLE
    assert step.reply == SyncResult(ErrorCode.none, "consumer", "range", b"a1")
    assert step.effects == (SAVE, Answer("m2", SyncResult(ErrorCode.none, "consumer", "range", b"a2")))
    late = sync(group, "m2", None, 1, {}, 4.0)
    assert late.reply == SyncResult(ErrorCode.none, "consumer", "range", b"a2") and not late.effects


def test_a_follower_rejoining_unchanged_keeps_the_generation_and_a_changed_one_rebalances() -> None:
    group = _stable("m1", "m2")
    same = join(group, _req("m2"), "x", 10.0, SETTINGS)
    assert same.reply == JoinResult(ErrorCode.none, "m2", 1, "consumer", "range", "m1", [])
    assert group.state == GroupState.STABLE and not same.effects

    changed = join(group, _req("m2", protocols=(("roundrobin", b""), *RANGE)), "x", 11.0, SETTINGS)
    assert changed.reply == Wait("m2")
    assert group.state == GroupState.PREPARING_REBALANCE
    assert changed.effects == (ArmTimer(REBALANCE_MS / 1000),), "a running group waits the whole timeout"
    # Once every member has rejoined, an established group completes at once.
    assert join(group, _req("m1"), "x", 12.0, SETTINGS).effects == (ArmTimer(0),)


def test_members_that_do_not_rejoin_in_time_are_dropped() -> None:
    group = _stable("m1", "m2")
    join(group, _req("m2", protocols=(("roundrobin", b""), *RANGE)), "x", 10.0, SETTINGS)
    effects = rebalance_timeout(group, 15.0)
    assert list(group.members) == ["m2"] and group.leader == "m2" and group.generation == 2
    assert group.protocol == "roundrobin", "the only member left prefers roundrobin"
    assert set(_answers(effects)) == {"m2"}


def test_a_rebalance_tells_a_waiting_sync_and_a_second_join_answers_the_first() -> None:
    group = Group("g")
    join(group, _req(), "m1", 0.0, SETTINGS)
    join(group, _req(), "m2", 0.0, SETTINGS)
    rebalance_timeout(group, 3.0)
    sync(group, "m2", None, 1, {}, 3.0)  # waits for the leader
    step = join(group, _req(), "m3", 4.0, SETTINGS)
    assert _answers(step) == {"m2": SyncResult(ErrorCode.rebalance_in_progress)}
    again = join(group, _req("m3"), "x", 4.5, SETTINGS)
    assert _answers(again) == {"m3": JoinResult(ErrorCode.rebalance_in_progress, "m3")}
    assert again.reply == Wait("m3")


def test_heartbeat_answers_by_state_and_member() -> None:
    assert heartbeat(Group("g"), "m1", None, 0, 0.0) == ErrorCode.unknown_member_id
    group = _stable("m1", "m2", instances={"m2": "i2"})
    assert heartbeat(group, "m2", "i2", 1, 20.0) == ErrorCode.none
    assert group.members["m2"].last_seen == 20.0
    assert heartbeat(group, "m2", None, 0, 20.0) == ErrorCode.illegal_generation
    assert heartbeat(group, "m1", "i2", 1, 20.0) == ErrorCode.fenced_instance_id
    join(group, _req(), "m3", 21.0, SETTINGS)
    assert heartbeat(group, "m1", None, 1, 22.0) == ErrorCode.rebalance_in_progress


def test_leaving_rebalances_the_rest_and_the_last_one_out_empties_the_group() -> None:
    group = _stable("m1", "m2", instances={"m2": "i2"})
    refused = leave(group, [("m1", "i2"), ("ghost", None)], 5.0, SETTINGS)
    assert refused.reply == [ErrorCode.fenced_instance_id, ErrorCode.unknown_member_id]
    assert refused.effects == () and group.state == GroupState.STABLE

    step = leave(group, [("", "i2")], 5.0, SETTINGS)  # by instance id alone
    assert step.reply == [ErrorCode.none] and list(group.members) == ["m1"]
    assert group.state == GroupState.PREPARING_REBALANCE
    assert step.effects == (ArmTimer(REBALANCE_MS / 1000), SAVE)

    group = _stable("m1")
    step = leave(group, [("m1", None)], 5.0, SETTINGS)
    assert step.effects == (SAVE,)
    assert (group.state, group.generation, group.leader, group.protocol) == (GroupState.EMPTY, 2, None, None)


def test_a_leave_during_a_rebalance_completes_it_when_the_rest_have_rejoined() -> None:
    group = _stable("m1", "m2")
    join(group, _req("m1", protocols=(("roundrobin", b""), *RANGE)), "x", 10.0, SETTINGS)
    step = leave(group, [("m2", None)], 11.0, SETTINGS)
    assert step.effects == (SAVE, ArmTimer(0)), "m1 has rejoined and m2 is gone: nothing to wait for"


def test_a_static_member_restarting_takes_its_old_place_without_a_rebalance() -> None:
    group = _stable("m1", "m2", instances={"m1": "i1"})
    step = join(group, _req(instance_id="i1"), "m1-restarted", 30.0, SETTINGS)
    result = step.reply
    assert isinstance(result, JoinResult)
    assert (result.error, result.member_id, result.generation) == (ErrorCode.none, "m1-restarted", 1)
    assert result.skip_assignment, "it was the leader: it keeps the assignment it computed"
    assert step.effects == (SAVE,)
    assert group.state == GroupState.STABLE and group.leader == "m1-restarted"
    assert "m1" not in group.members and group.members["m1-restarted"].assignment == b"m1"
    stale = join(group, _req("m1", instance_id="i1"), "x", 31.0, SETTINGS)
    assert stale.reply == JoinResult(ErrorCode.fenced_instance_id, "m1")

    # Restarting with another subscription is a change like any other: a rebalance.
    step = join(group, _req(instance_id="i1", protocols=(("roundrobin", b""),)), "m1-third", 32.0, SETTINGS)
    assert step.reply == JoinResult(ErrorCode.inconsistent_group_protocol, "")
    step = join(group, _req(instance_id="i1", protocols=(*RANGE, ("x", b""))), "m1-third", 32.0, SETTINGS)
    assert step.reply == Wait("m1-third") and group.state == GroupState.PREPARING_REBALANCE


def test_sessions_lapse_after_the_session_timeout_counted_from_redis_return() -> None:
    group = _stable("m1", "m2", now=0.0)
    heartbeat(group, "m1", None, 1, 9.0)
    group.pending["handed-out"] = 0.0
    late = 3 + SESSION_MS / 1000 + 0.5  # m2 was last seen at its sync (t=3)
    assert expire(group, late, sessions_from=late - 1, settings=SETTINGS) == [], "Redis was just back"
    assert "handed-out" in group.pending
    effects = expire(group, late, sessions_from=0.0, settings=SETTINGS)
    assert list(group.members) == ["m1"] and group.state == GroupState.PREPARING_REBALANCE
    assert effects == [ArmTimer(REBALANCE_MS / 1000), SAVE]
    join(group, _req("m1"), "x", 14.0, SETTINGS)
    expire(group, 61.0, sessions_from=0.0, settings=SETTINGS)
    assert not group.pending, "an id handed out and never used lapses after a minute"
    assert "m1" in group.members, "a member waiting in a join is alive"


def test_a_group_loaded_mid_rebalance_restarts_it_and_a_stable_one_is_left_alone() -> None:
    group = _stable("m1", "m2")
    assert restart(Group.from_saved("g", group.to_saved(), 50.0), 50.0, SETTINGS) == []
    join(group, _req("m2", protocols=(("roundrobin", b""), *RANGE)), "x", 10.0, SETTINGS)
    rebalance_timeout(group, 15.0)  # CompletingRebalance when the old coordinator went away
    loaded = Group.from_saved("g", group.to_saved(), 50.0)
    assert restart(loaded, 50.0, SETTINGS) == [ArmTimer(REBALANCE_MS / 1000)]
    assert loaded.state == GroupState.PREPARING_REBALANCE and loaded.generation == 2


def test_the_saved_form_keeps_members_and_a_reloaded_follower_rejoins_without_a_rebalance() -> None:
    group = _stable("m1", "m2", instances={"m2": "i2"})
    loaded = Group.from_saved("g", {**group.to_saved(), "owner_epoch": "7"}, 80.0)
    assert loaded.owner_epoch == "7" and loaded.state == GroupState.STABLE and loaded.leader == "m1"
    assert loaded.members["m2"].protocols == RANGE and loaded.members["m2"].assignment == b"m2"
    assert loaded.members["m2"].instance_id == "i2" and loaded.members["m2"].last_seen == 80.0
    assert isinstance(join(loaded, _req("m2"), "x", 81.0, SETTINGS).reply, JoinResult)


def test_commits_are_checked_against_the_generation_and_state() -> None:
    assert check_commit(Group("g"), "", None, -1, 0.0) == ErrorCode.none, "assign() consumers commit freely"
    group = _stable("m1", "m2")
    assert check_commit(group, "", None, -1, 0.0) == ErrorCode.unknown_member_id
    assert check_commit(group, "m2", None, 1, 40.0) == ErrorCode.none
    assert group.members["m2"].last_seen == 40.0, "a commit counts as a sign of life"
    assert check_commit(group, "m2", None, 0, 40.0) == ErrorCode.illegal_generation
    join(group, _req("m2", protocols=(("roundrobin", b""), *RANGE)), "x", 41.0, SETTINGS)
    join(group, _req("m1"), "x", 41.0, SETTINGS)
    rebalance_timeout(group, 41.0)
    assert check_commit(group, "m2", None, 2, 42.0) == ErrorCode.rebalance_in_progress


def test_the_protocol_is_the_common_one_most_members_prefer() -> None:
    group = Group("g")
    join(group, _req(protocols=(("a", b""), ("b", b""))), "m1", 0.0, SETTINGS)
    join(group, _req(protocols=(("b", b""), ("a", b""))), "m2", 0.0, SETTINGS)
    join(group, _req(protocols=(("b", b""), ("a", b""))), "m3", 0.0, SETTINGS)
    refused = join(group, _req(protocols=(("z", b""),)), "m4", 0.0, SETTINGS)
    assert refused.reply == JoinResult(ErrorCode.inconsistent_group_protocol, "")
    rebalance_timeout(group, 3.0)
    assert group.protocol == "b"
