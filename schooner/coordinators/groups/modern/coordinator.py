"""The coordination that KIP-848 consumer groups and KIP-932 share groups share: the heartbeat's
skeleton, leaving, session expiry, and saves that leave nothing unsaved behind.

A heartbeat is checked (the kind's rules), then either leaves or, under the group's lock, finds or
creates its member, applies what changed, refreshes the subscribed topics' metadata, moves the group
epoch and the target when they changed, lets the member take one step toward its target (the kind's
reconciliation), renews its session and saves the changed fields, fenced by the owner epoch.
consumer/coordinator.py and share/coordinator.py fill in the steps that differ: which requests are
malformed, how a member is found (static members, fencing), and how it reconciles.
"""

from __future__ import annotations

import contextlib
import logging
import time
from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from kio.schema.errors import ErrorCode

from ....storage.topics.metadata import Topic
from ..ownership import GroupOwnership
from .group import JOIN_EPOCH, LEAVE_EPOCH, Assignment, EpochGroup, EpochMember, TopicInfo

log = logging.getLogger(__name__)


class TopicSource(Protocol):
    """Where the coordinator reads topic metadata (the broker's cached view)."""

    async def topic(self, name: str) -> Topic | None: ...

    async def names(self) -> list[str]: ...


@dataclass(frozen=True, slots=True)
class MemberTimeouts:
    session_ms: int
    heartbeat_ms: int


