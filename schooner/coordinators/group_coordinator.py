"""Group coordination for the classic protocol, with every group's state saved in Redis.

Join and sync requests wait in memory; all else (members, generation, assignments, offsets) is in
Redis, and a broker that takes a group over loads it and asks the members to rejoin. Ownership and
fenced saves are in group_ownership.py; KIP-848 consumer groups run in consumer_coordinator.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid

from kio.schema.errors import ErrorCode

from .classic_group import Group, GroupState, JoinResult, Member, SyncResult
from .consumer_group import ConsumerGroup
from .group_ownership import GroupOwnership, GroupSettings, NotCoordinator, _resolve

__all__ = ["GroupCoordinator", "GroupSettings", "NotCoordinator"]

log = logging.getLogger(__name__)


class GroupCoordinator(GroupOwnership):
    """The classic protocol's operations (join, sync, heartbeat, leave) and offset checks."""

    # -- JoinGroup ----------------------------------------------------------------------------------
    async def join(
        self,
        group_id: str,
        member_id: str,
        instance_id: str | None,
        client_id: str,
        client_host: str,
        session_ms: int,
        rebalance_ms: int,
        protocol_type: str,
        protocols: list[tuple[str, bytes]],
        require_known_member: bool,
    ) -> JoinResult:
        if not group_id:
            return JoinResult(ErrorCode.invalid_group_id, member_id)
        if not self.settings.min_session_ms <= session_ms <= self.settings.max_session_ms:
            return JoinResult(ErrorCode.invalid_session_timeout, member_id)
        group = await self._classic_for_join(group_id)
        if group is None:
            return JoinResult(ErrorCode.inconsistent_group_protocol, member_id)  # a consumer group
        async with group.lock:
            outcome = await self._join_locked(
                group, member_id, instance_id, client_id, client_host, session_ms, rebalance_ms,
                protocol_type, protocols, require_known_member,
            )  # fmt: skip
        return outcome if isinstance(outcome, JoinResult) else await outcome

    async def _classic_for_join(self, group_id: str) -> Group | None:
        """The classic group to join; an empty consumer group becomes one, a busy one refuses (None)."""
        group = await self.group(group_id)
        if isinstance(group, Group):
            return group
        async with group.lock:
            if group.members:
                return None
            self._replace(group, Group(group_id, owner_epoch=group.owner_epoch))
        return await self._classic_for_join(group_id)

    async def _join_locked(
        self,
        group: Group,
        member_id: str,
        instance_id: str | None,
        client_id: str,
        client_host: str,
        session_ms: int,
        rebalance_ms: int,
        protocol_type: str,
        protocols: list[tuple[str, bytes]],
        require_known_member: bool,
    ) -> JoinResult | asyncio.Future[JoinResult]:
        """A result now, or a future that the rebalance resolves (awaited outside the group lock)."""
        if not group.supports(protocol_type, protocols):
            return JoinResult(ErrorCode.inconsistent_group_protocol, member_id)
        new_member = not member_id
        if new_member:
            member_id = f"{client_id or 'member'}-{uuid.uuid4()}"
            if instance_id is not None:
                return await self._join_static(
                    group, member_id, instance_id, client_id, client_host, session_ms, rebalance_ms,
                    protocol_type, protocols,
                )  # fmt: skip
            if require_known_member:
                # KIP-394: hand out the id first; the member joins again with it.
                group.pending[member_id] = time.monotonic()
                return JoinResult(ErrorCode.member_id_required, member_id)
        elif instance_id is not None:
            owner = group.instance_owner(instance_id)
            if owner is not None and owner != member_id:
                return JoinResult(ErrorCode.fenced_instance_id, member_id)
        known = member_id in group.members or member_id in group.pending
        if not known and not new_member and (instance_id is None or require_known_member):
            return JoinResult(ErrorCode.unknown_member_id, member_id)
        group.pending.pop(member_id, None)
        member = group.members.get(member_id)
        if member is None:
            member = Member(
                member_id, instance_id, client_id, client_host, session_ms, rebalance_ms, protocol_type,
                protocols,
            )  # fmt: skip
            group.members[member_id] = member
            changed = True
        else:
            changed = member.protocols != protocols
            member.protocols, member.session_ms, member.rebalance_ms = protocols, session_ms, rebalance_ms
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
        return self._await_rebalance(group, member, protocol_type)

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
        self,
        group: Group,
        member_id: str,
        instance_id: str,
        client_id: str,
        client_host: str,
        session_ms: int,
        rebalance_ms: int,
        protocol_type: str,
        protocols: list[tuple[str, bytes]],
    ) -> JoinResult | asyncio.Future[JoinResult]:
        """KIP-345: a known instance id takes over its old member without a rebalance when stable."""
        old_id = group.instance_owner(instance_id)
        member = Member(
            member_id, instance_id, client_id, client_host, session_ms, rebalance_ms, protocol_type, protocols
        )
        if old_id is not None:
            old = group.members.pop(old_id)
            member.assignment = old.assignment
            _resolve(old.join, JoinResult(ErrorCode.fenced_instance_id, old_id))
            _resolve(old.sync, SyncResult(ErrorCode.fenced_instance_id))
            if group.leader == old_id:
                group.leader = member_id
            group.members[member_id] = member
            if group.state == GroupState.STABLE and old.protocols == protocols:
                await self._save(group)
                result = self._join_result(group, member)
                result.skip_assignment = group.leader == member_id
                return result
        group.members[member_id] = member
        return self._await_rebalance(group, member, protocol_type)

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
        group = self.groups.get(group_id)
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
            await self._save(group)
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
        await self._save(group)
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
        group = await self.classic(group_id)
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
                await self._save(group)
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
        group = await self.classic(group_id)
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
        group = await self.classic(group_id)
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
            await self._save(group)
        elif group.state == GroupState.PREPARING_REBALANCE:
            await self._save(group)
            self._maybe_complete_join(group)

    async def expire_sessions(self) -> None:
        """Removes members whose session lapsed (members waiting in a join are alive). Not while this
        broker cannot reach Redis: members' heartbeats fail then for its trouble, not theirs."""
        health = self.redis_health
        if health.in_trouble():
            return
        now = time.monotonic()
        for group in list(self.groups.values()):
            if isinstance(group, ConsumerGroup):
                async with group.lock:
                    if self.groups.get(group.group_id) is group:
                        with contextlib.suppress(NotCoordinator):
                            await self.consumer.expire(group, health.back_at)
                continue
            async with group.lock:
                if self.groups.get(group.group_id) is not group:
                    continue
                lapsed = [
                    m
                    for m in group.members.values()
                    if m.join is None and now - health.since(m.last_seen) > m.session_ms / 1000
                ]
                for pending_id, since in list(group.pending.items()):
                    if now - since > self.settings.max_session_ms / 1000 or now - since > 60:
                        del group.pending[pending_id]
                if not lapsed:
                    continue
                for m in lapsed:
                    log.info("group %s: member %s session expired", group.group_id, m.member_id)
                    del group.members[m.member_id]
                    _resolve(m.sync, SyncResult(ErrorCode.unknown_member_id))
                with contextlib.suppress(NotCoordinator):
                    await self._after_removal(group)

    # -- offsets ------------------------------------------------------------------------------------
    async def check_commit(
        self, group_id: str, generation: int, member_id: str, instance_id: str | None, version: int = 9
    ) -> ErrorCode:
        """Whether an OffsetCommit may store offsets (generation is the member epoch in a consumer group)."""
        group = await self.group(group_id)
        if isinstance(group, ConsumerGroup):
            return self.consumer.check_commit(group, generation, member_id, version)
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

    async def check_fetch(self, group_id: str, member_id: str | None, member_epoch: int) -> ErrorCode:
        """OffsetFetch v9+ from a member of a consumer group must carry its current epoch."""
        if member_id is None and member_epoch < 0:
            return ErrorCode.none
        group = await self.group(group_id)
        if isinstance(group, ConsumerGroup):
            return self.consumer.check_fetch(group, member_id, member_epoch)
        return ErrorCode.none
