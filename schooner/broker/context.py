"""What every handler shares, as named parts: one keyspace's topics, data path, coordinators and access
rules, and the deployment's view of its brokers.

- `topics` (TopicCache, metadata/topic_cache.py): topic metadata, cached and written through;
- `cluster` (ClusterView, metadata/cluster_view.py): live brokers, partition leaders, the controller;
- `data` (DataPath, partitions/data_path.py): the partition writer and reader, and their state;
- `access` (Access): the ACL authorizer and client quotas;
- `tiering` (Tiering, tiering/tiering.py): the keyspace's cold store, if the broker has one, and the cold
  side of ListOffsets and DeleteRecords (the archiver runs in upkeep.py, cold fetches in the data path);
- `groups`, `transactions`, `group_configs`: the coordinators (coordinators/);
- `fetch_sessions`, `share_sessions`: clients' sessions (KIP-227, KIP-932);
- `health` (RedisHealth): whether this broker reaches Redis, kept by server.py's heartbeat and read by
  the group coordinator (member sessions) and the topic cache (its TTL);
- `memory` (RedisMemory, memory.py): how full Redis is, polled by server.py and read by the writer
  (refusals at the high-water mark), Produce (throttling) and the archiver (trimming under pressure).

Tenants (docs/security.md): a tenant's context has its own keyspace, store, topics, data path,
coordinators and ACLs, and shares the deployment's Redis client, lane, identity, cluster view, health,
memory, quotas and metrics.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..config import Settings
from ..coordinators.groups.configs import GroupConfigs
from ..coordinators.groups.coordinator import GroupCoordinator, GroupSettings
from ..coordinators.transactions import TransactionCoordinator
from ..registry.service import SchemaRegistry
from ..storage.cluster import BrokerInfo
from ..storage.keys import Keyspace
from ..storage.store import Store
from .access.authorizer import Authorizer
from .access.quotas import ClientQuotas
from .health import RedisHealth
from .memory import RedisMemory
from .metadata.cluster_view import ClusterView
from .metadata.topic_cache import TopicCache
from .partitions.data_path import DataPath, open_data_path
from .partitions.fetch_sessions import FetchSessions
from .partitions.share_sessions import ShareSessions
from .schemas.validation import SchemaValidation
from .tiering.tiering import Tiering, open_cold_store

if TYPE_CHECKING:
    from .metrics import BrokerMetrics


@dataclass(frozen=True, slots=True)
class Access:
    """Who may do what, and how much: ACL decisions for this keyspace (access/authorizer.py) and the
    client quotas (access/quotas.py: deployment-wide, shared by every tenant). Callers: handlers,
    dispatch, server.py."""

    authorizer: Authorizer
    quotas: ClientQuotas


@dataclass
class BrokerContext:
    settings: Settings
    store: Store
    me: BrokerInfo
    cluster_id: str
    topics: TopicCache
    cluster: ClusterView
    data: DataPath
    access: Access
    health: RedisHealth
    memory: RedisMemory
    tiering: Tiering
    groups: GroupCoordinator = field(init=False)
    transactions: TransactionCoordinator = field(init=False)
    group_configs: GroupConfigs = field(init=False)  # each group's configs, cached for the data path
    share_sessions: ShareSessions = field(default_factory=ShareSessions)
    fetch_sessions: FetchSessions = field(init=False)  # KIP-227, sized by fetch_session_cache_slots
    tenant: str | None = None
    base: BrokerContext | None = None  # the deployment's context, on a tenant's; None on its own
    metrics: BrokerMetrics | None = None  # the broker's, shared by tenants; None when metrics are off
    schemas: SchemaRegistry = field(init=False)  # the keyspace's schema registry (registry/)
    schema_validation: SchemaValidation = field(init=False)  # produce's checks against it

    def __post_init__(self) -> None:
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
        return open_context(
            base.settings,
            base.store.with_keyspace(base.ks.tenant(name)),
            base.me,
            base.cluster_id,
            base.access.quotas,
            base,
            name,
        )

    @property
    def topic_defaults(self) -> Mapping[str, str]:
        return self.settings.topic_defaults


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
    """A context with its parts, on the store's keyspace. A tenant's (base given) reports its Redis round
    trips to the deployment's health, which the broker's heartbeat keeps, and shares the deployment's
    cluster view, quotas and metrics."""
    s = settings
    if base is not None:
        metrics, health, cluster, memory = base.metrics, base.health, base.cluster, base.memory
    else:
        health = RedisHealth()
        cluster = ClusterView(store, me, health, s.session_ms)
        memory = RedisMemory(s.redis_memory_high_water, s.redis_memory_throttle_from)
    topics = TopicCache(store, s.topic_defaults, health)
    # Each keyspace its own cold store: its tables live under the keyspace's folder (location.py), on the
    # deployment's threads and file cache.
    shared = None if base is None else base.tiering.cold
    tiering = Tiering(store, open_cold_store(s, store.ks.prefix, store.redis, shared), metrics, tenant)
    ctx = BrokerContext(
        settings=s,
        store=store,
        me=me,
        cluster_id=cluster_id,
        topics=topics,
        cluster=cluster,
        data=open_data_path(store, metrics, tenant, topics.forget, memory, tiering.cold),
        access=Access(Authorizer(s, store), quotas),
        health=health,
        memory=memory,
        tiering=tiering,
        tenant=tenant,
        base=base,
        metrics=metrics,
    )
    topics.also_forget(ctx.data.reader.forget_topic)
    ctx.schemas = SchemaRegistry(store)
    ctx.schema_validation = SchemaValidation(ctx.schemas)
    ctx.groups = GroupCoordinator(
        store,
        me,
        cluster.live_brokers,
        GroupSettings(s.group_min_session_ms, s.group_max_session_ms, s.group_initial_rebalance_delay_ms),
        health,  # the broker's fact, which the groups read (member sessions)
    )
    ctx.transactions = TransactionCoordinator(
        store,
        me,
        cluster.live_brokers,
        topics.load,
        s.transaction_max_timeout_ms,
        s.transactional_id_expiration_ms,
    )
    ctx.group_configs = GroupConfigs(store, s)
    return ctx