@dataclass(slots=True)
class HeartbeatAnswer:
    """The answer to a heartbeat of either kind; `assignment` is None when it has not changed."""

    error: ErrorCode
    message: str | None = None
    member_id: str | None = None
    member_epoch: int = LEAVE_EPOCH
    assignment: Assignment | None = None


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a group id is not a group of the kind one may describe or join."""

    error: ErrorCode
    message: str


class EpochHeartbeat(Protocol):
    """What every heartbeat carries. None means "unchanged since the last one"."""

    @property
    def group_id(self) -> str: ...
    @property
    def member_id(self) -> str: ...
    @property
    def member_epoch(self) -> int: ...
    @property
    def rack_id(self) -> str | None: ...
    @property
    def subscribed(self) -> tuple[str, ...] | None: ...
    @property
    def client_id(self) -> str: ...
    @property
    def client_host(self) -> str: ...


def fail(error: ErrorCode, message: str, hb: EpochHeartbeat) -> HeartbeatAnswer:
    return HeartbeatAnswer(error, message, hb.member_id or None, hb.member_epoch)


def unknown_member(hb: EpochHeartbeat) -> HeartbeatAnswer:
    message = f"Member {hb.member_id} is not a member of group {hb.group_id}."
    return fail(ErrorCode.unknown_member_id, message, hb)


def fenced(group: EpochGroup[Any], member: EpochMember, hb: EpochHeartbeat) -> HeartbeatAnswer:
    """The member's epoch is not one the group can accept: it must start over (Kafka's words)."""
    message = (
        f"The {group.KIND} group member has a member epoch ({hb.member_epoch}) other than the one known "
        f"by the group coordinator ({member.epoch}). The member must abandon all its partitions "
        "and rejoin."
    )
    return fail(ErrorCode.fenced_member_epoch, message, hb)


M = TypeVar("M", bound=EpochMember)
G = TypeVar("G", bound=EpochGroup[Any])
HB = TypeVar("HB", bound=EpochHeartbeat)


@contextlib.contextmanager
def saved_or_forgotten(ownership: GroupOwnership, group: EpochGroup[Any]) -> Iterator[None]:
    """A request that fails after changing the group in memory (Redis down mid-way) must not leave
    unsaved changes behind: the group is forgotten and reloaded from its last saved state."""
    try:
        yield
    except BaseException:
        ownership.forget(group)
        raise


def drop(group: EpochGroup[M], members: list[M], why: str) -> None:
    group.remove([m.member_id for m in members])
    for m in members:
        log.info("%s group %s: member %s %s", group.KIND, group.group_id, m.member_id, why)


async def expire(ownership: GroupOwnership, group: EpochGroup[Any], redis_back_at: float = 0.0) -> None:
    """Removes the members that lapsed (EpochMember.lapsed: the session, and a kind's own deadlines),
    counted at the earliest from redis_back_at. The caller holds the group's lock."""
    now = time.monotonic()
    lapsed = [m for m in group.members.values() if m.lapsed(now, redis_back_at)]
    if lapsed:
        with saved_or_forgotten(ownership, group):
            drop(group, lapsed, "expired")
            await ownership.save_changes(group)


class EpochCoordinator(ABC, Generic[G, M, HB]):
    """Runs one kind's heartbeats (G groups of M members, HB requests) on the GroupOwnership shared
    by every kind. The abstract methods are the kind's; the rest is the same for both."""

    LEAVE_EPOCHS: ClassVar[tuple[int, ...]] = (LEAVE_EPOCH,)  # the member epochs that leave

    def __init__(self, ownership: GroupOwnership, max_size: int) -> None:
        self.ownership = ownership
        self.max_size = max_size

    # -- the kind's steps -------------------------------------------------------------------------
    @abstractmethod
    def _refused(self, hb: HB) -> HeartbeatAnswer | None:
        """Why the request is refused before its group is looked at (malformed, unsupported), or None."""

    @abstractmethod
    async def _group(self, group_id: str, create: bool) -> G | Refusal:
        """The group a heartbeat is for (an unused id becomes one when `create`), or why not."""

    @abstractmethod
    def _member_for(self, group: G, hb: HB) -> tuple[M, bool] | HeartbeatAnswer:
        """The member the heartbeat is from, and whether it joined just now; or why it is refused."""

    @abstractmethod
    def _reconcile(self, group: G, member: M, hb: HB) -> None:
        """Moves the member toward its target."""

    def _joined(self, group: G, hb: HB, member: M) -> tuple[M, bool] | HeartbeatAnswer:
        """A new member joins, unless the group already has max_size members."""
        if len(group.members) >= self.max_size:
            message = f"The {group.KIND} group has reached its maximum capacity of {self.max_size} members."
            return fail(ErrorCode.group_max_size_reached, message, hb)
        group.members[member.member_id] = member
        log.info("%s group %s: member %s joins", group.KIND, group.group_id, member.member_id)
        return member, True

    def _prepared(self, hb: HB) -> HB:
        """The heartbeat as the group sees it (a kind may fill in what the client left out)."""
        return hb

    def _full(self, hb: HB) -> bool:
        """Whether the answer carries the assignment even when unchanged (the member (re)joins)."""
        return hb.member_epoch == JOIN_EPOCH

    # -- the heartbeat ----------------------------------------------------------------------------
    async def heartbeat(self, hb: HB, topics: TopicSource, timeouts: MemberTimeouts) -> HeartbeatAnswer:
        refused = self._refused(hb)
        if refused is not None:
            return refused
        if hb.member_epoch in self.LEAVE_EPOCHS:
            return await self._leave(hb)
        hb = self._prepared(hb)
        group = await self._group(hb.group_id, create=hb.member_epoch == JOIN_EPOCH)
        if isinstance(group, Refusal):
            return fail(group.error, group.message, hb)
        async with group.lock:
            with saved_or_forgotten(self.ownership, group):
                return await self._heartbeat_locked(group, hb, topics, timeouts)

    async def _heartbeat_locked(
        self, group: G, hb: HB, topics: TopicSource, timeouts: MemberTimeouts
    ) -> HeartbeatAnswer:
        found = self._member_for(group, hb)
        if isinstance(found, HeartbeatAnswer):
            return found
        member, bump = found
        bump |= self._update_member(member, hb, timeouts)
        bump |= await self._refresh_topics(group, topics)
        if bump:
            group.group_epoch += 1
            log.info("%s group %s: epoch %d", group.KIND, group.group_id, group.group_epoch)
        if group.group_epoch > group.assignment_epoch:
            group.compute_target()
        before = member.assigned
        self._reconcile(group, member, hb)
        member.deadline = time.monotonic() + timeouts.session_ms / 1000
        await self.ownership.save_changes(group)
        # The assignment goes out when it changed, or when the member needs all of it.
        changed = member.assigned != before
        return HeartbeatAnswer(
            ErrorCode.none,
            member_id=member.member_id,
            member_epoch=member.epoch,
            assignment=member.assigned if self._full(hb) or changed else None,
        )

    def _update_member(self, member: M, hb: HB, timeouts: MemberTimeouts) -> bool:
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

    async def _refresh_topics(self, group: G, topics: TopicSource) -> bool:
        """Brings the subscription metadata up to date: topics created, grown or deleted since. True
        when it changed (a new group epoch)."""
        fresh: dict[str, TopicInfo] = {}
        for name in sorted(group.subscribed_topics()):
            topic = await topics.topic(name)
            if topic is not None:
                fresh[name] = TopicInfo(str(topic.id), topic.partitions)
        if fresh != group.topics:
            group.topics = fresh
            return True
        return False

    # -- leaving ----------------------------------------------------------------------------------
    async def _leave(self, hb: HB) -> HeartbeatAnswer:
        group = await self._group_to_leave(hb.group_id)
        if isinstance(group, Refusal):
            return fail(group.error, group.message, hb)
        async with group.lock:
            member = self._leaving_member(group, hb)
            if isinstance(member, HeartbeatAnswer):
                return member
            with saved_or_forgotten(self.ownership, group):
                self._step_out(group, member, hb)
                await self.ownership.save_changes(group)
        return HeartbeatAnswer(ErrorCode.none, member_id=hb.member_id, member_epoch=hb.member_epoch)

    async def _group_to_leave(self, group_id: str) -> G | Refusal:
        return await self._group(group_id, create=False)

    def _leaving_member(self, group: G, hb: HB) -> M | HeartbeatAnswer:
        member: M | None = group.members.get(hb.member_id)
        return unknown_member(hb) if member is None else member

    def _step_out(self, group: G, member: M, hb: HB) -> None:
        drop(group, [member], "left")
