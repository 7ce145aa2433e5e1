"""The MQ library (schooner.mq) on a Redis Cluster: producers and consumers, blocking and asyncio, on 12
partitions spread over every primary; retries with backoff, dead letters and their replay; the admin."""

from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from prometheus_client import CollectorRegistry
from redis.cluster import key_slot

from schooner.mq import (
    Admin,
    AsyncConsumer,
    AsyncProducer,
    Consumer,
    ConsumerConfig,
    Fail,
    Message,
    OutgoingMessage,
    Producer,
    Retry,
    RetryPolicy,
)
from schooner.storage.keys import Keyspace
from schooner.storage.redis import calls, client
from schooner.storage.topics import metadata
from tests.broker.helpers import wait
from tests.cluster.helpers import primaries_of

PARTITIONS = 12
POLICY = RetryPolicy(max_attempts=3, base_delay_ms=100, multiplier=2.0, jitter=0.2)
CONFIG = ConsumerConfig(
    start="earliest", lease_ms=1500, renew_ms=300, poll_ms=10, retry_poll_ms=10, retry=POLICY
)


@pytest.fixture
def url(redis_cluster: Any) -> str:
    return str(redis_cluster.url)


@pytest.fixture
def admin(url: str, ks: Keyspace) -> Iterator[Admin]:
    a = Admin(url, keyspace=ks)
    yield a
    a.close()


def _topic(url: str, ks: Keyspace, name: str, partitions: int = PARTITIONS) -> None:
    blocking = client.connect_sync(url)
    try:
        calls.drive_sync(blocking, metadata.create(ks, name, partitions, {}, {}))
    finally:
        blocking.close()


def _consumer(url: str, ks: Keyspace, topic: str, group: str, handler: Any, name: str) -> Consumer:
    return Consumer(url, topic, group, handler, keyspace=ks, config=CONFIG, registry=CollectorRegistry(),
                    member_id=name)  # fmt: skip


