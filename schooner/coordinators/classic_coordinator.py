"""Group coordination for the classic protocol, with every group's state saved in Redis.

Join and sync requests wait in memory; all else (members, generation, assignments, offsets) is in
Redis, and a broker that takes a group over loads it and asks the members to rejoin. Ownership and
fenced saves are in the GroupOwnership it shares with consumer_coordinator.py (KIP-848 groups).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from typing import Any

from kio.schema.errors import ErrorCode

from .classic_group import Group, GroupSettings, GroupState, JoinRequest, JoinResult, Member, SyncResult
from .consumer_group import ConsumerGroup
from .group_ownership import AnyGroup, GroupOwnership, NotCoordinator

log = logging.getLogger(__name__)


class ClassicCoordinator:
    """The classic protocol's operations (join, sync, heartbeat, leave) and offset checks."""

    def __init__(self, ownership: GroupOwnership, settings: GroupSettings) -> None:
        self.ownership = ownership
        self.settings = settings
        # Told of loads (one loaded mid-rebalance restarts it) and drops (its waiting requests are told).
        ownership.watchers.append(self)

    # -- JoinGroup ----------------------------------------------------------------------------------
    async def join(self, req: JoinRequest) -> JoinResult:
        if not req.group_id:
            return JoinResult(ErrorCode.invalid_group_id, req.member_id)
        if not self.settings.min_session_ms <= req.session_ms <= self.settings.max_session_ms:
            return JoinResult(ErrorCode.invalid_session_timeout, req.member_id)
        group = await self._classic_for_join(req.group_id)
        if group is None:
            return JoinResult(ErrorCode.inconsistent_group_protocol, req.member_id)  # a consumer group
        async with group.lock:
            outcome = await self._join_locked(group, req)
        return outcome if isinstance(outcome, JoinResult) else await outcome

    async def _classic_for_join(self, group_id: str) -> Group | None:
        """The classic group to join; an empty consumer group becomes one, a busy one refuses (None)."""
        group = await self.ownership.group(group_id)
        if isinstance(group, Group):
            return group
        async with group.lock:
            if group.members:
                return None
            self.ownership.replace(group, Group(group_id, owner_epoch=group.owner_epoch))
        return await self._classic_for_join(group_id)

    async def _classic(self, group_id: str) -> Group | None:
        """The group when it is a classic one (None for a consumer group). Raises NotCoordinator."""
        group = await self.ownership.group(group_id)
        return group if isinstance(group, Group) else None

    async def _join_locked(self, group: Group, req: JoinRequest) -> JoinResult | asyncio.Future[JoinResult]:
        """A result now, or a future that the rebalance resolves (awaited outside the group lock)."""
        member_id, instance_id = req.member_id, req.instance_id
        if not group.supports(req.protocol_type, req.protocols):
            return JoinResult(ErrorCode.inconsistent_group_protocol, member_id)
        new_member = not member_id
        if new_member:
            member_id = f"{req.client_id or 'member'}-{uuid.uuid4()}"
            if instance_id is not None:
                return await self._join_static(group, req, member_id, instance_id)
            if req.require_known_member:
                # KIP-394: hand out the id first; the member joins again with it.
                group.pending[member_id] = time.monotonic()
                return JoinResult(ErrorCode.member_id_required, member_id)
        elif instance_id is not None:
            owner = group.instance_owner(instance_id)
            if owner is not None and owner != member_id:
                return JoinResult(ErrorCode.fenced_instance_id, member_id)
        known = member_id in group.members or member_id in group.pending
        if not known and not new_member and (instance_id is None or req.require_known_member):
            return JoinResult(ErrorCode.unknown_member_id, member_id)
        group.pending.pop(member_id, None)
        member = group.members.get(member_id)
        if member is None:
            member = group.members[member_id] = _member(member_id, req)
            changed = True
        else:
            changed = member.protocols != req.protocols
            member.protocols, member.session_ms, member.rebalance_ms = (
                req.protocols, req.session_ms, req.rebalance_ms
            )  # fmt: skip
        member.last_seen = time.monotonic()
        if (
            not changed
            and member_id != group.leader
            and group.state
            in (
                GroupState.STABLE,
                GroupState.COMPLETING_REBALANCE,
            )
        ):
            # A follower rejoining with the same subscription: nothing changes.
            return self._join_result(group, member)
        return self._await_rebalance(group, member, req.protocol_type)

    def _await_rebalance(
        self, group: Group, member: Member, protocol_type: str
    ) -> asyncio.Future[JoinResult]:
        group.protocol_type = protocol_type
        future: asyncio.Future[JoinResult] = asyncio.get_running_loop().create_future()
        _resolve(member.join, JoinResult(ErrorCode.rebalance_in_progress, member.member_id))
        member.join = future
        if group.state != GroupState.PREPARING_REBALANCE:
            self._prepare_rebalance(group)
        self._maybe_complete_join(group)
        return future

    async def _join_static(
        self, group: Group, req: JoinRequest, member_id: str, instance_id: str
    ) -> JoinResult | asyncio.Future[JoinResult]:
        """KIP-345: a known instance id takes over its old member without a rebalance when stable."""
        old_id = group.instance_owner(instance_id)
        member = _member(member_id, req)
        if old_id is not None:
            old = group.members.pop(old_id)
            member.assignment = old.assignment
            _resolve(old.join, JoinResult(ErrorCode.fenced_instance_id, old_id))
            _resolve(old.sync, SyncResult(ErrorCode.fenced_instance_id))
            if group.leader == old_id:
                group.leader = member_id
            group.members[member_id] = member
            if group.state == GroupState.STABLE and old.protocols == req.protocols:
                await self.ownership.save_classic(group)
                result = self._join_result(group, member)
                result.skip_assignment = group.leader == member_id
                return result
        group.members[member_id] = member
        return self._await_rebalance(group, member, req.protocol_type)

    def _join_result(self, group: Group, member: Member) -> JoinResult:
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

    def _prepare_rebalance(self, group: Group) -> None:
        for m in group.members.values():
            _resolve(m.sync, SyncResult(ErrorCode.rebalance_in_progress))
            m.sync = None
        was_empty = group.state == GroupState.EMPTY
        group.state = GroupState.PREPARING_REBALANCE
        log.info("group %s: rebalance after generation %d", group.group_id, group.generation)
        timeout_ms = max([m.rebalance_ms for m in group.members.values()] or [0])
        delay_ms = min(self.settings.initial_rebalance_delay_ms, timeout_ms) if was_empty else timeout_ms
        group.rebalance_deadline = time.monotonic() + timeout_ms / 1000
        self._set_timer(group, delay_ms / 1000)

    def _set_timer(self, group: Group, seconds: float) -> None:
        if group.rebalance_timer:
            group.rebalance_timer.cancel()
        loop = asyncio.get_running_loop()
        group.rebalance_timer = loop.call_later(
            seconds, lambda: loop.create_task(self._on_rebalance_timer(group.group_id))
        )

    async def _on_rebalance_timer(self, group_id: str) -> None:
        group = self.ownership.loaded(group_id)
        if not isinstance(group, Group) or group.state != GroupState.PREPARING_REBALANCE:
            return
        async with group.lock:
            group.rebalance_timer = None
            await self._complete_join(group)

    def _maybe_complete_join(self, group: Group) -> None:
        # An empty group that just started waits out the initial delay (to gather its first members).
        if group.all_rejoined() and group.rebalance_timer is not None:
            remaining = group.rebalance_timer.when() - asyncio.get_running_loop().time()
            if group.generation > 0 or remaining <= 0 or self.settings.initial_rebalance_delay_ms == 0:
                self._set_timer(group, 0)

    async def _complete_join(self, group: Group) -> None:
        for member_id in [i for i, m in group.members.items() if m.join is None]:
            del group.members[member_id]  # did not rejoin within the rebalance timeout
        group.pending.clear()
        group.generation += 1
        if not group.members:
            group.state, group.protocol, group.leader = GroupState.EMPTY, None, None
            await self.ownership.save_classic(group)
            return
        group.protocol = group.select_protocol()
        if group.leader not in group.members:
            group.leader = next(iter(group.members))
        group.state = GroupState.COMPLETING_REBALANCE
        log.info(
            "group %s: generation %d with %d members, protocol %s",
            group.group_id, group.generation, len(group.members), group.protocol,
        )  # fmt: skip
        for m in group.members.values():
            m.assignment = b""
        await self.ownership.save_classic(group)
        for m in group.members.values():
            m.last_seen = time.monotonic()
            _resolve(m.join, self._join_result(group, m))
            m.join = None

    # -- SyncGroup ----------------------------------------------------------------------------------
    async def sync(
        self,
        group_id: str,
        generation: int,
        member_id: str,
        instance_id: str | None,
        assignments: dict[str, bytes],
    ) -> SyncResult:
        group = await self._classic(group_id)
        if group is None:
            return SyncResult(ErrorCode.unknown_member_id)  # consumer groups have no classic members
        async with group.lock:
            error = self._check_member(group, member_id, instance_id, generation)
            if error is not None:
                return SyncResult(error)
            member = group.members[member_id]
            member.last_seen = time.monotonic()
            if group.state == GroupState.PREPARING_REBALANCE:
                return SyncResult(ErrorCode.rebalance_in_progress)
            if group.state == GroupState.STABLE:
                return SyncResult(ErrorCode.none, group.protocol_type, group.protocol, member.assignment)
            future: asyncio.Future[SyncResult] = asyncio.get_running_loop().create_future()
            member.sync = future
            if member_id == group.leader:
                for m in group.members.values():
                    m.assignment = assignments.get(m.member_id, b"")
                group.state = GroupState.STABLE
                await self.ownership.save_classic(group)
                for m in group.members.values():
                    _resolve(
                        m.sync, SyncResult(ErrorCode.none, group.protocol_type, group.protocol, m.assignment)
                    )
                    m.sync = None
        return await future

    def _check_member(
        self, group: Group, member_id: str, instance_id: str | None, generation: int | None
    ) -> ErrorCode | None:
        if instance_id is not None:
            owner = group.instance_owner(instance_id)
            if owner is not None and owner != member_id:
                return ErrorCode.fenced_instance_id
        if member_id not in group.members:
            return ErrorCode.unknown_member_id
        if generation is not None and generation != group.generation:
            return ErrorCode.illegal_generation
        return None

    # -- Heartbeat and LeaveGroup -------------------------------------------------------------------
    async def heartbeat(
        self, group_id: str, generation: int, member_id: str, instance_id: str | None
    ) -> ErrorCode:
        group = await self._classic(group_id)
        if group is None:
            return ErrorCode.unknown_member_id
        async with group.lock:
            if group.state == GroupState.EMPTY:
                return ErrorCode.unknown_member_id
            error = self._check_member(group, member_id, instance_id, generation)
            if error is not None:
                return error
            group.members[member_id].last_seen = time.monotonic()
            if group.state == GroupState.PREPARING_REBALANCE:
                return ErrorCode.rebalance_in_progress
            return ErrorCode.none

    async def leave(self, group_id: str, members: list[tuple[str, str | None]]) -> list[ErrorCode]:
        group = await self._classic(group_id)
        if group is None:
            return [ErrorCode.unknown_member_id for _ in members]
        async with group.lock:
            errors = []
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
                _resolve(member.join, JoinResult(ErrorCode.unknown_member_id, member_id))
                _resolve(member.sync, SyncResult(ErrorCode.unknown_member_id))
                errors.append(ErrorCode.none)
                removed = True
            if removed:
                await self._after_removal(group)
            return errors

    async def _after_removal(self, group: Group) -> None:
        if group.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            if group.members:
                self._prepare_rebalance(group)
            else:
                group.generation += 1
                group.state, group.protocol, group.leader = GroupState.EMPTY, None, None
            await self.ownership.save_classic(group)
        elif group.state == GroupState.PREPARING_REBALANCE:
            await self.ownership.save_classic(group)
            self._maybe_complete_join(group)

    async def expire(self, group: Group, sessions_from: float) -> None:
        """Removes members whose session lapsed (members waiting in a join are alive); sessions count
        from `sessions_from` at the earliest (when this broker reached Redis again after trouble)."""
        now = time.monotonic()
        async with group.lock:
            if not self.ownership.holds(group):
                return
            lapsed = [
                m
                for m in group.members.values()
                if m.join is None and now - max(m.last_seen, sessions_from) > m.session_ms / 1000
            ]
            for pending_id, since in list(group.pending.items()):
                if now - since > self.settings.max_session_ms / 1000 or now - since > 60:
                    del group.pending[pending_id]
            if not lapsed:
                return
            for m in lapsed:
                log.info("group %s: member %s session expired", group.group_id, m.member_id)
                del group.members[m.member_id]
                _resolve(m.sync, SyncResult(ErrorCode.unknown_member_id))
            with contextlib.suppress(NotCoordinator):
                await self._after_removal(group)

    # -- offsets ------------------------------------------------------------------------------------
    async def check_commit(
        self, group: Group, generation: int, member_id: str, instance_id: str | None
    ) -> ErrorCode:
        async with group.lock:
            if generation < 0 and not member_id:
                # Offsets stored by a consumer that uses no group management (assign()).
                return ErrorCode.none if not group.members else ErrorCode.unknown_member_id
            error = self._check_member(group, member_id, instance_id, generation)
            if error is not None:
                return error
            if group.state == GroupState.COMPLETING_REBALANCE:
                return ErrorCode.rebalance_in_progress
            group.members[member_id].last_seen = time.monotonic()
            return ErrorCode.none

    # -- GroupWatcher -------------------------------------------------------------------------------
    def loaded(self, group: AnyGroup) -> None:
        if isinstance(group, Group) and group.state in (
            GroupState.PREPARING_REBALANCE,
            GroupState.COMPLETING_REBALANCE,
        ):
            # Joins that waited on the old coordinator are gone: members rejoin here.
            self._prepare_rebalance(group)

    def unloaded(self, group: AnyGroup) -> None:
        """Waiting requests are told NOT_COORDINATOR, to find the group's coordinator again."""
        if isinstance(group, ConsumerGroup):
            return
        if group.rebalance_timer:
            group.rebalance_timer.cancel()
        for m in group.members.values():
            _resolve(m.join, JoinResult(ErrorCode.not_coordinator, m.member_id))
            _resolve(m.sync, SyncResult(ErrorCode.not_coordinator))
            m.join = m.sync = None


def _member(member_id: str, req: JoinRequest) -> Member:
    return Member(
        member_id, req.instance_id, req.client_id, req.client_host, req.session_ms, req.rebalance_ms,
        req.protocol_type, req.protocols,
    )  # fmt: skip


def _resolve(future: asyncio.Future[Any] | None, value: Any) -> None:
    if future is not None and not future.done():
        future.set_result(value)
