"""The Store's own logic beyond single round trips: an append that finds its partition unstamped."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from schooner.storage.keys import Keyspace
from schooner.storage.log.append import APPENDED, UNKNOWN_PARTITION, RecordBatch
from schooner.storage.log.entry import Record
from schooner.storage.redis import client
from schooner.storage.store import Store


def test_an_unstamped_partition_is_stamped_and_the_append_retried(redis_server: Any, keyspace: str) -> None:
    """A create interrupted after registering the topic, before stamping: the first append repairs it.
    A topic deleted meanwhile stays refused."""

    async def body() -> None:
        store = Store(client.connect(redis_server.url), Keyspace(keyspace))
        try:
            topic = await store.create_topic("t", 2, {}, {})
            await store.redis.hdel(store.ks.partition_state("t", 1), "topic_id")  # as if never stamped
            batch = RecordBatch([Record(int(time.time() * 1000), b"k", b"v")])
            result = await store.append(topic, 1, batch)
            assert result.status == APPENDED
            assert await store.redis.xlen(store.ks.stream("t", 1)) == 1
            assert (
                await store.redis.hget(store.ks.partition_state("t", 1), "topic_id") == str(topic.id).encode()
            )
            await store.delete_topic("t", topic.id)
            assert (await store.append(topic, 0, batch)).status == UNKNOWN_PARTITION
            assert not await store.redis.exists(store.ks.stream("t", 0))
        finally:
            await store.close()

    asyncio.run(body())
