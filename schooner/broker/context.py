"""What every handler shares: the store, settings, and short-lived caches of cluster state."""

from __future__ import annotations

import asyncio
import time
import uuid
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..config import Settings
from ..coordinators.group_configs import GroupConfigs
from ..coordinators.group_coordinator import GroupCoordinator, GroupSettings
from ..coordinators.transaction_coordinator import TransactionCoordinator
from ..storage.cluster import BrokerInfo
from ..storage.keys import Keyspace
from ..storage.store import Store
from ..storage.topics.metadata import Topic
from .authorizer import Authorizer
from .fetch_sessions import FetchSessions
from .partitions.data_path import DataPath, open_data_path
from .quotas import ClientQuotas
from .share_sessions import ShareSessions

if TYPE_CHECKING:
    from .metrics import BrokerMetrics

# Every topic change is published (storage/topics/notices.py) and drops the cached topic at once, so
# the TTL is a safety net. While this broker may not hear those notices (at start, while its
# subscription is down, or while its heartbeat finds Redis out of reach, which a stalled subscription
# shows late) a cached topic lives as briefly as before them.
TOPIC_CACHE_SECONDS = 30.0
UNWATCHED_TOPIC_CACHE_SECONDS = 1.0
BROKER_CACHE_SECONDS = 0.5


@dataclass
class BrokerContext:
    settings: Settings
    store: Store
    me: BrokerInfo
    cluster_id: str = ""
    # The partition writer and reader, and the in-memory state they share (broker/partitions/).
    data: DataPath = field(init=False)
    groups: GroupCoordinator = field(init=False)
    transactions: TransactionCoordinator = field(init=False)
    leaving: bool = False  # shutting down: Metadata and coordinators point clients elsewhere
    share_sessions: ShareSessions = field(default_factory=ShareSessions)
    fetch_sessions: FetchSessions = field(init=False)  # KIP-227, sized by fetch_session_cache_slots
    _topics: dict[str, tuple[float, Topic | None]] = field(default_factory=dict)
    _topic_notices: bool = False  # the topics channel's subscription is confirmed
    # Bumped whenever a cached topic is dropped: a load that overlapped the drop may have read the old
    # state, so it is not cached.
    _topic_generation: int = 0
    _brokers: tuple[float, list[BrokerInfo]] = (0.0, [])
    _broker_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    group_configs: GroupConfigs = field(init=False)  # each group's configs, cached for the data path
    quotas: ClientQuotas = field(init=False)  # client quotas: deployment-wide, shared by every tenant
    authorizer: Authorizer = field(init=False)  # ACL decisions for this keyspace (broker/authorizer.py)
    # Tenants (docs/security.md): a tenant's context has its own keyspace, store, caches, coordinators
    # and ACLs, and shares the deployment's Redis client, lane, identity, live-broker registry and quotas.
    tenant: str | None = None
    base: BrokerContext | None = None  # the deployment's context, on a tenant's; None on its own
    metrics: BrokerMetrics | None = None  # the broker's, shared by tenants; None when metrics are off

    def __post_init__(self) -> None:
        self.authorizer = Authorizer(self.settings, self.store)
        self.fetch_sessions = FetchSessions(self.settings.fetch_session_cache_slots)

    @property
    def ks(self) -> Keyspace:
        return self.store.ks

    @property
    def deployment(self) -> BrokerContext:
        """The deployment's context: users, the broker registry and anything not a tenant's live there."""
        return self.base or self

    def tenant_context(self, name: str) -> BrokerContext:
        """A new context for the tenant, under this deployment's keyspace (Keyspace.tenant)."""
        base = self.deployment
        ctx = open_context(
            base.settings,
            base.store.with_keyspace(base.ks.tenant(name)),
            base.me,
            base.cluster_id,
            base.quotas,
            base,
            name,
        )
        return ctx

    @property
    def topic_defaults(self) -> Mapping[str, str]:
        return self.settings.topic_defaults

    # -- topics -----------------------------------------------------------------------------------
    def _topic_ttl(self) -> float:
        if self._topic_notices and not self.groups.redis_health.in_trouble():
            return TOPIC_CACHE_SECONDS
        return UNWATCHED_TOPIC_CACHE_SECONDS

    async def topic(self, name: str) -> Topic | None:
        """The topic's metadata, cached until a notice says it changed (or the TTL, a safety net)."""
        now = time.monotonic()
        cached = self._topics.get(name)
        if cached and now - cached[0] < self._topic_ttl():
            return cached[1]
        generation = self._topic_generation
        found = await self.store.topic(name, self.topic_defaults)
        if generation == self._topic_generation:
            self._topics[name] = (now, found)
        return found

    async def topic_by_id(self, topic_id: uuid.UUID) -> Topic | None:
        now, ttl = time.monotonic(), self._topic_ttl()
        for loaded, t in self._topics.values():
            if t is not None and t.id == topic_id and now - loaded < ttl:
                return t
        name = await self.store.topic_name(topic_id)
        if name is None:
            return None
        found = await self.topic(name)
        return found if found is not None and found.id == topic_id else None

    async def all_topics(self) -> list[Topic]:
        """Every topic, fresh from Redis (and so into the cache)."""
        now, generation = time.monotonic(), self._topic_generation
        found = await self.store.topics(self.topic_defaults)
        if generation == self._topic_generation:
            for t in found:
                self._topics[t.name] = (now, t)
        return found

    def forget_topic(self, name: str) -> None:
        self._topics.pop(name, None)
        self._topic_generation += 1

    def remember_topic(self, topic: Topic) -> None:
        """A topic this broker has just created."""
        self._topics[topic.name] = (time.monotonic(), topic)

    @property
    def hears_topic_notices(self) -> bool:
        """Whether the subscription to this keyspace's topic notices is confirmed (and not failed since)."""
        return self._topic_notices

    def topic_notices(self, heard: bool) -> None:
        """Whether this broker hears topic notices from now on. Either way the cache starts afresh:
        changes made while it did not went unheard."""
        self._topic_notices = heard
        self._topics.clear()
        self._topic_generation += 1

    async def create_topic(
        self,
        name: str,
        partitions: int,
        overrides: Mapping[str, str],
        leaders: Mapping[int, int] | None = None,
    ) -> Topic:
        created = await self.store.create_topic(name, partitions, overrides, self.topic_defaults, leaders)
        self.remember_topic(created)
        return created

    # -- brokers ----------------------------------------------------------------------------------
    async def live_brokers(self) -> list[BrokerInfo]:
        """Live brokers (including this one unless it is leaving), cached briefly. Brokers register in
        the deployment's keyspace only: a tenant's context asks the deployment's."""
        if self.base is not None:
            return await self.base.live_brokers()
        if self.leaving:
            found = await self.store.live_brokers()
            others = [b for b in found if b.broker_id != self.me.broker_id]
            return others or [self.me]
        now = time.monotonic()
        if now - self._brokers[0] < BROKER_CACHE_SECONDS:
            return self._brokers[1]
        async with self._broker_lock:
            if time.monotonic() - self._brokers[0] < BROKER_CACHE_SECONDS:
                return self._brokers[1]
            found = await self.store.live_brokers()
            if all(b.broker_id != self.me.broker_id for b in found):
                found = sorted([*found, self.me], key=lambda b: b.broker_id)
            self._brokers = (time.monotonic(), found)
            return found

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


