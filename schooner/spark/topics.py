"""Creating the topics a pipeline writes to, straight in storage (no broker needed)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from ..storage import client, sync, topics
from ..storage.keys import Keyspace
from ..storage.topics import Topic, TopicExists
from .options import connection


def ensure_topic(
    options: Mapping[str, str], name: str, partitions: int = 1, configs: Mapping[str, str] | None = None
) -> Topic:
    """The topic `name`, created with `partitions` and topic configs if it does not exist yet.

    options carry redis.url and keyspace, as the data source's options do.
    """
    url, keyspace = connection(options)
    ks = Keyspace(keyspace)
    redis = client.connect_sync(url)
    try:
        found = sync.load_topic(redis, ks, name)
    finally:
        redis.close()
    return found or asyncio.run(_create(url, ks, name, partitions, dict(configs or {})))


async def _create(url: str, ks: Keyspace, name: str, partitions: int, configs: dict[str, str]) -> Topic:
    redis = client.connect(url)
    try:
        return await topics.create(redis, ks, name, partitions, configs, {})
    except TopicExists:
        found = await topics.load(redis, ks, name, {})
        assert found is not None
        return found
    finally:
        await redis.aclose()
