"""The classic consumer group as a state machine with no I/O. Every rule of JoinGroup, SyncGroup,
Heartbeat, LeaveGroup, offset commits and session expiry lives here, and so does every change of
`Group.state`. coordinator.py only runs these functions and does what they return.

Theory of operation
-------------------
A group goes Empty -> PreparingRebalance -> CompletingRebalance -> Stable, and back to
PreparingRebalance whenever its members or their subscriptions change:

- PreparingRebalance: members (re)join, and each JoinGroup waits. The rebalance timer ends the wait:
  after the longest rebalance timeout, or as soon as every member has rejoined (a group that was
  empty waits out the initial delay first, to gather its first members). Members that did not
  rejoin are dropped; the generation goes up.
- CompletingRebalance: every member has its JoinGroup answer, and the leader got everyone's
  subscription. A follower's SyncGroup waits for the leader's, which carries the assignments.
- Stable: the assignments are out. A follower rejoining with the same subscription changes nothing;
  a static member (KIP-345) restarting under a new member id takes its old place without a rebalance.
- Empty: no members. Committed offsets stay.

Each transition is a function of the group, the event and `now` (monotonic seconds). It changes the
group in memory and returns a Step: the caller's reply (or Wait: its answer comes later) and the
effects to carry out, in order: Save (a fenced write to Redis), Answer (a waiting request gets its
response), ArmTimer (the rebalance timer; when it fires, the caller runs rebalance_timeout()). The
coordinator calls these under the group's lock, so tests can drive every rule with plain calls.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Generic, TypeVar

from kio.schema.errors import ErrorCode

from .model import (
    Group,
    GroupSettings,
    GroupState,
    JoinRequest,
    JoinResult,
    Member,
    SyncResult,
    new_member_id,
)

__all__ = [
    "SAVE", "Answer", "ArmTimer", "Effect", "Group", "GroupSettings", "GroupState", "JoinRequest",
    "JoinResult", "Member", "Save", "Step", "SyncResult", "Wait", "check_commit", "check_join",
    "expire", "heartbeat", "join", "leave", "new_member_id", "rebalance_timeout", "restart", "sync",
]  # fmt: skip

log = logging.getLogger(__name__)

R = TypeVar("R")

PENDING_ID_SECONDS = 60  # a member id handed out with MEMBER_ID_REQUIRED lasts at most this long unused


# -- what a transition asks of its caller ---------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Save:
    """Write the group to Redis (fenced by its owner epoch); later effects wait for it."""


SAVE = Save()


@dataclass(frozen=True, slots=True)
class Answer:
    """A member's waiting JoinGroup (JoinResult) or SyncGroup (SyncResult) gets its response."""

    member_id: str
    result: JoinResult | SyncResult


@dataclass(frozen=True, slots=True)
class ArmTimer:
    """(Re)start the group's rebalance timer: rebalance_timeout() is due after `seconds`."""

    seconds: float


@dataclass(frozen=True, slots=True)
class Wait:
    """The caller's request waits; its response comes later as an Answer to this member."""

    member_id: str


Effect = Save | Answer | ArmTimer


@dataclass(frozen=True, slots=True)
class Step(Generic[R]):
    reply: R | Wait
    effects: tuple[Effect, ...] = ()


# -- JoinGroup --------------------------------------------------------------------------------------
def check_join(req: JoinRequest, settings: GroupSettings) -> ErrorCode | None:
    """Why a JoinGroup is refused before its group is looked at, or None."""
    if not req.group_id:
        return ErrorCode.invalid_group_id
    if not settings.min_session_ms <= req.session_ms <= settings.max_session_ms:
        return ErrorCode.invalid_session_timeout
    return None


