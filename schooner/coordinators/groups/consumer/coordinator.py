"""Coordination of KIP-848 consumer groups: ConsumerGroupHeartbeat, leaving, static members.

The GroupCoordinator (groups/coordinator.py) holds one of these. The heartbeat's skeleton, leaving,
expiry and fenced saves are modern/coordinator.py's, shared with share groups; this module fills in
the consumer group's steps: its request checks, server assignors and regexes, static members that
step out and rejoin under a new member id, fencing by member epoch, and revocation deadlines.

It shares the classic coordinator's GroupOwnership: which broker owns a group (a hash of the group id
over the live brokers), loading it from Redis on takeover, fenced saves, and the same group hash in
Redis, whose `type` field says "consumer". A group id is classic or consumer: an empty group of one
kind becomes the other kind when a member of the other kind joins; a non-empty one refuses, and so
does a share group.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import time
import uuid
from dataclasses import dataclass
from typing import ClassVar

from kio.schema.errors import ErrorCode

from ..modern.coordinator import (
    EpochCoordinator,
    HeartbeatAnswer,
    MemberTimeouts,
    Refusal,
    TopicSource,
    fail,
    fenced,
    unknown_member,
)
from ..modern.group import JOIN_EPOCH, LEAVE_EPOCH, Assignment, EpochGroup
from ..ownership import GroupOwnership
from .assignors import ASSIGNORS
from .group import STATIC_LEAVE_EPOCH, ConsumerGroup, ConsumerMember, MemberState, is_subset

log = logging.getLogger(__name__)

REGEX_REFRESH_SECONDS = 1.0  # how often a group's regexes are matched against the topic names again
UNLIMITED_MEMBERS = 2**31 - 1


@dataclass(frozen=True, slots=True)
class Heartbeat:
    """One ConsumerGroupHeartbeat request. None (or -1) means "unchanged since the last one"."""

    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None
    rack_id: str | None
    rebalance_ms: int
    subscribed: tuple[str, ...] | None
    regex: str | None
    assignor: str | None
    owned: Assignment | None
    client_id: str = ""
    client_host: str = ""
    version: int = 1


def _check_static(group: ConsumerGroup, hb: Heartbeat) -> HeartbeatAnswer | None:
    """A static member's instance id must be known and held by this member id; else why not."""
    if hb.instance_id is None:
        return None
    holder = group.static_member(hb.instance_id)
    if holder is None:
        return fail(ErrorCode.unknown_member_id, f"Instance id {hb.instance_id} is unknown.", hb)
    if holder.member_id != hb.member_id:
        message = f"Static member {hb.member_id} with instance id {hb.instance_id} was fenced."
        return fail(ErrorCode.fenced_instance_id, message, hb)
    return None


def invalid_field(hb: Heartbeat) -> str | None:
    """Why the request is malformed (INVALID_REQUEST), or None."""
    if not hb.group_id:
        return "GroupId can't be empty."
    if hb.instance_id == "":
        return "InstanceId can't be empty."
    if hb.rack_id == "":
        return "RackId can't be empty."
    if hb.version >= 1 and not hb.member_id:
        return "MemberId can't be empty."
    if hb.member_epoch == JOIN_EPOCH:
        if hb.rebalance_ms == -1:
            return "RebalanceTimeoutMs must be provided in first request."
        if hb.owned is None or hb.owned:
            return "TopicPartitions must be empty when (re-)joining."
        if hb.subscribed is None and hb.regex is None:
            return "SubscribedTopicNames or SubscribedTopicRegex must be set in first request."
    elif hb.member_epoch > 0 or hb.member_epoch == LEAVE_EPOCH:
        if not hb.member_id:
            return "MemberId can't be empty."
    elif hb.member_epoch == STATIC_LEAVE_EPOCH:
        if not hb.member_id:
            return "MemberId can't be empty."
        if hb.instance_id is None:
            return "InstanceId can't be null."
    else:
        return "MemberEpoch is invalid."
    return None


