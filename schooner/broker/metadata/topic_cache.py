"""TopicCache: one keyspace's topic metadata, cached for the request path and written through.

Every change a handler makes goes through the cache (create, alter, stamp_partitions, delete), which
drops the cached topic once Redis has it (or may have it), so no handler forgets by hand. Changes made
by others arrive as topic notices (storage/topics/notices.py; upkeep.py calls `forget`), and the TTL is
the safety net behind them: short while the notices may go unheard.

Callers: handlers (through common.resolve_topic and the admin handlers), the transaction coordinator
(`load`), upkeep.py (`forget`, `notices`), and the partition writer (`forget`, when an append finds
the topic deleted or re-created).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from ...storage.store import Store
from ...storage.topics.metadata import Topic, TopicExists
from ..health import RedisHealth

# Every topic change is published (storage/topics/notices.py) and drops the cached topic at once, so
# the TTL is a safety net. While this broker may not hear those notices (at start, while its
# subscription is down, or while its heartbeat finds Redis out of reach, which a stalled subscription
# shows late) a cached topic lives as briefly as before them.
TOPIC_CACHE_SECONDS = 30.0
UNWATCHED_TOPIC_CACHE_SECONDS = 1.0


class TopicCache:
    def __init__(self, store: Store, defaults: Mapping[str, str], health: RedisHealth) -> None:
        self._store = store
        self.defaults = defaults  # the broker's topic configs, under each topic's overrides
        self._health = health
        self._topics: dict[str, tuple[float, Topic | None]] = {}
        self._notices = False  # the topics channel's subscription is confirmed
        # Bumped whenever a cached topic is dropped: a load that overlapped the drop may have read the
        # old state, so it is not cached.
        self._generation = 0
        self._also_forget: list[Callable[[str], None]] = []

    def also_forget(self, forget: Callable[[str], None]) -> None:
        """Another keeper of per-topic state (the cold reads' marks), told whenever a topic is dropped
        from this cache: a deleted topic's state goes with it."""
        self._also_forget.append(forget)

    def _ttl(self) -> float:
        if self._notices and not self._health.in_trouble():
            return TOPIC_CACHE_SECONDS
        return UNWATCHED_TOPIC_CACHE_SECONDS

    async def load(self, name: str) -> Topic | None:
        """The topic's metadata, cached until a notice says it changed (or the TTL, a safety net)."""
        now = time.monotonic()
        cached = self._topics.get(name)
        if cached and now - cached[0] < self._ttl():
            return cached[1]
        generation = self._generation
        found = await self._store.topic(name, self.defaults)
        if generation == self._generation:
            self._topics[name] = (now, found)
        return found

    async def fresh(self, name: str) -> Topic | None:
        """The topic as Redis has it now (for a change about to be made to it), and so into the cache."""
        self.forget(name)
        return await self.load(name)

    async def by_id(self, topic_id: uuid.UUID) -> Topic | None:
        now, ttl = time.monotonic(), self._ttl()
        for loaded, t in self._topics.values():
            if t is not None and t.id == topic_id and now - loaded < ttl:
                return t
        name = await self._store.topic_name(topic_id)
        if name is None:
            return None
        found = await self.load(name)
        return found if found is not None and found.id == topic_id else None

    async def all(self) -> list[Topic]:
        """Every topic, fresh from Redis (and so into the cache)."""
        now, generation = time.monotonic(), self._generation
        found = await self._store.topics(self.defaults)
        if generation == self._generation:
            for t in found:
                self._topics[t.name] = (now, t)
        return found

    async def create(
        self,
        name: str,
        partitions: int,
        overrides: Mapping[str, str],
        leaders: Mapping[int, int] | None = None,
    ) -> Topic:
        """Creates the topic and caches it; TopicExists when it exists (its cached entry is dropped)."""
        try:
            created = await self._store.create_topic(name, partitions, overrides, self.defaults, leaders)
        except TopicExists:
            self.forget(name)
            raise
        self._topics[name] = (time.monotonic(), created)
        return created

    async def alter(self, name: str, **changes: Any) -> int:
        """Store.update_topic (configs, partition count, leaders); returns the old partition count."""
        try:
            return await self._store.update_topic(name, **changes)
        finally:
            self.forget(name)

    async def stamp_partitions(self, name: str, topic_id: uuid.UUID, partitions: range) -> None:
        """Stamps new partitions with the topic's id (after alter grew it), so appends may reach them."""
        try:
            await self._store.stamp_partitions(name, topic_id, partitions)
        finally:
            self.forget(name)

    async def delete(self, name: str, expected_id: uuid.UUID | None = None) -> None:
        try:
            await self._store.delete_topic(name, expected_id)
        finally:
            self.forget(name)

    def forget(self, name: str) -> None:
        """The topic changed elsewhere (a notice) or is gone: the next load reads Redis."""
        self._topics.pop(name, None)
        self._generation += 1
        for forget in self._also_forget:
            forget(name)

    @property
    def hears_notices(self) -> bool:
        """Whether the subscription to this keyspace's topic notices is confirmed (and not failed since)."""
        return self._notices

    def notices(self, heard: bool) -> None:
        """Whether this broker hears topic notices from now on. Either way the cache starts afresh:
        changes made while it did not went unheard."""
        self._notices = heard
        self._topics.clear()
        self._generation += 1
