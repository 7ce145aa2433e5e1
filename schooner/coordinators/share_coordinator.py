"""Coordination of KIP-932 share groups: ShareGroupHeartbeat, leaving, sessions, ShareGroupDescribe.

The GroupCoordinator (group_coordinator.py) holds one of these as `.share`. It shares GroupOwnership
with the classic and KIP-848 coordinators: the broker that owns a group (a hash of the group id over
the live brokers), loading it from Redis on takeover, fenced saves, and the one group hash in Redis,
whose `type` field says "share". A group id is one kind at a time, and as in Kafka a share group never
changes kind: only an id nobody has used yet becomes a share group, and a share group stays one until
DeleteGroups removes it.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass

from kio.schema.errors import ErrorCode

from .assignors import TopicInfo
from .classic_model import Group
from .consumer_coordinator import MemberTimeouts, TopicSource
from .group_ownership import AnyGroup, GroupOwnership
from .share_group import JOIN_EPOCH, LEAVE_EPOCH, Assignment, ShareGroup, ShareMember

log = logging.getLogger(__name__)

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


@dataclass(slots=True)
class ShareAnswer:
    error: ErrorCode
    message: str | None = None
    member_id: str | None = None
    member_epoch: int = LEAVE_EPOCH
    assignment: Assignment | None = None


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a group id is not a share group one may describe or join."""

    error: ErrorCode
    message: str


def _fail(error: ErrorCode, message: str, hb: ShareHeartbeat) -> ShareAnswer:
    return ShareAnswer(error, message, hb.member_id or None, hb.member_epoch)


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


