"""Partition sizes (DescribeLogDirs) from the append totals and the entry count, on a real redis-server."""

from __future__ import annotations

import time
from typing import Any

import pytest

from schooner.storage.keys import Keyspace
from schooner.storage.log import append as log_append
from schooner.storage.log.append import RecordBatch
from schooner.storage.log.sizes import partition_sizes
from schooner.storage.redis import client
from schooner.storage.redis.calls import drive_sync, run_sync
from schooner.storage.topic_partition import TopicPartition
from schooner.storage.topics import metadata


class R:
    def __init__(self, value: bytes) -> None:
        self.value = value
        self.key: bytes | None = None
        self.timestamp = int(time.time() * 1000)  # recent: a dense topic trims records by their time
        self.headers: list[tuple[str, bytes | None]] = []


@pytest.fixture
def redis(redis_server: Any) -> Any:
    r = client.connect_sync(redis_server.url)
    yield r
    r.close()


def test_sizes_grow_with_appends_and_shrink_with_the_log(redis: Any, keyspace: str) -> None:
    ks = Keyspace(keyspace)
    topic = drive_sync(redis, metadata.create(ks, "t", 3, {}, {}))
    tps = [TopicPartition("t", p) for p in range(3)]
    assert drive_sync(redis, partition_sizes(ks, tps)) == dict.fromkeys(tps, 0)

    batch = RecordBatch([R(b"v" * 90) for _ in range(4)], size_bytes=400)
    run_sync(redis, log_append.append(ks, topic, 0, batch))
    assert drive_sync(redis, partition_sizes(ks, tps[:1])) == {tps[0]: 400}
    run_sync(redis, log_append.append(ks, topic, 0, batch))
    redis.xadd(ks.stream("t", 1), {"value": b"from a plain Redis client"})  # no totals: its memory counts
    sizes = drive_sync(redis, partition_sizes(ks, tps))
    assert sizes[tps[0]] == 800 and sizes[tps[1]] == redis.memory_usage(ks.stream("t", 1)) > 0
    assert sizes[tps[2]] == 0

    redis.xtrim(ks.stream("t", 0), maxlen=2, approximate=False)  # 2 of 8 entries left: a quarter of the bytes
    assert drive_sync(redis, partition_sizes(ks, tps[:1])) == {tps[0]: 200}
