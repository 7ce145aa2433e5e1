"""Coordination of KIP-848 consumer groups: ConsumerGroupHeartbeat, leaving, sessions, offset checks.

The GroupCoordinator (group_coordinator.py) holds one of these. It shares the classic coordinator's
GroupOwnership: which broker owns a group (a hash of the group id over the live brokers), loading it
from Redis on takeover, fenced saves, and the same group hash in Redis, whose `type` field says
"consumer". A group id is classic or consumer: an empty group of one kind becomes the other kind
when a member of the other kind joins; a non-empty one refuses, and so does a share group.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import re
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

from kio.schema.errors import ErrorCode

from ..storage.topics.metadata import Topic
from .assignors import ASSIGNORS, TopicInfo
from .consumer_group import (
    JOIN_EPOCH,
    LEAVE_EPOCH,
    STATIC_LEAVE_EPOCH,
    Assignment,
    ConsumerGroup,
    ConsumerMember,
    MemberState,
    is_subset,
)
from .group_ownership import GroupOwnership
from .share_group import ShareGroup

log = logging.getLogger(__name__)

REGEX_REFRESH_SECONDS = 1.0  # how often a group's regexes are matched against the topic names again
UNLIMITED_MEMBERS = 2**31 - 1


class TopicSource(Protocol):
    """Where the coordinator reads topic metadata (the broker's cached view)."""

    async def topic(self, name: str) -> Topic | None: ...

    async def names(self) -> list[str]: ...


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


@dataclass(slots=True)
class HeartbeatAnswer:
    error: ErrorCode
    message: str | None = None
    member_id: str | None = None
    member_epoch: int = -1
    assignment: Assignment | None = None


@dataclass(frozen=True, slots=True)
class MemberTimeouts:
    session_ms: int
    heartbeat_ms: int


def _fail(error: ErrorCode, message: str, hb: Heartbeat) -> HeartbeatAnswer:
    return HeartbeatAnswer(error, message, hb.member_id or None, hb.member_epoch)


def _check_static(group: ConsumerGroup, hb: Heartbeat) -> HeartbeatAnswer | None:
    """A static member's instance id must be known and held by this member id; else why not."""
    if hb.instance_id is None:
        return None
    holder = group.static_member(hb.instance_id)
    if holder is None:
        return _fail(ErrorCode.unknown_member_id, f"Instance id {hb.instance_id} is unknown.", hb)
    if holder.member_id != hb.member_id:
        message = f"Static member {hb.member_id} with instance id {hb.instance_id} was fenced."
        return _fail(ErrorCode.fenced_instance_id, message, hb)
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


class ConsumerGroupCoordinator:
    def __init__(self, ownership: GroupOwnership) -> None:
        self.ownership = ownership
        self.max_size = UNLIMITED_MEMBERS

    @contextlib.contextmanager
    def _saved_or_forgotten(self, group: ConsumerGroup) -> Iterator[None]:
        """A request that fails after changing the group in memory (Redis down mid-way) must not leave
        unsaved changes behind: the group is forgotten and reloaded from its last saved state."""
        try:
            yield
        except BaseException:
            self.ownership.forget(group)
            raise

    # -- ConsumerGroupHeartbeat -------------------------------------------------------------------
    async def heartbeat(
        self, hb: Heartbeat, topics: TopicSource, timeouts: MemberTimeouts
    ) -> HeartbeatAnswer:
        problem = invalid_field(hb)
        if problem is not None:
            return _fail(ErrorCode.invalid_request, problem, hb)
        if hb.assignor is not None and hb.assignor not in ASSIGNORS:
            supported = ", ".join(ASSIGNORS)
            message = f"ServerAssignor {hb.assignor} is not supported. Supported assignors: {supported}."
            return _fail(ErrorCode.unsupported_assignor, message, hb)
        if hb.regex:
            try:
                re.compile(hb.regex)
            except re.error as exc:
                message = f"SubscribedTopicRegex `{hb.regex}` is not a valid regular expression: {exc}."
                return _fail(ErrorCode.invalid_regular_expression, message, hb)
        if hb.member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
            return await self._leave(hb)
        if not hb.member_id:
            hb = dataclasses.replace(hb, member_id=str(uuid.uuid4()))  # v0: the coordinator names new members
        group = await self._consumer_group(hb.group_id, create=hb.member_epoch == JOIN_EPOCH)
        if isinstance(group, HeartbeatAnswer):
            return _fail(group.error, group.message or "", hb)
        async with group.lock:
            with self._saved_or_forgotten(group):
                return await self._heartbeat_locked(group, hb, topics, timeouts)

    async def _heartbeat_locked(
        self, group: ConsumerGroup, hb: Heartbeat, topics: TopicSource, timeouts: MemberTimeouts
    ) -> HeartbeatAnswer:
        found = self._member_for(group, hb)
        if isinstance(found, HeartbeatAnswer):
            return found
        member, bump = found
        bump |= _update_member(member, hb, timeouts)
        bump |= await _refresh_topics(group, topics)
        if bump:
            group.group_epoch += 1
            log.info("consumer group %s: epoch %d", group.group_id, group.group_epoch)
        if group.group_epoch > group.assignment_epoch:
            group.compute_target()
        before = member.assigned
        group.reconcile(member, hb.owned)
        _track_revocation(member)
        member.deadline = time.monotonic() + timeouts.session_ms / 1000
        await self.ownership.save_consumer(group)
        # The assignment goes out when it changed, or when the member sent everything (it joined, or
        # recovers from an error and may have missed an answer).
        full = hb.member_epoch == JOIN_EPOCH or (
            hb.rebalance_ms != -1 and hb.subscribed is not None and hb.owned is not None
        )
        changed = member.assigned != before
        return HeartbeatAnswer(
            ErrorCode.none,
            member_id=member.member_id,
            member_epoch=member.epoch,
            assignment=member.assigned if full or changed else None,
        )

    async def _consumer_group(self, group_id: str, create: bool) -> ConsumerGroup | HeartbeatAnswer:
        group = await self.ownership.group(group_id)
        if isinstance(group, ConsumerGroup):
            return group
        if isinstance(group, ShareGroup) or group.members or group.pending:
            return HeartbeatAnswer(ErrorCode.group_id_not_found, f"Group {group_id} is not a consumer group.")
        if not create:
            return HeartbeatAnswer(ErrorCode.group_id_not_found, f"Consumer group {group_id} not found.")
        # An empty classic group (or none at all) becomes a consumer group; its offsets stay.
        async with group.lock:
            if not group.members and not group.pending:
                self.ownership.replace(group, ConsumerGroup(group_id, owner_epoch=group.owner_epoch))
        return await self._consumer_group(group_id, create)

    def _member_for(
        self, group: ConsumerGroup, hb: Heartbeat
    ) -> tuple[ConsumerMember, bool] | HeartbeatAnswer:
        """The member the heartbeat is from, and whether it joined just now; or why it is refused."""
        if hb.member_epoch == JOIN_EPOCH:
            if hb.instance_id is not None:
                holder = group.static_member(hb.instance_id)
                if holder is not None and holder.member_id != hb.member_id:
                    if holder.epoch != STATIC_LEAVE_EPOCH:
                        message = (
                            f"Static member {hb.member_id} with instance id {hb.instance_id} cannot join the "
                            f"group because the instance id is owned by member {holder.member_id}."
                        )
                        return _fail(ErrorCode.unreleased_instance_id, message, hb)
                    log.info("consumer group %s: static member %s rejoins", group.group_id, hb.instance_id)
                    return group.replace(holder, hb.member_id), False
            member = group.members.get(hb.member_id)
            if member is None:
                if len(group.members) >= self.max_size:
                    message = (
                        f"The consumer group has reached its maximum capacity of {self.max_size} members."
                    )
                    return _fail(ErrorCode.group_max_size_reached, message, hb)
                member = group.members[hb.member_id] = ConsumerMember(hb.member_id)
                log.info("consumer group %s: member %s joins", group.group_id, hb.member_id)
                return member, True
            # Epoch 0 from a known member: it has given up all its partitions and starts over.
            member.assigned, member.revoking, member.state = {}, {}, MemberState.STABLE
            member.epoch, member.previous_epoch, member.revoke_deadline = JOIN_EPOCH, LEAVE_EPOCH, None
            return member, False
        refused = _check_static(group, hb)
        if refused is not None:
            return refused
        member = group.members.get(hb.member_id)
        if member is None:
            message = f"Member {hb.member_id} is not a member of group {group.group_id}."
            return _fail(ErrorCode.unknown_member_id, message, hb)
        stale_but_harmless = hb.member_epoch == member.previous_epoch and is_subset(hb.owned, member.assigned)
        if hb.member_epoch > member.epoch or (hb.member_epoch < member.epoch and not stale_but_harmless):
            message = (
                f"The consumer group member has a member epoch ({hb.member_epoch}) other than the one known "
                f"by the group coordinator ({member.epoch}). The member must abandon all its partitions "
                "and rejoin."
            )
            return _fail(ErrorCode.fenced_member_epoch, message, hb)
        return member, False

    async def _leave(self, hb: Heartbeat) -> HeartbeatAnswer:
        group = await self.ownership.group(hb.group_id)
        if not isinstance(group, ConsumerGroup):
            return _fail(ErrorCode.group_id_not_found, f"Consumer group {hb.group_id} not found.", hb)
        async with group.lock:
            refused = _check_static(group, hb)
            if refused is not None:
                return refused
            member = group.members.get(hb.member_id)  # for a static member, its holder (checked above)
            if member is None:
                message = f"Member {hb.member_id} is not a member of group {hb.group_id}."
                return _fail(ErrorCode.unknown_member_id, message, hb)
            with self._saved_or_forgotten(group):
                if hb.member_epoch == STATIC_LEAVE_EPOCH:
                    # It keeps its partitions (no rebalance) until it rejoins or its session ends.
                    member.epoch, member.state, member.revoking = STATIC_LEAVE_EPOCH, MemberState.STABLE, {}
                    member.revoke_deadline = None
                    log.info(
                        "consumer group %s: static member %s steps out", group.group_id, member.instance_id
                    )
                else:
                    self._drop(group, [member], "left")
                await self.ownership.save_consumer(group)
        return HeartbeatAnswer(ErrorCode.none, member_id=hb.member_id, member_epoch=hb.member_epoch)

    def _drop(self, group: ConsumerGroup, members: list[ConsumerMember], why: str) -> None:
        for m in members:
            group.remove(m.member_id)
            log.info("consumer group %s: member %s %s", group.group_id, m.member_id, why)
        group.group_epoch += 1
        group.compute_target()

    async def expire(self, group: ConsumerGroup, redis_back_at: float = 0.0) -> None:
        """Removes members whose session lapsed, or that did not revoke within their rebalance timeout.
        Both count at the earliest from redis_back_at, when this broker reached Redis again after
        trouble (members could not get through before). The caller holds the group's lock."""
        now = time.monotonic()
        lapsed = [
            m
            for m in group.members.values()
            if now > max(m.deadline, redis_back_at + m.session_ms / 1000)
            or (
                m.revoke_deadline is not None
                and now > max(m.revoke_deadline, redis_back_at + m.rebalance_ms / 1000)
            )
        ]
        if lapsed:
            with self._saved_or_forgotten(group):
                self._drop(group, lapsed, "expired")
                await self.ownership.save_consumer(group)

    # -- offsets ----------------------------------------------------------------------------------
    @staticmethod
    def check_commit(group: ConsumerGroup, member_epoch: int, member_id: str, version: int) -> ErrorCode:
        if member_epoch < 0 and not group.members:
            return ErrorCode.none  # the admin client, or a consumer without group management
        member = group.members.get(member_id)
        if member is None:
            return ErrorCode.unknown_member_id
        if version < 9:
            return ErrorCode.unsupported_version  # members of consumer groups commit with v9+
        if member_epoch != member.epoch:
            return ErrorCode.stale_member_epoch
        return ErrorCode.none

    @staticmethod
    def check_fetch(group: ConsumerGroup, member_id: str | None, member_epoch: int) -> ErrorCode:
        if member_id is None and member_epoch < 0:
            return ErrorCode.none
        member = group.members.get(member_id or "")
        if member is None:
            return ErrorCode.unknown_member_id
        if member_epoch != member.epoch:
            return ErrorCode.stale_member_epoch
        return ErrorCode.none


def _update_member(member: ConsumerMember, hb: Heartbeat, timeouts: MemberTimeouts) -> bool:
    """Applies what the heartbeat changed; True when that changes the assignment (a new group epoch)."""
    bump = False
    if hb.instance_id is not None:
        member.instance_id = hb.instance_id
    if hb.rack_id is not None:
        member.rack_id = hb.rack_id
    if hb.rebalance_ms != -1:
        member.rebalance_ms = hb.rebalance_ms
    if hb.subscribed is not None and tuple(sorted(set(hb.subscribed))) != member.subscribed:
        member.subscribed = tuple(sorted(set(hb.subscribed)))
        bump = True
    if hb.regex is not None and (hb.regex or None) != member.regex:
        member.regex = hb.regex or None
        bump = True
    if hb.assignor is not None and hb.assignor != member.assignor:
        member.assignor = hb.assignor
        bump = True
    member.client_id, member.client_host = hb.client_id, hb.client_host
    member.session_ms = timeouts.session_ms
    return bump


async def _refresh_topics(group: ConsumerGroup, topics: TopicSource) -> bool:
    """Brings the subscription metadata up to date: topics created, grown, deleted or matched by a
    regex since. True when it changed (a new group epoch)."""
    changed = False
    now = time.monotonic()
    wanted = {m.regex for m in group.members.values() if m.regex}
    if wanted and (now - group.regexes_checked > REGEX_REFRESH_SECONDS or not wanted <= set(group.regexes)):
        names = await topics.names()
        resolved = {r: sorted(n for n in names if re.fullmatch(r, n)) for r in sorted(wanted)}
        group.regexes_checked = now
        if resolved != group.regexes:
            group.regexes = resolved
            changed = True
    elif not wanted and group.regexes:
        group.regexes = {}
    fresh: dict[str, TopicInfo] = {}
    for name in sorted(group.subscribed_topics()):
        topic = await topics.topic(name)
        if topic is not None:
            fresh[name] = TopicInfo(str(topic.id), topic.partitions)
    if fresh != group.topics:
        group.topics = fresh
        changed = True
    return changed


def _track_revocation(member: ConsumerMember) -> None:
    """A member asked to revoke has its rebalance timeout to do so, or it is removed."""
    if member.state == MemberState.UNREVOKED:
        if member.revoke_deadline is None:
            member.revoke_deadline = time.monotonic() + member.rebalance_ms / 1000
    else:
        member.revoke_deadline = None
