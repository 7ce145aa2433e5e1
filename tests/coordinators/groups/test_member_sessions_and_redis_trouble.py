"""Member sessions do not lapse for the coordinator's own Redis trouble (the broker's health.py, which the
groups read), checked in-process against a real redis-server, with sessions of a fraction of a second."""

from __future__ import annotations

import asyncio
import time

from kio.schema.errors import ErrorCode

from schooner.broker.health import RedisHealth
from schooner.coordinators.groups.consumer.group import ConsumerGroup, ConsumerMember
from schooner.coordinators.groups.coordinator import GroupCoordinator, GroupSettings, JoinRequest
from schooner.storage.cluster import BrokerInfo
from schooner.storage.keys import Keyspace
from schooner.storage.redis import client
from schooner.storage.store import Store

SESSION_MS = 300


def test_sessions_do_not_lapse_while_redis_is_out_of_reach(redis_server, keyspace) -> None:
    asyncio.run(_sessions_outlast_trouble(redis_server.url, Keyspace(keyspace)))


async def _sessions_outlast_trouble(url: str, ks: Keyspace) -> None:
    redis = client.connect(url)
    me = BrokerInfo(1, "127.0.0.1", 9092)

    async def live() -> list[BrokerInfo]:
        return [me]

    health = RedisHealth()
    coordinator = GroupCoordinator(Store(redis, ks), me, live, GroupSettings(100, 60_000, 0), health)
    try:
        # A classic member, joined and synced, and a KIP-848 member: both then fall silent.
        joined = await coordinator.join(
            JoinRequest(
                "classic", "", None, "c", "h", SESSION_MS, SESSION_MS, "consumer", (("range", b""),), False
            )
        )
        assert joined.error == ErrorCode.none
        synced = await coordinator.sync("classic", joined.generation, joined.member_id, None, {})
        assert synced.error == ErrorCode.none
        await coordinator.consumer._group("kip848", create=True)
        group = await coordinator.group("kip848")
        assert isinstance(group, ConsumerGroup)
        group.members["m"] = ConsumerMember("m", session_ms=SESSION_MS, deadline=time.monotonic())

        def members() -> tuple[int, int]:
            classic, kip848 = coordinator.loaded("classic"), coordinator.loaded("kip848")
            assert classic is not None and kip848 is not None
            return len(classic.members), len(kip848.members)

        health.failed()  # this broker cannot reach Redis
        await asyncio.sleep(SESSION_MS / 1000 * 2)
        await coordinator.expire_sessions()
        assert members() == (1, 1), "sessions lapsed during the coordinator's own Redis trouble"
        health.reached()  # back: each member gets a whole session from now
        await coordinator.expire_sessions()
        assert members() == (1, 1)
        await asyncio.sleep(SESSION_MS / 1000 * 1.5)
        await coordinator.expire_sessions()
        assert members() == (0, 0), "members silent for a whole session after Redis came back stay"
    finally:
        coordinator.shutdown()
        await redis.aclose()