class ShareGroupCoordinator:
    def __init__(self, ownership: GroupOwnership) -> None:
        self.ownership = ownership
        self.max_size = MAX_MEMBERS

    @contextlib.contextmanager
    def _saved_or_forgotten(self, group: ShareGroup) -> Iterator[None]:
        """A request that fails after changing the group in memory (Redis down mid-way) leaves no
        unsaved change behind: the group is forgotten and reloaded from its last saved state."""
        try:
            yield
        except BaseException:
            self.ownership.forget(group)
            raise

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

    async def _share_group(self, group_id: str, create: bool) -> ShareGroup | Refusal:
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
        return await self._share_group(group_id, create)

    # -- ShareGroupHeartbeat ----------------------------------------------------------------------
    async def heartbeat(
        self, hb: ShareHeartbeat, topics: TopicSource, timeouts: MemberTimeouts
    ) -> ShareAnswer:
        problem = invalid_field(hb)
        if problem is not None:
            return _fail(ErrorCode.invalid_request, problem, hb)
        if hb.member_epoch == LEAVE_EPOCH:
            return await self._leave(hb)
        group = await self._share_group(hb.group_id, create=hb.member_epoch == JOIN_EPOCH)
        if isinstance(group, Refusal):
            return _fail(group.error, group.message, hb)
        async with group.lock:
            with self._saved_or_forgotten(group):
                return await self._heartbeat_locked(group, hb, topics, timeouts)

    async def _heartbeat_locked(
        self, group: ShareGroup, hb: ShareHeartbeat, topics: TopicSource, timeouts: MemberTimeouts
    ) -> ShareAnswer:
        found = self._member_for(group, hb)
        if isinstance(found, ShareAnswer):
            return found
        member = found
        bump = _update_member(member, hb, timeouts)
        bump |= await _refresh_topics(group, topics)
        if bump:
            group.group_epoch += 1
            log.info("share group %s: epoch %d", group.group_id, group.group_epoch)
        if group.group_epoch > group.assignment_epoch:
            group.compute_target()
        before = member.assigned
        group.reconcile(member)
        member.deadline = time.monotonic() + timeouts.session_ms / 1000
        await self.ownership.save_share(group)
        # The assignment goes out when the member (re)joins, or when it changed.
        changed = member.assigned != before
        return ShareAnswer(
            ErrorCode.none,
            member_id=member.member_id,
            member_epoch=member.epoch,
            assignment=member.assigned if hb.member_epoch == JOIN_EPOCH or changed else None,
        )

    def _member_for(self, group: ShareGroup, hb: ShareHeartbeat) -> ShareMember | ShareAnswer:
        """The member the heartbeat is from (created when it joins); or why it is refused."""
        member = group.members.get(hb.member_id)
        if member is None:
            if hb.member_epoch != JOIN_EPOCH:
                message = f"Member {hb.member_id} is not a member of group {group.group_id}."
                return _fail(ErrorCode.unknown_member_id, message, hb)
            if len(group.members) >= self.max_size:
                message = f"The share group has reached its maximum capacity of {self.max_size} members."
                return _fail(ErrorCode.group_max_size_reached, message, hb)
            member = group.members[hb.member_id] = ShareMember(hb.member_id)
            log.info("share group %s: member %s joins", group.group_id, hb.member_id)
            return member
        # Epoch 0 from a known member is a rejoin (a member that was fenced, or lost an answer): it
        # gets its assignment again. Otherwise the epoch must be the current one, or the previous one
        # when the answer that moved it on was lost.
        if hb.member_epoch != JOIN_EPOCH and (
            hb.member_epoch > member.epoch
            or (hb.member_epoch < member.epoch and hb.member_epoch != member.previous_epoch)
        ):
            message = (
                f"The share group member has a member epoch ({hb.member_epoch}) other than the one known "
                f"by the group coordinator ({member.epoch}). The member must abandon all its partitions "
                "and rejoin."
            )
            return _fail(ErrorCode.fenced_member_epoch, message, hb)
        return member

    async def _leave(self, hb: ShareHeartbeat) -> ShareAnswer:
        group = await self._share_group(hb.group_id, create=False)
        if isinstance(group, Refusal):
            return _fail(group.error, group.message, hb)
        async with group.lock:
            if hb.member_id not in group.members:
                message = f"Member {hb.member_id} is not a member of group {hb.group_id}."
                return _fail(ErrorCode.unknown_member_id, message, hb)
            with self._saved_or_forgotten(group):
                group.remove([hb.member_id])
                log.info("share group %s: member %s left", group.group_id, hb.member_id)
                await self.ownership.save_share(group)
        return ShareAnswer(ErrorCode.none, member_id=hb.member_id, member_epoch=LEAVE_EPOCH)

    # -- upkeep -----------------------------------------------------------------------------------
    async def expire(self, group: ShareGroup, redis_back_at: float = 0.0) -> None:
        """Removes members whose session lapsed, counted at the earliest from redis_back_at (when this
        broker reached Redis again after trouble). The caller holds the group's lock."""
        now = time.monotonic()
        lapsed = [
            m.member_id
            for m in group.members.values()
            if now > max(m.deadline, redis_back_at + m.session_ms / 1000)
        ]
        if lapsed:
            with self._saved_or_forgotten(group):
                group.remove(lapsed)
                log.info("share group %s: members %s expired", group.group_id, ", ".join(lapsed))
                await self.ownership.save_share(group)


def _update_member(member: ShareMember, hb: ShareHeartbeat, timeouts: MemberTimeouts) -> bool:
    """Applies what the heartbeat changed; True when that changes the assignment (a new group epoch)."""
    bump = False
    if hb.rack_id is not None:
        member.rack_id = hb.rack_id
    if hb.subscribed is not None and tuple(sorted(set(hb.subscribed))) != member.subscribed:
        member.subscribed = tuple(sorted(set(hb.subscribed)))
        bump = True
    member.client_id, member.client_host = hb.client_id, hb.client_host
    member.session_ms = timeouts.session_ms
    return bump


async def _refresh_topics(group: ShareGroup, topics: TopicSource) -> bool:
    """Brings the subscription metadata up to date: topics created, grown or deleted since. True when
    it changed (a new group epoch)."""
    fresh: dict[str, TopicInfo] = {}
    for name in sorted(group.subscribed_topics()):
        topic = await topics.topic(name)
        if topic is not None:
            fresh[name] = TopicInfo(str(topic.id), topic.partitions)
    if fresh != group.topics:
        group.topics = fresh
        return True
    return False
