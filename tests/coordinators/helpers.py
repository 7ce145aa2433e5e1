"""Coordinators run in-process against the real redis-server of the `redis_server` fixture: no broker,
no sockets. Each coordinator is one broker's; tests decide which brokers it believes are alive."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable

from schooner.coordinators.groups.coordinator import GroupCoordinator, GroupSettings, JoinRequest
from schooner.coordinators.groups.modern.coordinator import MemberTimeouts
from schooner.storage.cluster import BrokerInfo
from schooner.storage.keys import Keyspace
from schooner.storage.redis import client
from schooner.storage.store import Store
from schooner.storage.topics.metadata import Topic

# Quick groups: no initial delay, sessions down to 10 ms.
SETTINGS = GroupSettings(min_session_ms=10, max_session_ms=60_000, initial_rebalance_delay_ms=0)
TIMEOUTS = MemberTimeouts(session_ms=45_000, heartbeat_ms=5_000)


def broker(broker_id: int) -> BrokerInfo:
    return BrokerInfo(broker_id, "127.0.0.1", 9092 + broker_id)


def sees(*brokers: BrokerInfo) -> Callable[[], Awaitable[list[BrokerInfo]]]:
    """A fixed view of the live brokers."""

    async def live() -> list[BrokerInfo]:
        return list(brokers)

    return live


@contextlib.asynccontextmanager
async def coordinator(
    url: str,
    ks: Keyspace,
    me: BrokerInfo,
    live: Callable[[], Awaitable[list[BrokerInfo]]] | None = None,
    settings: GroupSettings = SETTINGS,
) -> AsyncIterator[GroupCoordinator]:
    """Broker `me`'s group coordinator; by default it believes it is the only live broker."""
    store = Store(client.connect(url), ks)
    coordinator = GroupCoordinator(store, me, live or sees(me), settings)
    try:
        yield coordinator
    finally:
        coordinator.shutdown()
        await store.close()


def join_request(
    member_id: str = "",
    group_id: str = "g",
    instance_id: str | None = None,
    protocols: tuple[tuple[str, bytes], ...] = (("range", b"meta"),),
    session_ms: int = 10_000,
    rebalance_ms: int = 5_000,
) -> JoinRequest:
    return JoinRequest(
        group_id, member_id, instance_id, "client", "host", session_ms, rebalance_ms, "consumer", protocols,
        require_known_member=False,
    )  # fmt: skip


class RedisTopics:
    """The coordinators' TopicSource, read straight from Redis (the broker adds a cache)."""

    def __init__(self, url: str, ks: Keyspace) -> None:
        self.store = Store(client.connect(url), ks)

    async def create(self, name: str, partitions: int) -> Topic:
        return await self.store.create_topic(name, partitions, {}, {})

    async def topic(self, name: str) -> Topic | None:
        return await self.store.topic(name, {})

    async def names(self) -> list[str]:
        return [t.name for t in await self.store.topics({})]

    async def aclose(self) -> None:
        await self.store.close()
