"""Which broker coordinates which group, and the groups this broker holds in memory.

A broker coordinates the groups that hash to it over the live brokers. It claims a group in Redis
before serving it (bumping the owner epoch), so a broker that lost a group can no longer save it.
The coordinators (coordinator.py of classic/, consumer/ and share/) hold this
one GroupOwnership and load, save and drop groups through it; a group id is one kind at a time.
"""

from __future__ import annotations

import asyncio
import logging
import time
import zlib
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from ...storage.cluster import BrokerInfo
from ...storage.groups.commits import Owner
from ...storage.store import Store
from .classic.model import Group
from .consumer.group import ConsumerGroup
from .modern.group import EpochGroup
from .share.group import ShareGroup

log = logging.getLogger(__name__)

AnyGroup = Group | ConsumerGroup | ShareGroup
EPOCH_KINDS: dict[str, type[ConsumerGroup] | type[ShareGroup]] = {
    kind.KIND: kind for kind in (ConsumerGroup, ShareGroup)
}  # the saved `type` of an epoch-based group -> its class
Owned = Group | EpochGroup[Any]  # any group, as the parts that do not care about its kind see it


class NotCoordinator(Exception):
    pass


class GroupWatcher(Protocol):
    """Told when a group comes into memory and when it leaves (the classic coordinator keeps timers
    and waiting requests per group)."""

    def loaded(self, group: AnyGroup) -> None: ...

    def unloaded(self, group: AnyGroup) -> None: ...


class GroupOwnership:
    def __init__(
        self,
        store: Store,
        me: BrokerInfo,
        live_brokers: Callable[[], Awaitable[list[BrokerInfo]]],
    ) -> None:
        self.store = store
        self.me = me
        self.live_brokers = live_brokers
        self.watchers: list[GroupWatcher] = []
        self._groups: dict[str, AnyGroup] = {}
        self._loading: dict[str, asyncio.Lock] = {}
        self._closed = False  # shutting down: every group is another broker's now

    async def coordinator_for(self, group_id: str) -> BrokerInfo:
        brokers = await self.live_brokers()
        return brokers[zlib.crc32(group_id.encode()) % len(brokers)]

    async def group(self, group_id: str) -> AnyGroup:
        """The group, loaded from Redis when this broker first serves it. Raises NotCoordinator."""
        if self._closed or (await self.coordinator_for(group_id)).broker_id != self.me.broker_id:
            self.unload(group_id)
            raise NotCoordinator(group_id)
        found = self._groups.get(group_id)
        if found is not None:
            return found
        lock = self._loading.setdefault(group_id, asyncio.Lock())
        async with lock:
            found = self._groups.get(group_id)
            if found is None:
                saved = await self.store.claim_group(group_id, self.me.broker_id)
                kind = EPOCH_KINDS.get(saved.get("type", ""))
                if kind is not None:
                    found = kind.from_saved(group_id, saved)
                    log.info("coordinating %s group %s (epoch %d)", found.KIND, group_id, found.group_epoch)
                else:
                    found = Group.from_saved(group_id, saved, time.monotonic())
                    log.info("coordinating group %s (generation %d)", group_id, found.generation)
                self._groups[group_id] = found
                for watcher in self.watchers:
                    watcher.loaded(found)
            return found

    async def owner(self, group_id: str) -> Owner:
        """This broker as the group's coordinator, with the owner epoch that fences its writes.
        Raises NotCoordinator."""
        group = await self.group(group_id)
        return Owner(self.me.broker_id, group.owner_epoch)

    async def find(self, group_id: str) -> AnyGroup | None:
        """The group if it exists (held here, or saved in Redis), loaded; None if no such group.
        Raises NotCoordinator when it exists and another broker coordinates it."""
        if group_id not in self._groups and not await self.store.group_exists(group_id):
            await self.coordinator_for(group_id)  # no Redis, no answer: the same errors as for a known group
            return None
        return await self.group(group_id)

    def loaded(self, group_id: str) -> AnyGroup | None:
        """The group if this broker holds it in memory now (no Redis round trip)."""
        return self._groups.get(group_id)

    def holds(self, group: Owned) -> bool:
        """Whether this very group object is the one held (not dropped or replaced meanwhile)."""
        return self._groups.get(group.group_id) is group

    def held(self) -> list[AnyGroup]:
        return list(self._groups.values())

    def replace(self, old: AnyGroup, new: AnyGroup) -> bool:
        """An empty group changes kind (its offsets stay). False when `old` is no longer held."""
        if not self.holds(old):
            return False
        self.unload(old.group_id)
        self._groups[old.group_id] = new
        log.info("group %s is now a %s group", old.group_id, kind_of(new))
        return True

    def forget(self, group: Owned) -> None:
        """Drops the group if held; the next request loads it from Redis as last saved."""
        if self.holds(group):
            self.unload(group.group_id)

    def unload(self, group_id: str) -> None:
        group = self._groups.pop(group_id, None)
        if group is not None:
            for watcher in self.watchers:
                watcher.unloaded(group)

    async def save_classic(self, group: Group) -> None:
        if not self.holds(group):
            raise NotCoordinator(group.group_id)  # unloaded, or replaced by a consumer group meanwhile
        state = {**group.to_saved(), "type": "classic"}
        saved = await self.store.save_group(
            group.group_id, Owner(self.me.broker_id, group.owner_epoch), state
        )
        if not saved:
            log.info("group %s was claimed by another broker", group.group_id)
            self.unload(group.group_id)
            raise NotCoordinator(group.group_id)

    async def save_changes(self, group: EpochGroup[Any]) -> None:
        """Writes the fields that changed; with none changed it still checks that this broker owns the
        group, so a coordinator that lost it never answers from stale state."""
        if not self.holds(group):
            raise NotCoordinator(group.group_id)
        state = group.to_saved()
        changed = {k: v for k, v in state.items() if group.saved.get(k) != v} or {"type": state["type"]}
        if not await self.store.save_group(
            group.group_id, Owner(self.me.broker_id, group.owner_epoch), changed
        ):
            log.info("%s group %s was claimed by another broker", kind_of(group), group.group_id)
            self.unload(group.group_id)
            raise NotCoordinator(group.group_id)
        group.saved.update(state)

    async def check_ownership(self) -> None:
        """Unloads groups that now hash to another broker (the live broker set changed)."""
        for group_id in list(self._groups):
            if (await self.coordinator_for(group_id)).broker_id != self.me.broker_id:
                log.info("group %s moves to another coordinator", group_id)
                self.unload(group_id)

    def shutdown(self) -> None:
        """Hands every group back: its state is in Redis, so the next coordinator loads it as it is and
        members keep their assignments; waiting joins are told NOT_COORDINATOR to go there now."""
        self._closed = True
        for group_id in list(self._groups):
            self.unload(group_id)


def kind_of(group: Owned) -> str:
    """The group's type as ListGroups and the saved `type` field name it."""
    return group.KIND if isinstance(group, EpochGroup) else "classic"
