"""The topic cache writes through (broker/metadata/topic_cache.py): each change drops the cached topic
itself, so the next load sees it, with no forget by hand. In-process, against the real redis-server
fixture."""

from __future__ import annotations

import asyncio

import pytest

from schooner.broker.health import RedisHealth
from schooner.broker.metadata.topic_cache import TopicCache
from schooner.storage.keys import Keyspace
from schooner.storage.redis import client
from schooner.storage.store import Store
from schooner.storage.topics.metadata import TopicExists


def test_changes_through_the_cache_are_seen_at_once(redis_server, keyspace) -> None:
    asyncio.run(_changes(redis_server.url, Keyspace(keyspace)))


async def _changes(url: str, ks: Keyspace) -> None:
    redis = client.connect(url)
    try:
        store = Store(redis, ks)
        cache = TopicCache(store, {}, RedisHealth())
        cache.notices(True)  # the long TTL: only the cache's own drops make it read again
        created = await cache.create("t", 1, {})
        assert await cache.load("t") is created  # cached as created
        assert await cache.by_id(created.id) is created
        with pytest.raises(TopicExists):
            await cache.create("t", 1, {})
        await cache.alter("t", set_configs={"retention.ms": "1000"})
        assert (await cache.load("t")).overrides == {"retention.ms": "1000"}
        old = await cache.alter("t", partitions=3)
        await cache.stamp_partitions("t", created.id, range(old, 3))
        assert (await cache.load("t")).partitions == 3
        await store.update_topic("t", partitions=4)  # around the cache, as another broker would
        assert (await cache.load("t")).partitions == 3  # cached until a notice says otherwise
        cache.forget("t")  # the notice
        assert (await cache.load("t")).partitions == 4
        await cache.delete("t", created.id)
        assert await cache.load("t") is None
    finally:
        await redis.aclose()