def join(
    group: Group, req: JoinRequest, new_id: str, now: float, settings: GroupSettings
) -> Step[JoinResult]:
    """A JoinGroup; `new_id` names the member if it has no id yet."""
    member_id = req.member_id
    if not group.supports(req.protocol_type, req.protocols):
        return Step(JoinResult(ErrorCode.inconsistent_group_protocol, member_id))
    new_member = not member_id
    if new_member:
        member_id = new_id
        if req.instance_id is not None:
            return _join_static(group, req, member_id, now, settings)
        if req.require_known_member:
            # KIP-394: hand out the id first; the member joins again with it.
            group.pending[member_id] = now
            return Step(JoinResult(ErrorCode.member_id_required, member_id))
    elif req.instance_id is not None:
        owner = group.instance_owner(req.instance_id)
        if owner is not None and owner != member_id:
            return Step(JoinResult(ErrorCode.fenced_instance_id, member_id))
    known = member_id in group.members or member_id in group.pending
    if not known and not new_member and (req.instance_id is None or req.require_known_member):
        return Step(JoinResult(ErrorCode.unknown_member_id, member_id))
    group.pending.pop(member_id, None)
    member = group.members.get(member_id)
    if member is None:
        member = group.members[member_id] = Member.joined(member_id, req, now)
        changed = True
    else:
        changed = member.protocols != req.protocols
        member.protocols = req.protocols
        member.session_ms, member.rebalance_ms = req.session_ms, req.rebalance_ms
    member.last_seen = now
    settled = group.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE)
    if not changed and member_id != group.leader and settled:
        return Step(_join_result(group, member))  # a follower rejoining as it was: nothing changes
    return _await_rebalance(group, member, req.protocol_type, now, settings)


def _join_static(
    group: Group, req: JoinRequest, member_id: str, now: float, settings: GroupSettings
) -> Step[JoinResult]:
    """KIP-345: a known instance id takes over its old member, without a rebalance when stable."""
    assert req.instance_id is not None
    old_id = group.instance_owner(req.instance_id)
    member = Member.joined(member_id, req, now)
    effects: list[Effect] = []
    if old_id is not None:
        old = group.members.pop(old_id)
        member.assignment = old.assignment
        effects += _answer_gone(old, ErrorCode.fenced_instance_id)
        if group.leader == old_id:
            group.leader = member_id
        group.members[member_id] = member
        if group.state == GroupState.STABLE and old.protocols == req.protocols:
            result = _join_result(group, member)
            result.skip_assignment = group.leader == member_id
            return Step(result, (*effects, SAVE))
    group.members[member_id] = member
    step = _await_rebalance(group, member, req.protocol_type, now, settings)
    return Step(step.reply, (*effects, *step.effects))


def _await_rebalance(
    group: Group, member: Member, protocol_type: str, now: float, settings: GroupSettings
) -> Step[JoinResult]:
    group.protocol_type = protocol_type
    effects: list[Effect] = []
    if member.joining:  # it joined again while its first JoinGroup waited
        effects.append(
            Answer(member.member_id, JoinResult(ErrorCode.rebalance_in_progress, member.member_id))
        )
    member.joining = True
    if group.state != GroupState.PREPARING_REBALANCE:
        effects += _prepare_rebalance(group, now, settings)
    effects += _maybe_complete_join(group, now, settings)
    return Step(Wait(member.member_id), tuple(effects))


def _join_result(group: Group, member: Member) -> JoinResult:
    members = []
    if member.member_id == group.leader and group.protocol:
        members = [
            (m.member_id, m.instance_id, m.metadata_for(group.protocol)) for m in group.members.values()
        ]
    return JoinResult(
        ErrorCode.none,
        member.member_id,
        group.generation,
        group.protocol_type,
        group.protocol,
        group.leader or "",
        members,
    )


# -- the rebalance ----------------------------------------------------------------------------------
def _prepare_rebalance(group: Group, now: float, settings: GroupSettings) -> list[Answer | ArmTimer]:
    effects: list[Answer | ArmTimer] = []
    for m in group.members.values():
        if m.syncing:
            effects.append(Answer(m.member_id, SyncResult(ErrorCode.rebalance_in_progress)))
            m.syncing = False
    was_empty = group.state == GroupState.EMPTY
    if group.state == GroupState.COMPLETING_REBALANCE:
        for m in group.members.values():
            m.assignment = b""  # the leader never sent this generation's: nobody holds one now
    group.state = GroupState.PREPARING_REBALANCE
    log.info("group %s: rebalance after generation %d", group.group_id, group.generation)
    timeout_ms = max([m.rebalance_ms for m in group.members.values()] or [0])
    delay_ms = min(settings.initial_rebalance_delay_ms, timeout_ms) if was_empty else timeout_ms
    effects.append(_arm(group, now, delay_ms / 1000))
    return effects


