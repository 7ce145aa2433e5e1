"""The broker's group coordinator (`ctx.groups`): the one object the group handlers talk to.

It composes the three parts and routes each request to the right one:
- GroupOwnership (ownership.py): which groups this broker coordinates, loading them from Redis
  and fenced saves;
- ClassicCoordinator (classic/coordinator.py): JoinGroup, SyncGroup, Heartbeat, LeaveGroup;
- ConsumerGroupCoordinator (consumer/coordinator.py): KIP-848 ConsumerGroupHeartbeat;
- ShareGroupCoordinator (share/coordinator.py): KIP-932 ShareGroupHeartbeat;
- StreamsGroupCoordinator (streams/coordinator.py): KIP-1071 StreamsGroupHeartbeat.
Offset checks are the group's own (the classic coordinator's, or an epoch-based group's); session
expiry is the classic coordinator's or modern/coordinator.py's, shared by both epoch-based kinds.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from typing import Protocol

from kio.schema.errors import ErrorCode

from ...storage.cluster import BrokerInfo
from ...storage.groups.commits import Owner
from ...storage.store import Store
from .classic.coordinator import ClassicCoordinator
from .classic.model import GroupSettings, JoinRequest, JoinResult, SyncResult
from .consumer.coordinator import ConsumerGroupCoordinator
from .modern.coordinator import expire
from .modern.group import EpochGroup
from .ownership import AnyGroup, GroupOwnership, NotCoordinator
from .share.coordinator import ShareGroupCoordinator
from .streams.coordinator import StreamsGroupCoordinator

__all__ = ["GroupCoordinator", "GroupSettings", "JoinRequest", "NotCoordinator"]


class StorageHealth(Protocol):
    """What the groups read of their broker's reach to Redis (the broker's health.py keeps it): no
    member's session lapses while the broker itself is in trouble, and sessions count from its return."""

    back_at: float

    def in_trouble(self, now: float | None = None) -> bool: ...


class _NeverInTrouble:
    """The health of a coordinator whose broker reports none (in-process tests)."""

    back_at = 0.0

    def in_trouble(self, now: float | None = None) -> bool:
        return False


class GroupCoordinator:
    def __init__(
        self,
        store: Store,
        me: BrokerInfo,
        live_brokers: Callable[[], Awaitable[list[BrokerInfo]]],
        settings: GroupSettings,
        health: StorageHealth | None = None,
    ) -> None:
        self.ownership = GroupOwnership(store, me, live_brokers)
        self.classic = ClassicCoordinator(self.ownership, settings)
        self.consumer = ConsumerGroupCoordinator(self.ownership)
        self.share = ShareGroupCoordinator(self.ownership)
        self.streams = StreamsGroupCoordinator(self.ownership)
        self.redis_health: StorageHealth = health or _NeverInTrouble()

    # -- which groups, where ----------------------------------------------------------------------
    async def coordinator_for(self, group_id: str) -> BrokerInfo:
        """The live broker that coordinates the group (FindCoordinator)."""
        return await self.ownership.coordinator_for(group_id)

    async def find(self, group_id: str) -> AnyGroup | None:
        """The group if it exists, loaded; None if there is no such group. Raises NotCoordinator when
        it exists and another broker coordinates it."""
        return await self.ownership.find(group_id)

    async def owner(self, group_id: str, received_at: float | None = None) -> Owner:
        """This broker and the owner epoch that fences its writes of the group. Raises NotCoordinator,
        also for a request read (`received_at`) before this broker last let the group go."""
        return await self.ownership.owner(group_id, received_at)

    async def group(self, group_id: str) -> AnyGroup:
        """The group, claimed in Redis on first use (a new id starts as an empty classic group).
        Raises NotCoordinator when another broker coordinates it."""
        return await self.ownership.group(group_id)

    def loaded(self, group_id: str) -> AnyGroup | None:
        """The group if this broker holds it in memory now (no Redis round trip)."""
        return self.ownership.loaded(group_id)

    def unload(self, group_id: str) -> None:
        """Drops the group from memory (after it was deleted in Redis)."""
        self.ownership.unload(group_id)

    # -- the classic protocol ---------------------------------------------------------------------
    async def join(self, req: JoinRequest) -> JoinResult:
        return await self.classic.join(req)

    async def sync(
        self,
        group_id: str,
        generation: int,
        member_id: str,
        instance_id: str | None,
        assignments: dict[str, bytes],
    ) -> SyncResult:
        return await self.classic.sync(group_id, generation, member_id, instance_id, assignments)

    async def heartbeat(
        self, group_id: str, generation: int, member_id: str, instance_id: str | None
    ) -> ErrorCode:
        return await self.classic.heartbeat(group_id, generation, member_id, instance_id)

    async def leave(self, group_id: str, members: list[tuple[str, str | None]]) -> list[ErrorCode]:
        return await self.classic.leave(group_id, members)

    # -- offsets ----------------------------------------------------------------------------------
    async def check_commit(
        self,
        group_id: str,
        generation: int,
        member_id: str,
        instance_id: str | None,
        version: int = 9,
        received_at: float | None = None,
    ) -> ErrorCode:
        """Whether an OffsetCommit may store offsets (generation is the member epoch in a consumer group).
        Raises NotCoordinator, also for a commit read (`received_at`) before this broker last let the
        group go: another coordinator may have stored newer offsets since."""
        group = await self.ownership.group(group_id, received_at)
        if isinstance(group, EpochGroup):
            return group.check_commit(generation, member_id, version)
        return await self.classic.check_commit(group, generation, member_id, instance_id)

    async def check_fetch(self, group_id: str, member_id: str | None, member_epoch: int) -> ErrorCode:
        """OffsetFetch v9+ from a member of a consumer group must carry its current epoch."""
        if member_id is None and member_epoch < 0:
            return ErrorCode.none
        group = await self.ownership.group(group_id)
        if isinstance(group, EpochGroup):
            return group.check_fetch(member_id, member_epoch)
        return ErrorCode.none

    # -- upkeep -----------------------------------------------------------------------------------
    async def expire_sessions(self) -> None:
        """Removes members whose session lapsed (members waiting in a join are alive). Not while this
        broker cannot reach Redis: members' heartbeats fail then for its trouble, not theirs."""
        health = self.redis_health
        if health.in_trouble() or self.ownership.lapsed():
            return  # its own trouble, not the members': the groups are let go and reloaded afresh
        for group in self.ownership.held():
            if not isinstance(group, EpochGroup):
                await self.classic.expire(group, health.back_at)
                continue
            async with group.lock:
                if self.ownership.holds(group):
                    with contextlib.suppress(NotCoordinator):
                        await expire(self.ownership, group, health.back_at)

    async def check_ownership(self) -> None:
        """Unloads groups that now hash to another broker (the live broker set changed)."""
        await self.ownership.check_ownership()

    def registered(self, started: float, lease_seconds: float) -> None:
        """The broker renewed its registration (a round trip that started at `started`, time.monotonic()),
        which lasts lease_seconds; after a lapse every group is let go (ownership.py)."""
        self.ownership.registered(started, lease_seconds)

    def shutdown(self) -> None:
        """Hands every group back; waiting requests are told NOT_COORDINATOR."""
        self.ownership.shutdown()
