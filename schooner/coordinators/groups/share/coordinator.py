"""Coordination of KIP-932 share groups: ShareGroupHeartbeat, leaving, and finding a group to describe.

The GroupCoordinator (groups/coordinator.py) holds one of these as `.share`. The heartbeat's skeleton,
leaving, expiry and fenced saves are modern/coordinator.py's, shared with KIP-848 consumer groups;
this module fills in the share group's steps: Kafka's request checks, and members that join by the
id they chose and rejoin at epoch 0. There are no static members and nothing to revoke.

It shares GroupOwnership with the classic and KIP-848 coordinators: the broker that owns a group (a
hash of the group id over the live brokers), loading it from Redis on takeover, fenced saves, and the
one group hash in Redis, whose `type` field says "share". A group id is one kind at a time, and as in
Kafka a share group never changes kind: only an id nobody has used yet becomes a share group, and a
share group stays one until DeleteGroups removes it.
"""

from __future__ import annotations

from dataclasses import dataclass

from kio.schema.errors import ErrorCode

from ..classic.model import Group
from ..modern.coordinator import EpochCoordinator, HeartbeatAnswer, Refusal, fail, fenced, unknown_member
from ..modern.group import JOIN_EPOCH, LEAVE_EPOCH
from ..ownership import AnyGroup, GroupOwnership
from .group import ShareGroup, ShareMember

MAX_MEMBERS = 200  # Kafka's group.share.max.size default


@dataclass(frozen=True, slots=True)
class ShareHeartbeat:
    """One ShareGroupHeartbeat request. None means "unchanged since the last one"."""

    group_id: str
    member_id: str
    member_epoch: int
    rack_id: str | None
    subscribed: tuple[str, ...] | None
    client_id: str = ""
    client_host: str = ""


def invalid_field(hb: ShareHeartbeat) -> str | None:
    """Why the request is malformed (INVALID_REQUEST), or None; Kafka's checks, in its order."""
    if not hb.member_id.strip():
        return "MemberId can't be empty."
    if not hb.group_id.strip():
        return "GroupId can't be empty."
    if hb.rack_id is not None and not hb.rack_id.strip():
        return "RackId can't be empty."
    if hb.member_epoch == JOIN_EPOCH and not hb.subscribed:
        return "SubscribedTopicNames must be set in first request."
    if hb.member_epoch < LEAVE_EPOCH:
        return "MemberEpoch is invalid."
    return None


def unused(group: AnyGroup) -> bool:
    """A classic group in memory only because its id was looked up: never joined, never saved as
    any kind (a group with committed offsets is checked in Redis besides)."""
    return (
        isinstance(group, Group)
        and not group.members
        and not group.pending
        and group.generation == 0
        and group.protocol_type is None
    )


class ShareGroupCoordinator(EpochCoordinator[ShareGroup, ShareMember, ShareHeartbeat]):
    def __init__(self, ownership: GroupOwnership) -> None:
        super().__init__(ownership, MAX_MEMBERS)

    # -- lookups ----------------------------------------------------------------------------------
    async def find(self, group_id: str) -> ShareGroup | Refusal:
        """The share group to describe, or why not (GROUP_ID_NOT_FOUND). Raises NotCoordinator."""
        group = await self.ownership.find(group_id)
        if isinstance(group, ShareGroup):
            return group
        if group is None or (unused(group) and not await self._has_offsets(group_id)):
            return Refusal(ErrorCode.group_id_not_found, f"Group {group_id} not found.")
        return Refusal(ErrorCode.group_id_not_found, f"Group {group_id} is not a share group.")

    async def _has_offsets(self, group_id: str) -> bool:
        return bool(await self.ownership.store.committed_offsets(group_id))

    async def _group(self, group_id: str, create: bool) -> ShareGroup | Refusal:
        group = await self.ownership.group(group_id)
        if isinstance(group, ShareGroup):
            return group
        if not unused(group) or await self._has_offsets(group_id):
            return Refusal(ErrorCode.group_id_not_found, f"Group {group_id} is not a share group.")
        if not create:
            return Refusal(ErrorCode.group_id_not_found, f"Share group {group_id} not found.")
        async with group.lock:  # an id nobody uses becomes a share group
            if unused(group) and self.ownership.holds(group):
                self.ownership.replace(group, ShareGroup(group_id, owner_epoch=group.owner_epoch))
        return await self._group(group_id, create)

    # -- ShareGroupHeartbeat ----------------------------------------------------------------------
    def _refused(self, hb: ShareHeartbeat) -> HeartbeatAnswer | None:
        problem = invalid_field(hb)
        return None if problem is None else fail(ErrorCode.invalid_request, problem, hb)

    def _member_for(
        self, group: ShareGroup, hb: ShareHeartbeat
    ) -> tuple[ShareMember, bool] | HeartbeatAnswer:
        member = group.members.get(hb.member_id)
        if member is None:
            if hb.member_epoch != JOIN_EPOCH:
                return unknown_member(hb)
            return self._joined(group, hb, ShareMember(hb.member_id))
        # Epoch 0 from a known member is a rejoin (a member that was fenced, or lost an answer): it
        # gets its assignment again. Otherwise the epoch must be the current one, or the previous one
        # when the answer that moved it on was lost.
        if hb.member_epoch != JOIN_EPOCH and (
            hb.member_epoch > member.epoch
            or (hb.member_epoch < member.epoch and hb.member_epoch != member.previous_epoch)
        ):
            return fenced(group, member, hb)
        return member, False

    def _reconcile(self, group: ShareGroup, member: ShareMember, hb: ShareHeartbeat) -> None:
        group.reconcile(member)