def _arm(group: Group, now: float, seconds: float) -> ArmTimer:
    group.timer_at = now + seconds
    return ArmTimer(seconds)


def _maybe_complete_join(group: Group, now: float, settings: GroupSettings) -> list[ArmTimer]:
    """Every member has rejoined: the timer is due now, unless an empty group that just started still
    waits out the initial delay (to gather its first members)."""
    if group.all_rejoined() and group.timer_at is not None:
        remaining = group.timer_at - now
        if group.generation > 0 or remaining <= 0 or settings.initial_rebalance_delay_ms == 0:
            return [_arm(group, now, 0)]
    return []


def rebalance_timeout(group: Group, now: float) -> list[Effect]:
    """The rebalance timer fired: the new generation starts with the members that rejoined."""
    if group.state != GroupState.PREPARING_REBALANCE:
        return []
    group.timer_at = None
    for member_id in [i for i, m in group.members.items() if not m.joining]:
        del group.members[member_id]  # did not rejoin within the rebalance timeout
    group.pending.clear()
    group.generation += 1
    if not group.members:
        group.state, group.protocol, group.leader = GroupState.EMPTY, None, None
        return [SAVE]
    group.protocol = group.select_protocol()
    if group.leader not in group.members:
        group.leader = next(iter(group.members))
    group.state = GroupState.COMPLETING_REBALANCE
    log.info(
        "group %s: generation %d with %d members, protocol %s",
        group.group_id, group.generation, len(group.members), group.protocol,
    )  # fmt: skip
    effects: list[Effect] = [SAVE]
    for m in group.members.values():
        # A member keeps its last assignment until the leader's SyncGroup brings the new ones (as Kafka,
        # whose DescribeGroups shows it meanwhile).
        m.last_seen, m.joining = now, False
        effects.append(Answer(m.member_id, _join_result(group, m)))
    return effects


def restart(group: Group, now: float, settings: GroupSettings) -> list[Answer | ArmTimer]:
    """The group was just loaded from Redis. If it was mid-rebalance, the joins that waited on the old
    coordinator are gone: the rebalance starts again here and members rejoin."""
    if group.state in (GroupState.PREPARING_REBALANCE, GroupState.COMPLETING_REBALANCE):
        return _prepare_rebalance(group, now, settings)
    return []


# -- SyncGroup, Heartbeat, OffsetCommit -------------------------------------------------------------
def sync(
    group: Group,
    member_id: str,
    instance_id: str | None,
    generation: int,
    assignments: dict[str, bytes],
    now: float,
) -> Step[SyncResult]:
    """A SyncGroup; the leader's carries every member's assignment."""
    error = _check_member(group, member_id, instance_id, generation)
    if error is not None:
        return Step(SyncResult(error))
    member = group.members[member_id]
    member.last_seen = now
    if group.state == GroupState.PREPARING_REBALANCE:
        return Step(SyncResult(ErrorCode.rebalance_in_progress))
    if group.state == GroupState.STABLE:
        return Step(_sync_result(group, member))
    if member_id != group.leader:
        member.syncing = True
        return Step(Wait(member_id))
    for m in group.members.values():
        m.assignment = assignments.get(m.member_id, b"")
    group.state = GroupState.STABLE
    effects: list[Effect] = [SAVE]
    for m in group.members.values():
        if m.syncing:
            effects.append(Answer(m.member_id, _sync_result(group, m)))
            m.syncing = False
    return Step(_sync_result(group, member), tuple(effects))


def _sync_result(group: Group, member: Member) -> SyncResult:
    return SyncResult(ErrorCode.none, group.protocol_type, group.protocol, member.assignment)


def heartbeat(
    group: Group, member_id: str, instance_id: str | None, generation: int, now: float
) -> ErrorCode:
    if group.state == GroupState.EMPTY:
        return ErrorCode.unknown_member_id
    error = _check_member(group, member_id, instance_id, generation)
    if error is not None:
        return error
    group.members[member_id].last_seen = now
    if group.state == GroupState.PREPARING_REBALANCE:
        return ErrorCode.rebalance_in_progress
    return ErrorCode.none