def open_context(
    settings: Settings,
    store: Store,
    me: BrokerInfo,
    cluster_id: str,
    quotas: ClientQuotas,
    base: BrokerContext | None = None,
    tenant: str | None = None,
    metrics: BrokerMetrics | None = None,
) -> BrokerContext:
    """A context with its coordinators and data path, on the store's keyspace. A tenant's (base given)
    reports its Redis round trips to the deployment's health, which the broker's heartbeat keeps; client
    quotas and metrics are the deployment's, one for all."""
    s = settings
    if base is not None:
        metrics = base.metrics
    ctx = BrokerContext(settings=s, store=store, me=me, cluster_id=cluster_id, base=base, tenant=tenant)
    ctx.metrics = metrics
    ctx.quotas = quotas
    full_log = base.data.writer.full_log if base is not None else None
    ctx.data = open_data_path(store, metrics, tenant, ctx.forget_topic, full_log)
    ctx.groups = GroupCoordinator(
        store,
        me,
        ctx.live_brokers,
        GroupSettings(s.group_min_session_ms, s.group_max_session_ms, s.group_initial_rebalance_delay_ms),
    )
    if base is not None:
        ctx.groups.redis_health = base.groups.redis_health
    ctx.transactions = TransactionCoordinator(
        store,
        me,
        ctx.live_brokers,
        ctx.topic,
        s.transaction_max_timeout_ms,
        s.transactional_id_expiration_ms,
    )
    ctx.group_configs = GroupConfigs(store, s)
    return ctx
