"""The classic protocol's coordinator: runs group.py's transitions and does their I/O.

Each request takes the group's lock, runs one transition, and carries out the effects it returns in
order: fenced saves to Redis, answers to JoinGroup and SyncGroup requests that wait (as futures
here, by member), and the rebalance timer. A request that must wait awaits its future after the lock
is released. Groups are loaded, saved and dropped through the GroupOwnership shared with the KIP-848
coordinator; a broker that takes a group over loads it and asks its members to rejoin.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from typing import TypeVar

from kio.schema.errors import ErrorCode

from ..ownership import AnyGroup, GroupOwnership, NotCoordinator
from ..share.group import ShareGroup
from . import group as rules
from .group import (
    Answer,
    ArmTimer,
    Effect,
    Group,
    GroupSettings,
    JoinRequest,
    JoinResult,
    Save,
    SyncResult,
    Wait,
)

T = TypeVar("T")


@dataclass
class _Waiting:
    """The I/O half of one held classic group: requests that wait on it, and its rebalance timer."""

    joins: dict[str, asyncio.Future[JoinResult]] = field(default_factory=dict)
    syncs: dict[str, asyncio.Future[SyncResult]] = field(default_factory=dict)
    timer: asyncio.TimerHandle | None = None


class ClassicCoordinator:
    """JoinGroup, SyncGroup, Heartbeat, LeaveGroup, offset commit checks and session expiry."""

    def __init__(self, ownership: GroupOwnership, settings: GroupSettings) -> None:
        self.ownership = ownership
        self.settings = settings
        self._waiting: dict[str, _Waiting] = {}
        self._timeouts: set[asyncio.Task[None]] = set()  # referenced while they run
        # Told of loads (one loaded mid-rebalance restarts it) and drops (its waiting requests are told).
        ownership.watchers.append(self)

    # -- requests ---------------------------------------------------------------------------------
    async def join(self, req: JoinRequest) -> JoinResult:
        error = rules.check_join(req, self.settings)
        if error is not None:
            return JoinResult(error, req.member_id)
        group = await self._classic_for_join(req.group_id)
        if group is None:
            return JoinResult(ErrorCode.inconsistent_group_protocol, req.member_id)  # consumer or share
        async with self._locked(group):
            new_id = rules.new_member_id(req.client_id)
            step = rules.join(group, req, new_id, time.monotonic(), self.settings)
            await self._apply(group, step.effects)
            if not isinstance(step.reply, Wait):
                return step.reply
            future = _park(self._waiting_for(group).joins, step.reply)
        return await future

    async def _classic_for_join(self, group_id: str) -> Group | None:
        """The classic group to join; an empty consumer group becomes one, a busy one refuses (None), and
        so does a share group, empty or not (Kafka: INCONSISTENT_GROUP_PROTOCOL)."""
        group = await self.ownership.group(group_id)
        if isinstance(group, Group):
            return group
        if isinstance(group, ShareGroup):
            return None
        async with group.lock:
            if group.members:
                return None
            self.ownership.replace(group, Group(group_id, owner_epoch=group.owner_epoch))
        return await self._classic_for_join(group_id)

    async def sync(
        self,
        group_id: str,
        generation: int,
        member_id: str,
        instance_id: str | None,
        assignments: dict[str, bytes],
    ) -> SyncResult:
        group = await self.ownership.group(group_id)
        if not isinstance(group, Group):
            return SyncResult(ErrorCode.unknown_member_id)  # consumer groups have no classic members
        async with self._locked(group):
            step = rules.sync(group, member_id, instance_id, generation, assignments, time.monotonic())
            await self._apply(group, step.effects)
            if not isinstance(step.reply, Wait):
                return step.reply
            future = _park(self._waiting_for(group).syncs, step.reply)
        return await future

    async def heartbeat(
        self, group_id: str, generation: int, member_id: str, instance_id: str | None
    ) -> ErrorCode:
        group = await self.ownership.group(group_id)
        if not isinstance(group, Group):
            return ErrorCode.unknown_member_id
        async with self._locked(group):
            return rules.heartbeat(group, member_id, instance_id, generation, time.monotonic())

    async def leave(self, group_id: str, members: list[tuple[str, str | None]]) -> list[ErrorCode]:
        group = await self.ownership.group(group_id)
        if not isinstance(group, Group):
            return [ErrorCode.unknown_member_id for _ in members]
        async with self._locked(group):
            step = rules.leave(group, members, time.monotonic(), self.settings)
            await self._apply(group, step.effects)
            assert not isinstance(step.reply, Wait)  # a leave never waits
            return step.reply

    async def check_commit(
        self, group: Group, generation: int, member_id: str, instance_id: str | None
    ) -> ErrorCode:
        async with self._locked(group):
            return rules.check_commit(group, member_id, instance_id, generation, time.monotonic())

    async def expire(self, group: Group, sessions_from: float) -> None:
        """Removes members whose session lapsed; sessions count from `sessions_from` at the earliest."""
        async with group.lock:
            if not self.ownership.holds(group):
                return
            effects = rules.expire(group, time.monotonic(), sessions_from, self.settings)
            with contextlib.suppress(NotCoordinator):
                await self._apply(group, effects)

    # -- carrying out a transition ----------------------------------------------------------------
    @contextlib.asynccontextmanager
    async def _locked(self, group: Group) -> AsyncIterator[None]:
        async with group.lock:
            if not self.ownership.holds(group):
                # Dropped or replaced while this request waited for the lock: another coordinator's.
                raise NotCoordinator(group.group_id)
            yield

    async def _apply(self, group: Group, effects: Iterable[Effect]) -> None:
        for effect in effects:
            if isinstance(effect, Save):
                await self.ownership.save_classic(group)
            else:
                self._apply_now(group, effect)

    def _apply_now(self, group: Group, effect: Answer | ArmTimer) -> None:
        waiting = self._waiting_for(group)
        if isinstance(effect, ArmTimer):
            if waiting.timer is not None:
                waiting.timer.cancel()
            loop = asyncio.get_running_loop()
            waiting.timer = loop.call_later(effect.seconds, self._start_timeout, group)
        elif isinstance(effect.result, JoinResult):
            _resolve(waiting.joins.pop(effect.member_id, None), effect.result)
        else:
            _resolve(waiting.syncs.pop(effect.member_id, None), effect.result)

    def _waiting_for(self, group: Group) -> _Waiting:
        if not self.ownership.holds(group):
            raise NotCoordinator(group.group_id)  # dropped while a save was under way
        return self._waiting.setdefault(group.group_id, _Waiting())

    def _start_timeout(self, group: Group) -> None:
        task = asyncio.get_running_loop().create_task(self._rebalance_timeout(group))
        self._timeouts.add(task)
        task.add_done_callback(self._timeouts.discard)

    async def _rebalance_timeout(self, group: Group) -> None:
        async with group.lock:
            if not self.ownership.holds(group):
                return
            waiting = self._waiting_for(group)
            if waiting.timer is not None:
                waiting.timer.cancel()  # one armed since this one fired is for the rebalance ending now
                waiting.timer = None
            with contextlib.suppress(NotCoordinator):  # its waiting joins were told already
                await self._apply(group, rules.rebalance_timeout(group, time.monotonic()))

    # -- GroupWatcher -----------------------------------------------------------------------------
    def loaded(self, group: AnyGroup) -> None:
        if isinstance(group, Group):
            for effect in rules.restart(group, time.monotonic(), self.settings):
                self._apply_now(group, effect)

    def unloaded(self, group: AnyGroup) -> None:
        """Waiting requests are told NOT_COORDINATOR, to find the group's coordinator again."""
        if not isinstance(group, Group):
            return
        waiting = self._waiting.pop(group.group_id, None)
        if waiting is None:
            return
        if waiting.timer is not None:
            waiting.timer.cancel()
        for member_id, join in waiting.joins.items():
            _resolve(join, JoinResult(ErrorCode.not_coordinator, member_id))
        for sync in waiting.syncs.values():
            _resolve(sync, SyncResult(ErrorCode.not_coordinator))


def _park(waiting: dict[str, asyncio.Future[T]], wait: Wait) -> asyncio.Future[T]:
    """The future that a waiting request awaits, answered by a later Answer to its member."""
    future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
    waiting[wait.member_id] = future
    return future


def _resolve(future: asyncio.Future[T] | None, value: T) -> None:
    if future is not None and not future.done():
        future.set_result(value)