class ConsumerGroupCoordinator(EpochCoordinator[ConsumerGroup, ConsumerMember, Heartbeat]):
    LEAVE_EPOCHS: ClassVar[tuple[int, ...]] = (LEAVE_EPOCH, STATIC_LEAVE_EPOCH)

    def __init__(self, ownership: GroupOwnership) -> None:
        super().__init__(ownership, UNLIMITED_MEMBERS)

    GROUP: ClassVar[type[ConsumerGroup]] = ConsumerGroup  # the kind served (streams/ serves a subclass)

    def _new_member(self, member_id: str) -> ConsumerMember:
        return ConsumerMember(member_id)

    # -- lookups ----------------------------------------------------------------------------------
    async def find(self, group_id: str) -> ConsumerGroup | Refusal:
        """The consumer group to describe, or why not (GROUP_ID_NOT_FOUND). Raises NotCoordinator."""
        group = await self.ownership.find(group_id)
        if group is None:
            return Refusal(ErrorCode.group_id_not_found, f"Group {group_id} not found.")
        if type(group) is not self.GROUP:
            return Refusal(
                ErrorCode.group_id_not_found, f"Group {group_id} is not a {self.GROUP.KIND} group."
            )
        assert isinstance(group, ConsumerGroup)
        return group

    async def _group(self, group_id: str, create: bool) -> ConsumerGroup | Refusal:
        group = await self.ownership.group(group_id)
        if type(group) is self.GROUP:
            assert isinstance(group, ConsumerGroup)
            return group
        if isinstance(group, EpochGroup) or group.members or group.pending:
            return Refusal(
                ErrorCode.group_id_not_found, f"Group {group_id} is not a {self.GROUP.KIND} group."
            )
        if not create:
            kind = self.GROUP.KIND.capitalize()
            return Refusal(ErrorCode.group_id_not_found, f"{kind} group {group_id} not found.")
        # An empty classic group (or none at all) becomes a group of this kind; its offsets stay.
        async with group.lock:
            if not group.members and not group.pending:
                self.ownership.replace(group, self.GROUP(group_id, owner_epoch=group.owner_epoch))
        return await self._group(group_id, create)

    async def _group_to_leave(self, group_id: str) -> ConsumerGroup | Refusal:
        group = await self.ownership.group(group_id)
        if type(group) is not self.GROUP:
            kind = self.GROUP.KIND.capitalize()
            return Refusal(ErrorCode.group_id_not_found, f"{kind} group {group_id} not found.")
        assert isinstance(group, ConsumerGroup)
        return group

    # -- ConsumerGroupHeartbeat -------------------------------------------------------------------
    def _refused(self, hb: Heartbeat) -> HeartbeatAnswer | None:
        problem = invalid_field(hb)
        if problem is not None:
            return fail(ErrorCode.invalid_request, problem, hb)
        if hb.assignor is not None and hb.assignor not in ASSIGNORS:
            supported = ", ".join(ASSIGNORS)
            message = f"ServerAssignor {hb.assignor} is not supported. Supported assignors: {supported}."
            return fail(ErrorCode.unsupported_assignor, message, hb)
        if hb.regex:
            try:
                re.compile(hb.regex)
            except re.error as exc:
                message = f"SubscribedTopicRegex `{hb.regex}` is not a valid regular expression: {exc}."
                return fail(ErrorCode.invalid_regular_expression, message, hb)
        return None

    def _prepared(self, hb: Heartbeat) -> Heartbeat:
        if not hb.member_id:  # v0: the coordinator names new members
            return dataclasses.replace(hb, member_id=str(uuid.uuid4()))
        return hb

    def _full(self, hb: Heartbeat) -> bool:
        # Also when the member sent everything: it recovers from an error and may have missed an answer.
        return hb.member_epoch == JOIN_EPOCH or (
            hb.rebalance_ms != -1 and hb.subscribed is not None and hb.owned is not None
        )

    def _member_for(
        self, group: ConsumerGroup, hb: Heartbeat
    ) -> tuple[ConsumerMember, bool] | HeartbeatAnswer:
        if hb.member_epoch == JOIN_EPOCH:
            if hb.instance_id is not None:
                holder = group.static_member(hb.instance_id)
                if holder is not None and holder.member_id != hb.member_id:
                    if holder.epoch != STATIC_LEAVE_EPOCH:
                        message = (
                            f"Static member {hb.member_id} with instance id {hb.instance_id} cannot join the "
                            f"group because the instance id is owned by member {holder.member_id}."
                        )
                        return fail(ErrorCode.unreleased_instance_id, message, hb)
                    log.info("consumer group %s: static member %s rejoins", group.group_id, hb.instance_id)
                    return group.replace(holder, hb.member_id), False
            member = group.members.get(hb.member_id)
            if member is None:
                return self._joined(group, hb, self._new_member(hb.member_id))
            # Epoch 0 from a known member: it has given up all its partitions and starts over.
            member.assigned, member.revoking, member.state = {}, {}, MemberState.STABLE
            member.epoch, member.previous_epoch, member.revoke_deadline = JOIN_EPOCH, LEAVE_EPOCH, None
            return member, False
        refused = _check_static(group, hb)
        if refused is not None:
            return refused
        member = group.members.get(hb.member_id)
        if member is None:
            return unknown_member(hb)
        stale_but_harmless = hb.member_epoch == member.previous_epoch and is_subset(hb.owned, member.assigned)
        if hb.member_epoch > member.epoch or (hb.member_epoch < member.epoch and not stale_but_harmless):
            return fenced(group, member, hb)
        return member, False

    def _update_member(self, member: ConsumerMember, hb: Heartbeat, timeouts: MemberTimeouts) -> bool:
        bump = super()._update_member(member, hb, timeouts)
        if hb.instance_id is not None:
            member.instance_id = hb.instance_id
        if hb.rebalance_ms != -1:
            member.rebalance_ms = hb.rebalance_ms
        if hb.regex is not None and (hb.regex or None) != member.regex:
            member.regex = hb.regex or None
            bump = True
        if hb.assignor is not None and hb.assignor != member.assignor:
            member.assignor = hb.assignor
            bump = True
        return bump

    async def _refresh_topics(self, group: ConsumerGroup, topics: TopicSource) -> bool:
        """Also matches the group's regexes against the topic names again (at most every
        REGEX_REFRESH_SECONDS, or at once for a new regex)."""
        changed = False
        now = time.monotonic()
        wanted = {m.regex for m in group.members.values() if m.regex}
        due = now - group.regexes_checked > REGEX_REFRESH_SECONDS or not wanted <= set(group.regexes)
        if wanted and due:
            names = await topics.names()
            resolved = {r: sorted(n for n in names if re.fullmatch(r, n)) for r in sorted(wanted)}
            group.regexes_checked = now
            if resolved != group.regexes:
                group.regexes = resolved
                changed = True
        elif not wanted and group.regexes:
            group.regexes = {}
        return await super()._refresh_topics(group, topics) or changed

    def _reconcile(self, group: ConsumerGroup, member: ConsumerMember, hb: Heartbeat) -> None:
        group.reconcile(member, hb.owned)
        # A member asked to revoke has its rebalance timeout to do so, or it is removed.
        if member.state == MemberState.UNREVOKED:
            if member.revoke_deadline is None:
                member.revoke_deadline = time.monotonic() + member.rebalance_ms / 1000
        else:
            member.revoke_deadline = None

    # -- leaving ----------------------------------------------------------------------------------
    def _leaving_member(self, group: ConsumerGroup, hb: Heartbeat) -> ConsumerMember | HeartbeatAnswer:
        # For a static member, the member id must be its instance id's holder.
        return _check_static(group, hb) or super()._leaving_member(group, hb)

    def _step_out(self, group: ConsumerGroup, member: ConsumerMember, hb: Heartbeat) -> None:
        if hb.member_epoch != STATIC_LEAVE_EPOCH:
            super()._step_out(group, member, hb)
            return
        # It keeps its partitions (no rebalance) until it rejoins or its session ends.
        member.epoch, member.state, member.revoking = STATIC_LEAVE_EPOCH, MemberState.STABLE, {}
        member.revoke_deadline = None
        log.info("consumer group %s: static member %s steps out", group.group_id, member.instance_id)
