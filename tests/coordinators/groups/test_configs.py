"""GroupConfigs, each broker's cache of the group configs, against a real redis-server: an alter through
one broker shows there at once and through the others within the cache time; concurrent misses share
one read; a bad alter stores nothing."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from schooner.config import Settings
from schooner.coordinators.groups.configs import CACHE_SECONDS, GroupConfigs
from schooner.storage.keys import Keyspace
from schooner.storage.redis import client
from schooner.storage.store import Store
from schooner.storage.topics.config import InvalidConfig

SETTINGS = Settings()


def test_an_alter_shows_at_once_here_and_within_the_cache_time_elsewhere(
    redis_server: Any, keyspace: str
) -> None:
    async def scenario() -> None:
        store = Store(client.connect(redis_server.url), Keyspace(keyspace))
        here, there = GroupConfigs(store, SETTINGS), GroupConfigs(store, SETTINGS)
        try:
            assert (await here.share("g")).auto_offset_reset == "latest"
            assert (await there.share("g")).auto_offset_reset == "latest"  # now cached there
            await here.alter("g", {"share.auto.offset.reset": "earliest"})
            changed_at = time.monotonic()
            assert (await here.share("g")).auto_offset_reset == "earliest"
            assert (await there.share("g")).auto_offset_reset == "latest"  # read less than a second ago
            # The other broker keeps its cached entry for at most the cache time, then reads again.
            while (await there.share("g")).auto_offset_reset != "earliest":
                assert time.monotonic() - changed_at < CACHE_SECONDS + 0.5
                await asyncio.sleep(0.05)
            assert (await there.share("other")).auto_offset_reset == "latest"
        finally:
            await store.close()

    asyncio.run(scenario())


def test_concurrent_misses_share_one_read_and_a_hit_is_cached(redis_server: Any, keyspace: str) -> None:
    async def scenario() -> None:
        store = Store(client.connect(redis_server.url), Keyspace(keyspace))
        configs = GroupConfigs(store, SETTINGS)
        try:
            await configs.alter("g", {"share.delivery.count.limit": "3"})
            got = await asyncio.gather(*(configs.share("g") for _ in range(20)))
            assert all(g is got[0] for g in got) and got[0].delivery_count_limit == 3
            assert await configs.share("g") is got[0]  # from the cache
            configs.forget("g")
            again = await configs.share("g")
            assert again is not got[0] and again == got[0]
        finally:
            await store.close()

    asyncio.run(scenario())


def test_a_caller_cancelled_during_a_read_does_not_fail_the_others(redis_server: Any, keyspace: str) -> None:
    async def scenario() -> None:
        store = Store(client.connect(redis_server.url), Keyspace(keyspace))
        configs = GroupConfigs(store, SETTINGS)
        try:
            first = asyncio.ensure_future(configs.share("g"))
            second = asyncio.ensure_future(configs.share("g"))
            await asyncio.sleep(0)  # both are waiting on the one read
            first.cancel()
            assert (await second).auto_offset_reset == "latest"
            assert first.cancelled()
        finally:
            await store.close()

    asyncio.run(scenario())


def test_alter_checks_the_whole_result_and_stores_nothing_when_it_is_bad(
    redis_server: Any, keyspace: str
) -> None:
    async def scenario() -> None:
        store = Store(client.connect(redis_server.url), Keyspace(keyspace))
        configs = GroupConfigs(store, SETTINGS)
        try:
            await configs.alter("g", {"share.session.timeout.ms": "50000"})
            for sets, deletes in (
                ({"share.heartbeat.interval.ms": "15000", "share.delivery.count.limit": "99"}, ()),
                ({"share.isolation.level": "read_committed"}, ("no.such.config",)),
                ({"share.isolation.level": None}, ()),
            ):
                with pytest.raises(InvalidConfig):
                    await configs.alter("g", sets, deletes)
            assert await store.group_configs("g") == {"share.session.timeout.ms": "50000"}

            await configs.alter("g", {"share.delivery.count.limit": "4"}, validate_only=True)
            assert await store.group_configs("g") == {"share.session.timeout.ms": "50000"}

            await configs.alter("g", {"share.delivery.count.limit": "4"}, ["share.session.timeout.ms"])
            assert await store.group_configs("g") == {"share.delivery.count.limit": "4"}
            await configs.alter("g", {"share.isolation.level": "read_committed"}, replace=True)
            assert await store.group_configs("g") == {"share.isolation.level": "read_committed"}
            assert (await configs.share("g")).read_committed
            assert await configs.delete("g")
            assert not (await configs.share("g")).read_committed
        finally:
            await store.close()

    asyncio.run(scenario())


def test_names_written_by_hand_are_dropped_by_the_next_alter(redis_server: Any, keyspace: str) -> None:
    async def scenario() -> None:
        store = Store(client.connect(redis_server.url), Keyspace(keyspace))
        configs = GroupConfigs(store, SETTINGS)
        try:
            by_hand = {"retired.config": "1", "consumer.session.timeout.ms": "50000"}
            await store.alter_group_configs("g", by_hand)
            assert await configs.consumer_timeouts("g") == (50000, 5000)
            await configs.alter("g", {"consumer.heartbeat.interval.ms": "6000"})
            assert await store.group_configs("g") == {
                "consumer.session.timeout.ms": "50000",
                "consumer.heartbeat.interval.ms": "6000",
            }
        finally:
            await store.close()

    asyncio.run(scenario())
