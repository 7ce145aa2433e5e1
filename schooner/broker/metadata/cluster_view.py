"""ClusterView: the live brokers of the deployment, as this broker sees them, and who leads what.

Brokers register in the deployment's keyspace only, so a deployment's contexts (its own and every
tenant's) share one view. Callers: Metadata, DescribeCluster and the admin handlers (live brokers,
leaders, the controller), the group and transaction coordinators (`live_brokers`, to hash coordinators
over), the metrics' gauges (which partitions this broker reports), and server.py (`leaving`).
"""

from __future__ import annotations

import asyncio
import time
import zlib

from ...storage.cluster import BrokerInfo
from ...storage.store import Store
from ...storage.topics.metadata import Topic
from ..health import RedisHealth

BROKER_CACHE_SECONDS = 0.5


class ClusterView:
    def __init__(self, store: Store, me: BrokerInfo, health: RedisHealth, session_ms: int) -> None:
        """store: the deployment's (its keyspace holds the broker registry); health: this broker's reach
        to it; session_ms: how long a registration lasts unrenewed."""
        self._store = store
        self.me = me
        self._health = health
        self._session = session_ms / 1000
        self.leaving = False  # shutting down: Metadata and coordinators point clients elsewhere
        self._brokers: tuple[float, list[BrokerInfo]] = (0.0, [])
        self._lock = asyncio.Lock()

    async def live_brokers(self) -> list[BrokerInfo]:
        """Live brokers (including this one unless it is leaving), cached briefly."""
        if self.leaving:
            found = await self._store.live_brokers()
            others = [b for b in found if b.broker_id != self.me.broker_id]
            return others or [self.me]
        now = time.monotonic()
        if now - self._brokers[0] < BROKER_CACHE_SECONDS:
            return self._brokers[1]
        async with self._lock:
            if time.monotonic() - self._brokers[0] < BROKER_CACHE_SECONDS:
                return self._brokers[1]
            found = await self._store.live_brokers(self._live_at_ms())
            if all(b.broker_id != self.me.broker_id for b in found):
                found = sorted([*found, self.me], key=lambda b: b.broker_id)
            self._brokers = (time.monotonic(), found)
            return found

    def _live_at_ms(self) -> int | None:
        """While this broker has trouble reaching Redis, and for a session after, registrations count
        from when the trouble began: a Redis that is down or full stops every broker's renewals, and
        the brokers that were live then get a whole session to renew once it is back (as members do,
        health.py). Kafka's brokers likewise stay in the metadata while the controller is away.
        Without it, each broker of a deployment named only itself during a Redis out of memory."""
        began = self._health.trouble_began(self._session)
        if began is None:
            return None
        return int((time.time() - (time.monotonic() - began)) * 1000)

    @staticmethod
    def leader_for(brokers: list[BrokerInfo], topic: Topic, partition: int) -> int:
        """The broker a replica assignment placed the partition on while it is live; otherwise leaders
        are spread over the live brokers. Any broker can serve any partition either way."""
        placed = topic.leaders.get(partition)
        if placed is not None and any(b.broker_id == placed for b in brokers):
            return placed
        return brokers[(zlib.crc32(topic.name.encode()) + partition) % len(brokers)].broker_id

    def controller_id(self, brokers: list[BrokerInfo]) -> int:
        return brokers[0].broker_id if brokers else self.me.broker_id
