"""Which broker coordinates which group, and the groups this broker holds in memory.

A broker coordinates the groups that hash to it over the live brokers. It claims a group in Redis
before serving it (bumping the owner epoch), so a broker that lost a group can no longer save it.

A request is served by the claim in force when it was read, never by a later one: one read before this
broker let the group go (another broker claimed it, it hashed elsewhere, the broker's registration
lapsed) was meant for the coordinator that let it go, and the client may have sent it again to the next
one, which served it; applied under a new claim it would undo what came since (an OffsetCommit held in
the socket of a stalled broker, stored after it came back and claimed the group anew, set the group's
offsets back). Such a request is answered NOT_COORDINATOR, as Kafka's coordinator answers once it lost
the group, and the client finds the coordinator again. While the broker's registration has lapsed (the
other brokers count it gone) it coordinates nothing.
The coordinators (coordinator.py of classic/, consumer/ and share/) hold this
one GroupOwnership and load, save and drop groups through it; a group id is one kind at a time.
"""

from __future__ import annotations

import asyncio
import logging
import math
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
from .streams.group import StreamsGroup

log = logging.getLogger(__name__)

AnyGroup = Group | ConsumerGroup | ShareGroup  # a StreamsGroup is a ConsumerGroup
EPOCH_KINDS: dict[str, type[ConsumerGroup] | type[ShareGroup]] = {
    kind.KIND: kind for kind in (ConsumerGroup, ShareGroup, StreamsGroup)
}  # the saved `type` of an epoch-based group -> its class
Owned = Group | EpochGroup[Any]  # any group, as the parts that do not care about its kind see it
# How long a broker remembers letting a group go: longer than any request waits to be served.
LET_GO_MEMORY_SECONDS = 300.0


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
        self._let_go: dict[str, float] = {}  # group id -> when this broker last let it go (monotonic)
        self._let_go_all = -math.inf  # when it last let every group go (its registration had lapsed)
        self._lease_until: float | None = None  # when the others count it gone (None: not known)

    async def coordinator_for(self, group_id: str) -> BrokerInfo:
        brokers = await self.live_brokers()
        return brokers[zlib.crc32(group_id.encode()) % len(brokers)]

    async def group(self, group_id: str, received_at: float | None = None) -> AnyGroup:
        """The group, loaded from Redis when this broker first serves it. Raises NotCoordinator, also
        for a request read (`received_at`, time.monotonic()) before this broker last let the group go."""
        if (
            self._closed
            or self.lapsed()
            or (await self.coordinator_for(group_id)).broker_id != self.me.broker_id
        ):
            self.unload(group_id)
            raise NotCoordinator(group_id)
        if received_at is not None and received_at <= self.let_go_at(group_id):
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

    async def owner(self, group_id: str, received_at: float | None = None) -> Owner:
        """This broker as the group's coordinator, with the owner epoch that fences its writes.
        Raises NotCoordinator (as group())."""
        group = await self.group(group_id, received_at)
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
        self._drop(old.group_id)  # the same claim goes on: not letting the group go
        self._groups[old.group_id] = new
        log.info("group %s is now a %s group", old.group_id, kind_of(new))
        return True

    def forget(self, group: Owned) -> None:
        """Drops the group if held; the next request loads it from Redis as last saved."""
        if self.holds(group):
            self.unload(group.group_id)

    def unload(self, group_id: str) -> None:
        """Lets the group go: dropped from memory, and requests read until now are not served by a later
        claim (group())."""
        if self._drop(group_id):
            self._let_go[group_id] = time.monotonic()

    def _drop(self, group_id: str) -> bool:
        group = self._groups.pop(group_id, None)
        if group is None:
            return False
        for watcher in self.watchers:
            watcher.unloaded(group)
        return True

    def let_go_at(self, group_id: str) -> float:
        """When this broker last let the group go (time.monotonic(); -inf: not that it remembers)."""
        return max(self._let_go.get(group_id, -math.inf), self._let_go_all)

    # -- the broker's registration ----------------------------------------------------------------
    def registered(self, started: float, lease_seconds: float) -> None:
        """The broker's registration round trip that started at `started` (time.monotonic()) succeeded:
        the other brokers count it live until started + lease_seconds."""
        if self._lease_until is not None and started > self._lease_until:
            # It was gone for the others meanwhile (a stalled process, Redis out of reach): they may
            # have claimed its groups and served the requests its clients then sent them again.
            log.warning("registration had lapsed: letting every group go, to be claimed again")
            self._let_go_all = time.monotonic()
            for group_id in list(self._groups):
                self._drop(group_id)
        lease = started + lease_seconds
        self._lease_until = lease if self._lease_until is None else max(self._lease_until, lease)

    def lapsed(self, now: float | None = None) -> bool:
        """Whether the broker's registration has lapsed, so other brokers may be claiming its groups."""
        lease = self._lease_until
        return lease is not None and (time.monotonic() if now is None else now) > lease

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
        forgotten = time.monotonic() - LET_GO_MEMORY_SECONDS
        for group_id, at in list(self._let_go.items()):
            if at < forgotten:
                del self._let_go[group_id]

    def shutdown(self) -> None:
        """Hands every group back: its state is in Redis, so the next coordinator loads it as it is and
        members keep their assignments; waiting joins are told NOT_COORDINATOR to go there now."""
        self._closed = True
        for group_id in list(self._groups):
            self.unload(group_id)


def kind_of(group: Owned) -> str:
    """The group's type as ListGroups and the saved `type` field name it."""
    return group.KIND if isinstance(group, EpochGroup) else "classic"
