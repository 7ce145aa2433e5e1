"""Which broker coordinates which group, and the groups it holds in memory.

A broker coordinates the groups that hash to it over the live brokers. It claims a group in Redis
before serving it (bumping the owner epoch), so a broker that lost a group can no longer save it.
Classic and KIP-848 groups share this ownership, loading and fenced saving.
"""

from __future__ import annotations

import asyncio
import logging
import zlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from kio.schema.errors import ErrorCode

from ..storage.cluster import BrokerInfo
from ..storage.groups.commits import Owner
from ..storage.store import Store
from .classic_group import Group, GroupState, JoinResult, SyncResult
from .consumer_coordinator import ConsumerGroupCoordinator
from .consumer_group import ConsumerGroup
from .redis_health import RedisHealth

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class GroupSettings:
    min_session_ms: int = 6000
    max_session_ms: int = 1_800_000
    initial_rebalance_delay_ms: int = 3000


class NotCoordinator(Exception):
    pass


class GroupOwnership:
    def __init__(
        self,
        store: Store,
        me: BrokerInfo,
        live_brokers: Callable[[], Awaitable[list[BrokerInfo]]],
        settings: GroupSettings,
    ) -> None:
        self.store = store
        self.me = me
        self.live_brokers = live_brokers
        self.settings = settings
        self.groups: dict[str, Group | ConsumerGroup] = {}
        self._loading: dict[str, asyncio.Lock] = {}
        self.redis_health = RedisHealth()  # the broker reports its Redis round trips here
        self._closed = False  # shutting down: every group is another broker's now
        self.consumer = ConsumerGroupCoordinator(self.group, self._replace, self._save_consumer, self._forget)

    def _prepare_rebalance(self, group: Group) -> None:
        """Starts a rebalance of a group just loaded mid-rebalance (the classic coordinator's rule)."""
        raise NotImplementedError

    # -- ownership ----------------------------------------------------------------------------------
    async def coordinator_for(self, group_id: str) -> BrokerInfo:
        brokers = await self.live_brokers()
        return brokers[zlib.crc32(group_id.encode()) % len(brokers)]

    async def group(self, group_id: str) -> Group | ConsumerGroup:
        """The group, loaded from Redis when this broker first serves it. Raises NotCoordinator."""
        if self._closed or (await self.coordinator_for(group_id)).broker_id != self.me.broker_id:
            self.unload(group_id)
            raise NotCoordinator(group_id)
        found = self.groups.get(group_id)
        if found is not None:
            return found
        lock = self._loading.setdefault(group_id, asyncio.Lock())
        async with lock:
            found = self.groups.get(group_id)
            if found is None:
                saved = await self.store.claim_group(group_id, self.me.broker_id)
                if saved.get("type") == "consumer":
                    found = ConsumerGroup.from_saved(group_id, saved)
                    log.info("coordinating consumer group %s (epoch %d)", group_id, found.group_epoch)
                else:
                    found = Group.from_saved(group_id, saved)
                    if found.state in (GroupState.PREPARING_REBALANCE, GroupState.COMPLETING_REBALANCE):
                        # Joins that waited on the old coordinator are gone: members rejoin here.
                        self._prepare_rebalance(found)
                    log.info("coordinating group %s (generation %d)", group_id, found.generation)
                self.groups[group_id] = found
            return found

    async def owner(self, group_id: str) -> Owner:
        """This broker as the group's coordinator, with the owner epoch that fences its writes.
        Raises NotCoordinator."""
        group = await self.group(group_id)
        return Owner(self.me.broker_id, group.owner_epoch)

    async def classic(self, group_id: str) -> Group | None:
        """The group when it is a classic one (None for a consumer group). Raises NotCoordinator."""
        group = await self.group(group_id)
        return group if isinstance(group, Group) else None

    def _replace(self, old: Group | ConsumerGroup, new: Group | ConsumerGroup) -> bool:
        """An empty group changes kind (its offsets stay). False when `old` is no longer loaded."""
        if self.groups.get(old.group_id) is not old:
            return False
        self.unload(old.group_id)
        self.groups[old.group_id] = new
        kind = "consumer" if isinstance(new, ConsumerGroup) else "classic"
        log.info("group %s is now a %s group", old.group_id, kind)
        return True

    def _forget(self, group: Group | ConsumerGroup) -> None:
        if self.groups.get(group.group_id) is group:
            self.unload(group.group_id)

    def unload(self, group_id: str) -> None:
        group = self.groups.pop(group_id, None)
        if not isinstance(group, Group):
            return
        if group.rebalance_timer:
            group.rebalance_timer.cancel()
        for m in group.members.values():
            _resolve(m.join, JoinResult(ErrorCode.not_coordinator, m.member_id))
            _resolve(m.sync, SyncResult(ErrorCode.not_coordinator))
            m.join = m.sync = None

    async def _save(self, group: Group) -> None:
        if self.groups.get(group.group_id) is not group:
            raise NotCoordinator(group.group_id)  # unloaded, or replaced by a consumer group meanwhile
        state = {**group.to_saved(), "type": "classic"}
        saved = await self.store.save_group(
            group.group_id, Owner(self.me.broker_id, group.owner_epoch), state
        )
        if not saved:
            log.info("group %s was claimed by another broker", group.group_id)
            self.unload(group.group_id)
            raise NotCoordinator(group.group_id)

    async def _save_consumer(self, group: ConsumerGroup) -> None:
        """Writes the fields that changed; with none changed it still checks that this broker owns the
        group, so a coordinator that lost it never answers from stale state."""
        if self.groups.get(group.group_id) is not group:
            raise NotCoordinator(group.group_id)
        state = group.to_saved()
        changed = {k: v for k, v in state.items() if group.saved.get(k) != v} or {"type": "consumer"}
        if not await self.store.save_group(
            group.group_id, Owner(self.me.broker_id, group.owner_epoch), changed
        ):
            log.info("consumer group %s was claimed by another broker", group.group_id)
            self.groups.pop(group.group_id, None)
            raise NotCoordinator(group.group_id)
        group.saved.update(state)

    async def check_ownership(self) -> None:
        """Unloads groups that now hash to another broker (the live broker set changed)."""
        for group_id in list(self.groups):
            if (await self.coordinator_for(group_id)).broker_id != self.me.broker_id:
                log.info("group %s moves to another coordinator", group_id)
                self.unload(group_id)

    def shutdown(self) -> None:
        """Hands every group back: its state is in Redis, so the next coordinator loads it as it is and
        members keep their assignments; waiting joins are told NOT_COORDINATOR to go there now."""
        self._closed = True
        for group_id in list(self.groups):
            self.unload(group_id)


def _resolve(future: asyncio.Future[Any] | None, value: Any) -> None:
    if future is not None and not future.done():
        future.set_result(value)