def test_two_consumers_split_twelve_partitions_on_every_primary(
    url: str, ks: Keyspace, admin: Admin, cluster_client: redis.RedisCluster
) -> None:
    _topic(url, ks, "orders")
    producer = Producer(url, keyspace=ks, registry=CollectorRegistry())
    sent = producer.send_batch("orders", [OutgoingMessage(b"%d" % i, key=b"k%d" % i) for i in range(240)])
    producer.close()
    assert {s.partition for s in sent} == set(range(PARTITIONS))
    assert len(primaries_of(cluster_client, [ks.stream("orders", p) for p in range(PARTITIONS)])) == 3
    handled: list[tuple[int, int]] = []
    lock = threading.Lock()

    def handler(m: Message) -> None:
        with lock:
            handled.append((m.partition, m.offset))

    with _consumer(url, ks, "orders", "billing", handler, "a") as a:
        wait(lambda: len(a.partitions) == PARTITIONS, 10, "the first member holds every partition")
        with _consumer(url, ks, "orders", "billing", handler, "b") as b:
            wait(lambda: len(a.partitions) == len(b.partitions) == PARTITIONS // 2, 10, "a fair share each")
            wait(lambda: len(handled) >= len(sent), 30, "everything handled")
            owners = Counter(o.member for o in admin.owners("orders", "billing"))
            assert owners == {"a": PARTITIONS // 2, "b": PARTITIONS // 2}
            assert sorted(admin.members("orders", "billing")) == ["a", "b"]
            assert sum(lag.messages for lag in admin.lag("orders", "billing")) == 0
    assert sorted(handled) == sorted((s.partition, s.offset) for s in sent)
    stats = admin.topic_stats("orders")
    assert stats.length == len(sent) and len(stats.partitions) == PARTITIONS
    (group,) = admin.groups("orders")
    assert group.name == "billing" and all(g is not None and g.pending == 0 for g in group.partitions)
    # A lease sits in its partition's slot; the member registry and the group index share the topic's.
    for p in range(PARTITIONS):
        assert key_slot(ks.mq_lease("orders", p, "billing").encode()) == key_slot(
            ks.stream("orders", p).encode()
        )
    assert key_slot(ks.mq_members("orders", "billing").encode()) == key_slot(ks.mq_groups("orders").encode())


def test_retries_dead_letters_replay_and_admin(url: str, ks: Keyspace, admin: Admin) -> None:
    _topic(url, ks, "pay")
    producer = Producer(url, keyspace=ks, registry=CollectorRegistry())
    bad = [producer.send("pay", b"bad", partition=p) for p in (1, 6, 11)]
    fine = producer.send_batch("pay", [OutgoingMessage(b"fine", partition=p) for p in range(PARTITIONS)])
    producer.close()
    healthy = threading.Event()
    calls_at: dict[int, list[tuple[int, float]]] = {}

    def handler(m: Message) -> Fail | None:
        if m.value == b"bad":
            calls_at.setdefault(m.partition, []).append((m.attempt, time.monotonic()))
            if not healthy.is_set():
                return Fail("Declined", f"attempt {m.attempt}")
        return None

    with _consumer(url, ks, "pay", "billing", handler, "a"):
        wait(lambda: admin.dead_letter_count("pay") == len(bad), 20, "three dead letters")
        letters = admin.dead_letters("pay")
        assert sorted((d.origin_partition, d.origin_offset) for d in letters) == [
            (s.partition, s.offset) for s in bad
        ]
        assert {(d.attempts, d.error_type, d.error_message) for d in letters} == {
            (3, "Declined", "attempt 3")
        }
        for p in (1, 6, 11):
            (first, second, third) = calls_at[p]
            assert [first[0], second[0], third[0]] == [1, 2, 3]
            assert second[1] - first[1] >= 0.08 and third[1] - second[1] >= 0.16  # 100 ms, then 200 ms
        healthy.set()
        assert all(admin.replay("pay", d.letter_id) is True for d in letters)
        wait(lambda: all(len(calls_at[p]) == 4 for p in (1, 6, 11)), 20, "the replays handled")
        assert all(calls_at[p][-1][0] == 1 for p in (1, 6, 11))
        wait(lambda: sum(lag.messages for lag in admin.lag("pay", "billing")) == 0, 10, "nothing left")
    assert admin.dead_letter_count("pay") == 0 and admin.retries("pay") == []
    # Replays went back to their own partitions, after everything else there.
    stats = {s.partition: s for s in admin.topic_stats("pay").partitions}
    assert [stats[p].length for p in range(PARTITIONS)] == [
        1 + (p in (1, 6, 11)) * 4 for p in range(PARTITIONS)
    ]  # the fine record, and for a bad one the original, its two retries and its replay
    assert len(fine) == PARTITIONS
    removed = admin.trim("pay")
    assert sum(n for n, _ in removed.values()) == sum(s.length for s in stats.values())
    admin.delete_group("pay", "billing")
    assert admin.groups("pay") == []


def test_async_producer_and_consumer(url: str, ks: Keyspace, admin: Admin) -> None:
    _topic(url, ks, "events")
    done = threading.Event()
    handled: list[tuple[bytes | None, int]] = []

    async def handler(message: Message) -> Retry | None:
        handled.append((message.value, message.attempt))
        if len(handled) >= 61:
            done.set()
        return Retry(delay_ms=10) if message.value == b"7" and message.attempt == 1 else None

    async def body() -> list[int]:
        producer = AsyncProducer(url, keyspace=ks, registry=CollectorRegistry())
        sent = await producer.send_batch(
            "events", [OutgoingMessage(b"%d" % i, key=b"%d" % i) for i in range(60)]
        )
        await producer.close()
        assert len({s.partition for s in sent}) > 6
        consumer = AsyncConsumer(
            url, "events", "g", handler, keyspace=ks, config=CONFIG, registry=CollectorRegistry()
        )
        async with consumer:
            for _ in range(500):
                if done.is_set():
                    break
                await asyncio.sleep(0.02)
            return consumer.partitions

    assert asyncio.run(body()) == list(range(PARTITIONS))
    assert sorted(handled) == sorted([(b"%d" % i, 1) for i in range(60)] + [(b"7", 2)])