def check_commit(
    group: Group, member_id: str, instance_id: str | None, generation: int, now: float
) -> ErrorCode:
    """Whether an OffsetCommit may store offsets."""
    if generation < 0 and not member_id:
        # Offsets stored by a consumer that uses no group management (assign()).
        return ErrorCode.none if not group.members else ErrorCode.unknown_member_id
    error = _check_member(group, member_id, instance_id, generation)
    if error is not None:
        return error
    if group.state == GroupState.COMPLETING_REBALANCE:
        return ErrorCode.rebalance_in_progress
    group.members[member_id].last_seen = now
    return ErrorCode.none


def _check_member(group: Group, member_id: str, instance_id: str | None, generation: int) -> ErrorCode | None:
    if instance_id is not None:
        owner = group.instance_owner(instance_id)
        if owner is not None and owner != member_id:
            return ErrorCode.fenced_instance_id
    if member_id not in group.members:
        return ErrorCode.unknown_member_id
    if generation != group.generation:
        return ErrorCode.illegal_generation
    return None


# -- members leaving --------------------------------------------------------------------------------
def leave(
    group: Group, members: list[tuple[str, str | None]], now: float, settings: GroupSettings
) -> Step[list[ErrorCode]]:
    """A LeaveGroup of (member id, instance id) pairs; the reply has one error per pair."""
    errors: list[ErrorCode] = []
    effects: list[Effect] = []
    removed = False
    for member_id, instance_id in members:
        if instance_id is not None:
            owner = group.instance_owner(instance_id)
            if owner is None:
                errors.append(ErrorCode.unknown_member_id)
                continue
            if member_id and owner != member_id:
                errors.append(ErrorCode.fenced_instance_id)
                continue
            member_id = owner
        if group.pending.pop(member_id, None) is not None:
            errors.append(ErrorCode.none)
            continue
        member = group.members.pop(member_id, None)
        if member is None:
            errors.append(ErrorCode.unknown_member_id)
            continue
        effects += _answer_gone(member, ErrorCode.unknown_member_id)
        errors.append(ErrorCode.none)
        removed = True
    if removed:
        effects += _after_removal(group, now, settings)
    return Step(errors, tuple(effects))


def expire(group: Group, now: float, sessions_from: float, settings: GroupSettings) -> list[Effect]:
    """Removes members whose session lapsed (a member waiting in a join is alive). A session counts
    from the member's last request, or from `sessions_from` if later (when this broker reached Redis
    again after trouble, so members could get through)."""
    lapsed = [
        m
        for m in group.members.values()
        if not m.joining and now - max(m.last_seen, sessions_from) > m.session_ms / 1000
    ]
    for pending_id, since in list(group.pending.items()):
        if now - since > min(settings.max_session_ms / 1000, PENDING_ID_SECONDS):
            del group.pending[pending_id]
    if not lapsed:
        return []
    effects: list[Effect] = []
    for m in lapsed:
        log.info("group %s: member %s session expired", group.group_id, m.member_id)
        del group.members[m.member_id]
        effects += _answer_gone(m, ErrorCode.unknown_member_id)
    return effects + _after_removal(group, now, settings)


def _answer_gone(member: Member, error: ErrorCode) -> list[Effect]:
    """The requests a removed member still has waiting are told why it is gone."""
    effects: list[Effect] = []
    if member.joining:
        effects.append(Answer(member.member_id, JoinResult(error, member.member_id)))
    if member.syncing:
        effects.append(Answer(member.member_id, SyncResult(error)))
    member.joining = member.syncing = False
    return effects


def _after_removal(group: Group, now: float, settings: GroupSettings) -> list[Effect]:
    effects: list[Effect] = []
    if group.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
        if group.members:
            effects += _prepare_rebalance(group, now, settings)
        else:
            group.generation += 1
            group.state, group.protocol, group.leader = GroupState.EMPTY, None, None
        effects.append(SAVE)
    elif group.state == GroupState.PREPARING_REBALANCE:
        effects.append(SAVE)
        effects += _maybe_complete_join(group, now, settings)
    return effects
