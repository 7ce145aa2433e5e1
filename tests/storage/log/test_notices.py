"""Wake-up notices of the append and marker scripts: PUBLISH on the appended channel on one Redis, SPUBLISH
on each partition's sharded channel on a Redis Cluster, heard through ShardedAppendNotices."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from schooner.storage.keys import Keyspace
from schooner.storage.log import append as log_append
from schooner.storage.log import transactions
from schooner.storage.log.append import APPENDED, RecordBatch
from schooner.storage.log.entry import Record
from schooner.storage.log.notices import ShardedAppendNotices
from schooner.storage.redis import calls, client
from schooner.storage.topic_partition import TopicPartition
from schooner.storage.topics import metadata
from schooner.storage.topics.metadata import Topic

PARTITIONS = 12


def _batch(value: bytes, **producer: Any) -> RecordBatch:
    return RecordBatch([Record(int(time.time() * 1000), None, value)], **producer)


async def _until(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, what
        await asyncio.sleep(0.01)


def test_one_redis_scripts_publish_on_the_appended_channel(redis_server, keyspace) -> None:
    async def main() -> None:
        redis = client.connect(redis_server.url)
        ks = Keyspace(keyspace)
        pubsub = redis.pubsub()
        try:
            t = await calls.drive(redis, metadata.create(ks, "t", 2, {}, {}))
            await pubsub.subscribe(ks.appended_channel)
            assert (await pubsub.get_message(timeout=5))["type"] == "subscribe"
            assert (await calls.run(redis, log_append.append(ks, t, 1, _batch(b"a")))).status == APPENDED
            await calls.run(redis, log_append.append(ks, t, 0, _batch(b"quiet"), notify=False))
            txn = _batch(b"in a txn", producer_id=7, producer_epoch=0, base_sequence=0)
            in_txn = log_append.append(ks, t, 0, txn, transactional_id="x")
            assert (await calls.run(redis, in_txn)).status == APPENDED
            marker = transactions.write_marker(ks, t, 0, 7, 0, True)
            assert (await calls.run(redis, marker)).status == transactions.MARKER_WRITTEN
            heard = []
            while (message := await pubsub.get_message(timeout=0.5)) is not None:
                heard.append((message["channel"], message["data"]))
            channel = ks.appended_channel.encode()
            assert heard == [(channel, b"t:1"), (channel, b"t:0"), (channel, b"t:0")]
        finally:
            await pubsub.aclose()
            await redis.aclose()

    asyncio.run(main())


async def _spread_topic(redis: Any, ks: Keyspace) -> tuple[Topic, dict[str, list[int]]]:
    """A topic of 12 partitions, and its partitions by the primary that holds them (all three hold some)."""
    t = await calls.drive(redis, metadata.create(ks, "spread", PARTITIONS, {}, {}))
    by_node: dict[str, list[int]] = {}
    for p in range(PARTITIONS):
        by_node.setdefault(redis.get_node_from_key(ks.stream("spread", p)).name, []).append(p)
    assert len(by_node) == 3, by_node
    return t, by_node


def test_cluster_hears_only_the_partitions_it_wants_each_from_its_primary(redis_cluster, keyspace) -> None:
    async def main() -> None:
        redis = client.connect(redis_cluster.url)
        ks = Keyspace(keyspace)
        woken: list[TopicPartition] = []
        notices = ShardedAppendNotices(redis, ks, quiet=5, linger=0.3, tick=0.05)
        listener = asyncio.create_task(notices.run(woken.append))
        broadcast = redis.pubsub()  # the one-Redis channel must stay silent on a cluster
        try:
            t, by_node = await _spread_topic(redis, ks)
            await broadcast.subscribe(ks.appended_channel)
            wanted = [TopicPartition("spread", ps[0]) for ps in by_node.values()]  # one per primary
            for tp in wanted:
                notices.want(tp)
            # Each confirmed subscription wakes its partition (an append just before it went unheard).
            await _until(lambda: set(woken) == set(wanted), 5, f"subscriptions confirmed: {woken}")
            assert notices.subscribed == set(wanted)
            for p in range(PARTITIONS):
                result = await calls.run(redis, log_append.append(ks, t, p, _batch(b"x"), sharded=True))
                assert result.status == APPENDED
            await _until(lambda: sum(notices.heard.values()) == 3, 5, f"heard {notices.heard}")
            await asyncio.sleep(0.2)  # nothing more arrives
            assert notices.heard == {tp: 1 for tp in wanted}
            assert woken.count(wanted[0]) == 2

            # A transaction marker notifies as well.
            first = wanted[0].partition
            txn = _batch(b"t", producer_id=9, producer_epoch=0, base_sequence=0)
            await calls.run(redis, log_append.append(ks, t, first, txn, sharded=True, transactional_id="tx"))
            marker = transactions.write_marker(ks, t, first, 9, 0, False, sharded=True)
            assert (await calls.run(redis, marker)).status == transactions.MARKER_WRITTEN
            await _until(lambda: notices.heard[wanted[0]] == 3, 5, f"marker heard: {notices.heard}")

            # A partition without waiters is dropped after the linger, and heard no more.
            notices.idle(wanted[1])
            await _until(lambda: wanted[1] not in notices.subscribed, 5, "idle partition unsubscribed")
            await calls.run(redis, log_append.append(ks, t, wanted[1].partition, _batch(b"y"), sharded=True))
            await calls.run(redis, log_append.append(ks, t, wanted[2].partition, _batch(b"y"), sharded=True))
            await _until(lambda: notices.heard[wanted[2]] == 2, 5, "still subscribed partition heard")
            await asyncio.sleep(0.2)
            assert notices.heard[wanted[1]] == 1
            # Wanted again: subscribed again.
            notices.want(wanted[1])
            await _until(lambda: wanted[1] in notices.subscribed, 5, "subscribed again")
            await calls.run(redis, log_append.append(ks, t, wanted[1].partition, _batch(b"z"), sharded=True))
            await _until(lambda: notices.heard[wanted[1]] == 2, 5, "heard again")
            assert await broadcast.get_message(timeout=0.2) is not None  # the subscribe confirmation
            assert await broadcast.get_message(timeout=0.5) is None
        finally:
            listener.cancel()
            await asyncio.wait([listener], timeout=5)
            await broadcast.aclose()
            await redis.aclose()
        assert listener.cancelled()

    asyncio.run(main())
