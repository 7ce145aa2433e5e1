"""GroupConfigs: each broker's view of the group configs, for the data path (a ShareFetch asks on every
request) and for the admin APIs that change them.

Entries are cached for CACHE_SECONDS, so a change made through another broker is seen within that; a
change made through this broker is seen at once. Concurrent misses for one group share one read.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Collection, Mapping
from dataclasses import dataclass

from ...config import Settings
from ...storage.store import Store
from ...storage.topics.config import ConfigValue, InvalidConfig
from . import config_defs as defs
from .share.config import ShareGroupConfig, share_group_config

CACHE_SECONDS = 1.0
PRUNE_ABOVE = 4096  # cached groups; past this, expired entries are dropped on the next read
ALTER_ATTEMPTS = 8  # compare-and-set rounds against alters of the same group through other brokers


class ConcurrentAlter(RuntimeError):
    """The group's configs kept changing under this alter; the client may retry."""


@dataclass(frozen=True, slots=True)
class _Entry:
    read_at: float
    overrides: Mapping[str, str]
    share: ShareGroupConfig


class GroupConfigs:
    def __init__(self, store: Store, settings: Settings, cache_seconds: float = CACHE_SECONDS) -> None:
        self.store = store
        self.settings = settings
        self.cache_seconds = cache_seconds
        self._cache: dict[str, _Entry] = {}
        self._reads: dict[str, asyncio.Future[_Entry]] = {}  # reads under way, shared by their callers
        self._changes = 0  # bumped by forget(): a read begun before it must not refill the cache

    # -- the data path -----------------------------------------------------------------------------
    async def share(self, group_id: str) -> ShareGroupConfig:
        """The settings the share group runs with: its overrides over the broker's defaults."""
        return (await self._entry(group_id)).share

    async def consumer_timeouts(self, group_id: str) -> tuple[int, int]:
        """(session timeout, heartbeat interval) in ms of a KIP-848 consumer group."""
        return defs.consumer_timeouts((await self._entry(group_id)).overrides, self.settings)

    async def overrides(self, group_id: str) -> Mapping[str, str]:
        return (await self._entry(group_id)).overrides

    def forget(self, group_id: str) -> None:
        """After a change: the next read of the group goes to Redis (not to one begun before)."""
        self._changes += 1
        self._cache.pop(group_id, None)
        self._reads.pop(group_id, None)

    async def _entry(self, group_id: str) -> _Entry:
        cached = self._cache.get(group_id)
        if cached is not None and time.monotonic() - cached.read_at < self.cache_seconds:
            return cached
        read = self._reads.get(group_id)
        if read is None:
            # A task of its own, so that a caller that is cancelled does not cancel the others' read.
            read = self._reads[group_id] = asyncio.ensure_future(self._read(group_id, self._changes))
            read.add_done_callback(lambda done: self._read_done(group_id, done))
        return await asyncio.shield(read)

    async def _read(self, group_id: str, changes: int) -> _Entry:
        overrides = await self.store.group_configs(group_id)
        entry = _Entry(time.monotonic(), overrides, share_group_config(overrides, self.settings))
        if changes == self._changes:
            if len(self._cache) >= PRUNE_ABOVE:
                self._prune()
            self._cache[group_id] = entry
        return entry

    def _read_done(self, group_id: str, read: asyncio.Future[_Entry]) -> None:
        if self._reads.get(group_id) is read:
            del self._reads[group_id]
        if not read.cancelled():
            read.exception()  # retrieved, so a failure whose callers all left is not logged as lost

    def _prune(self) -> None:
        now = time.monotonic()
        for group_id in [g for g, e in self._cache.items() if now - e.read_at >= self.cache_seconds]:
            del self._cache[group_id]

    # -- the admin APIs ----------------------------------------------------------------------------
    async def describe(self, group_id: str) -> list[ConfigValue]:
        """Every group config with its value and source, read fresh from Redis."""
        return defs.described(await self.store.group_configs(group_id), self.settings)

    async def alter(
        self,
        group_id: str,
        set_configs: Mapping[str, str | None],
        delete_configs: Collection[str] = (),
        replace: bool = False,
        validate_only: bool = False,
    ) -> None:
        """Checks the group's resulting configs as a whole and stores them (replace: AlterConfigs, whose
        configs are all the group keeps). InvalidConfig, with nothing stored, when a name or value is
        bad; ConcurrentAlter when other brokers kept changing the group meanwhile."""
        for name in delete_configs:
            if name not in defs.GROUP_CONFIG_DEFS:
                raise InvalidConfig(f"Unknown group config name: {name}")
        requested = {n: defs.check_value(n, v, self.settings) for n, v in set_configs.items()}
        for _ in range(ALTER_ATTEMPTS):
            current = await self.store.group_configs(group_id)
            # Names no longer known (written by hand, say) are dropped rather than judged.
            kept = {
                k: v
                for k, v in current.items()
                if not replace and k not in delete_configs and k in defs.GROUP_CONFIG_DEFS
            }
            checked = defs.validate({**kept, **requested}, self.settings)
            if validate_only:
                return
            sets = {k: v for k, v in checked.items() if current.get(k) != v}
            deletes = [k for k in current if k not in checked]
            try:
                if await self.store.alter_group_configs(group_id, sets, deletes, expected=current):
                    return
            finally:
                self.forget(group_id)
        raise ConcurrentAlter(f"the configs of group {group_id!r} kept changing; try again")

    async def delete(self, group_id: str) -> bool:
        """Drops every config of the group (not done by DeleteGroups, as in Kafka)."""
        try:
            return await self.store.delete_group_configs(group_id)
        finally:
            self.forget(group_id)
