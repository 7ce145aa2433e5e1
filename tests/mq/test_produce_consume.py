"""Producer and consumer basics: partitions, offsets, fields, order, start positions, sync and asyncio."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from schooner.mq import (
    Admin,
    AsyncConsumer,
    AsyncProducer,
    Consumer,
    ConsumerConfig,
    Message,
    OutgoingMessage,
    Producer,
    Retry,
    RetryPolicy,
    partition_for_key,
)
from schooner.storage.keys import Keyspace
from schooner.storage.log import entry
from schooner.storage.log import read as log_read
from schooner.storage.redis.calls import drive_sync
from schooner.storage.topics.metadata import UnknownTopic

from .conftest import wait_until

FAST = ConsumerConfig(start="earliest", lease_ms=1500, poll_ms=10, retry_poll_ms=20)

pytestmark = pytest.mark.both_encodings


def test_send_places_by_key_and_returns_kafka_offsets(
    url: str, ks: Keyspace, redis: Any, make_topic: Any, registry: CollectorRegistry
) -> None:
    topic = make_topic("orders", 4)
    producer = Producer(url, keyspace=ks, registry=registry)
    headers = [("trace", b"1"), ("trace", b"2"), ("none", None)]
    stamp = int(time.time() * 1000) - 60_000  # a given timestamp, recent enough for retention to keep
    sent = producer.send("orders", b"value", key=b"order-7", headers=headers, timestamp_ms=stamp)
    assert sent.partition == partition_for_key(b"order-7", 4)
    got = drive_sync(redis, log_read.read(ks, topic, sent.partition, sent.offset, 10))
    assert got.entries[0][0] == topic.offsets.id_text(sent.offset)
    assert entry.parse_fields(got.entries[0][1]) == (stamp, b"order-7", b"value", headers)
    assert got.high_watermark == sent.offset + 1
    explicit = producer.send("orders", None, key=None, partition=3)
    assert explicit.partition == 3
    assert entry.parse_fields(
        drive_sync(redis, log_read.read(ks, topic, 3, explicit.offset, 1)).entries[0][1]
    )[1:3] == (
        None,
        None,
    )
    produced = registry.get_sample_value(
        "schooner_mq_produced_total", {"topic": "orders", "partition": str(sent.partition), "group": ""}
    )
    assert produced == 1
    with pytest.raises(UnknownTopic):
        producer.send("missing", b"x")
    with pytest.raises(ValueError):
        producer.send("orders", b"x", partition=4)
    producer.close()


def test_send_batch_keeps_input_order_and_contiguous_offsets(
    url: str, ks: Keyspace, redis: Any, make_topic: Any, registry: CollectorRegistry
) -> None:
    topic = make_topic("orders", 3)
    producer = Producer(url, keyspace=ks, registry=registry)
    batch = [OutgoingMessage(b"v%d" % i, key=b"k%d" % (i % 5)) for i in range(2500)]
    sent = producer.send_batch("orders", batch)
    assert [s.partition for s in sent] == [partition_for_key(b"k%d" % (i % 5), 3) for i in range(2500)]
    for p in range(3):
        offsets = [s.offset for s in sent if s.partition == p]
        assert offsets == sorted(offsets) and len(set(offsets)) == len(offsets)
        stored = drive_sync(redis, log_read.read(ks, topic, p, offsets[0], 3000)).entries
        assert [entry.parse_fields(f)[2] for _, f in stored] == [
            m.value for m, s in zip(batch, sent, strict=True) if s.partition == p
        ]


def test_async_producer(
    url: str, ks: Keyspace, redis: Any, make_topic: Any, registry: CollectorRegistry
) -> None:
    topic = make_topic("orders", 2)

    async def body() -> list[Any]:
        producer = AsyncProducer(url, keyspace=ks, registry=registry)
        try:
            one = await producer.send("orders", "text", key="k")
            many = await producer.send_batch("orders", [OutgoingMessage(b"x", partition=1)] * 3)
            return [one, *many]
        finally:
            await producer.close()

    one, *many = asyncio.run(body())
    assert one.partition == partition_for_key(b"k", 2)
    assert (
        entry.parse_fields(
            drive_sync(redis, log_read.read(ks, topic, one.partition, one.offset, 1)).entries[0][1]
        )[2]
        == b"text"
    )
    assert [m.offset - many[0].offset for m in many] == [0, 1, 2]


def test_consumer_handles_everything_in_partition_order(
    url: str, ks: Keyspace, make_topic: Any, registry: CollectorRegistry
) -> None:
    make_topic("orders", 3)
    producer = Producer(url, keyspace=ks, registry=registry)
    sent = producer.send_batch("orders", [OutgoingMessage(b"%d" % i, key=b"%d" % i) for i in range(600)])
    seen: list[Message] = []
    consumer = Consumer(url, "orders", "billing", seen.append, keyspace=ks, config=FAST, registry=registry)
    with consumer:
        wait_until(lambda: len(seen) >= 600)
        assert consumer.partitions == [0, 1, 2]
    assert sorted((m.partition, m.offset) for m in seen) == sorted((s.partition, s.offset) for s in sent)
    for p in range(3):
        offsets = [m.offset for m in seen if m.partition == p]
        assert offsets == sorted(offsets)  # per-partition order
    assert all(m.attempt == 1 and m.deliveries == 1 for m in seen)
    assert registry.get_sample_value(
        "schooner_mq_acked_total", {"topic": "orders", "partition": "0", "group": "billing"}
    ) == sum(1 for s in sent if s.partition == 0)
    # A graceful stop released every lease and left the group.
    admin = Admin(url, keyspace=ks)
    assert [o.member for o in admin.owners("orders", "billing")] == [None, None, None]
    assert admin.members("orders", "billing") == []


def test_a_new_group_starts_at_the_end_unless_told_earliest(
    url: str, ks: Keyspace, make_topic: Any, registry: CollectorRegistry
) -> None:
    make_topic("orders", 1)
    producer = Producer(url, keyspace=ks, registry=registry)
    producer.send("orders", b"before")
    latest: list[bytes | None] = []
    earliest: list[bytes | None] = []
    config = ConsumerConfig(lease_ms=1500, poll_ms=10)
    with (
        Consumer(url, "orders", "late", lambda m: latest.append(m.value), keyspace=ks, config=config,
                 registry=registry) as late,
        Consumer(url, "orders", "early", lambda m: earliest.append(m.value), keyspace=ks, config=FAST,
                 registry=registry),
    ):  # fmt: skip
        wait_until(lambda: late.partitions == [0])
        producer.send("orders", b"after")
        wait_until(lambda: len(latest) == 1 and len(earliest) == 2)
    assert latest == [b"after"] and earliest == [b"before", b"after"]


def test_async_consumer_handles_and_retries(
    url: str, ks: Keyspace, make_topic: Any, registry: CollectorRegistry
) -> None:
    make_topic("orders", 2)
    Producer(url, keyspace=ks, registry=registry).send_batch(
        "orders", [OutgoingMessage(b"%d" % i, key=b"%d" % i) for i in range(50)]
    )
    handled: list[tuple[bytes | None, int]] = []
    done = threading.Event()

    async def handler(message: Message) -> Retry | None:
        await asyncio.sleep(0)
        handled.append((message.value, message.attempt))
        if len(handled) >= 51:
            done.set()
        return Retry(delay_ms=10) if message.value == b"7" and message.attempt == 1 else None

    async def body() -> list[int]:
        config = ConsumerConfig(
            start="earliest", lease_ms=1500, poll_ms=10, retry_poll_ms=20, retry=RetryPolicy(max_attempts=2)
        )
        consumer = AsyncConsumer(url, "orders", "g", handler, keyspace=ks, config=config, registry=registry)
        async with consumer:
            for _ in range(500):
                if done.is_set():
                    break
                await asyncio.sleep(0.02)
            return consumer.partitions

    assert asyncio.run(body()) == [0, 1]
    assert sorted(handled) == sorted([(b"%d" % i, 1) for i in range(50)] + [(b"7", 2)])
