"""Admin views (stats, groups, lag, pending, owners, trimming, retries) and the Prometheus metrics."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from schooner.mq import Admin, Consumer, ConsumerConfig, Message, OutgoingMessage, Producer, Retry
from schooner.storage.keys import Keyspace

from .conftest import wait_until

CONFIG = ConsumerConfig(start="earliest", lease_ms=1500, poll_ms=10, retry_poll_ms=20)

pytestmark = pytest.mark.both_encodings


def test_topic_stats_lag_and_trimming(url: str, ks: Keyspace, redis: Any, make_topic: Any) -> None:
    topic = make_topic("orders", 2)
    producer = Producer(url, keyspace=ks, registry=CollectorRegistry())
    sent = producer.send_batch("orders", [OutgoingMessage(b"%d" % i, partition=0) for i in range(10)])
    admin = Admin(url, keyspace=ks)
    (stats,) = [t for t in admin.topics() if t.name == "orders"]
    p0, p1 = stats.partitions
    assert (p0.length, p0.first_offset, p0.last_offset, p0.high_watermark) == (
        10,
        sent[0].offset,
        sent[-1].offset,
        sent[-1].offset + 1,
    )
    assert (p1.length, p1.first_offset, p1.last_offset, p1.high_watermark) == (0, None, None, 0)
    admin.create_group("orders", "slow", start="earliest")
    time.sleep(0.05)
    lag = admin.lag("orders", "slow")
    assert [(x.messages, x.undelivered, x.pending, x.exact) for x in lag] == [
        (10, 10, 0, True), (0, 0, 0, True)
    ]  # fmt: skip
    assert lag[0].seconds >= 0.05 and lag[1].seconds == 0
    # A group that consumed 6: trimming stops at its first unconsumed entry, however far it is asked to go.
    stream = ks.stream("orders", 0)
    got = redis.execute_command("XREADGROUP", "GROUP", "slow", "c", "COUNT", 6, "STREAMS", stream, ">")
    ids = [e[0] for e in got[0][1]]
    redis.execute_command("XACK", stream, "slow", *ids[:4])  # 4 acked, 2 pending
    assert [x.messages for x in admin.lag("orders", "slow")] == [6, 0]
    removed = admin.trim("orders")
    assert removed[0] == (4, topic.offsets.offset_of_id(ids[4])) and removed[1][0] == 0
    assert admin.topic_stats("orders").partitions[0].first_offset == sent[4].offset
    assert admin.trim("orders", before_offset=sent[2].offset)[0][0] == 0  # below what is gone already
    assert {g.name for g in admin.groups("orders")} == {"slow"}
    admin.delete_group("orders", "slow")
    assert admin.groups("orders") == []
    assert admin.trim("orders")[0][0] == 6  # no group left to protect anything


def test_pending_sorted_by_idle_time_or_deliveries(
    url: str, ks: Keyspace, redis: Any, make_topic: Any
) -> None:
    make_topic("orders", 1)
    Producer(url, keyspace=ks, registry=CollectorRegistry()).send_batch(
        "orders", [OutgoingMessage(b"%d" % i) for i in range(3)]
    )
    admin = Admin(url, keyspace=ks)
    admin.create_group("orders", "g", start="earliest")
    stream = ks.stream("orders", 0)

    def read(consumer: str, count: int) -> list[bytes]:
        args = ["GROUP", "g", consumer, "COUNT", count, "STREAMS", stream, ">"]
        got = redis.execute_command("XREADGROUP", *args)
        return [e[0] for e in got[0][1]]

    (a,) = read("old", 1)
    time.sleep(0.05)
    b, c = read("new", 2)
    redis.execute_command("XCLAIM", stream, "g", "new", 0, c, "RETRYCOUNT", 4, "IDLE", 10)
    by_idle = admin.pending("orders", "g")
    assert [p.entry_id.encode() for p in by_idle] == [a, c, b] and by_idle[0].consumer == "old"
    by_count = admin.pending("orders", "g", sort="deliveries", limit=2)
    assert [(p.entry_id.encode(), p.deliveries) for p in by_count] == [(c, 4), (a, 1)]


def test_owners_retries_and_metrics(url: str, ks: Keyspace, make_topic: Any) -> None:
    make_topic("orders", 2)
    registry = CollectorRegistry()
    producer = Producer(url, keyspace=ks, registry=registry)
    producer.send_batch("orders", [OutgoingMessage(b"%d" % i, partition=i % 2) for i in range(10)])
    handled: list[Message] = []

    def handler(m: Message) -> Retry | None:
        handled.append(m)
        return Retry(delay_ms=60_000) if m.value == b"3" else None

    admin = Admin(url, keyspace=ks)
    consumer = Consumer(
        url, "orders", "g", handler, keyspace=ks, config=CONFIG, registry=registry, member_id="m1"
    )
    with consumer:
        wait_until(lambda: len(handled) == 10 and len(admin.retries("orders")) == 1)
        owners = admin.owners("orders", "g")
        assert [o.member for o in owners] == ["m1", "m1"] and all(0 < o.expires_in_ms <= 1500 for o in owners)
        (retry,) = admin.retries("orders")
        assert (retry.partition, retry.group) == (1, "g") and retry.due_ms > time.time() * 1000 + 50_000
        assert admin.move_due_retries("orders") == 0  # not due yet

        def sample(name: str, partition: int, group: str = "g") -> float | None:
            labels = {"topic": "orders", "partition": str(partition), "group": group}
            return registry.get_sample_value(name, labels)

        assert sample("schooner_mq_produced_total", 0, "") == 5
        assert sample("schooner_mq_consumed_total", 0) == sample("schooner_mq_consumed_total", 1) == 5
        assert sample("schooner_mq_acked_total", 0) == 5 and sample("schooner_mq_acked_total", 1) == 4
        assert sample("schooner_mq_retried_total", 1) == 1
        assert sample("schooner_mq_handle_seconds_count", 1) == 5
        assert sample("schooner_mq_leased_partitions", 0) == sample("schooner_mq_leased_partitions", 1) == 1
        assert sample("schooner_mq_in_flight", 0) == 0
        wait_until(lambda: sample("schooner_mq_lag_messages", 0) == 0, timeout=5)
    assert sample("schooner_mq_leased_partitions", 0) == 0  # released on stop
    # Lag gauges count what the group has not acked, and how old the oldest of it is.
    registry2 = CollectorRegistry()
    producer.send("orders", b"late", partition=0)
    time.sleep(0.3)
    release = threading.Event()
    lagging = Consumer(url, "orders", "g", lambda m: release.wait(10), keyspace=ks, registry=registry2,
                       config=ConsumerConfig(lease_ms=1500, renew_ms=100, poll_ms=10))  # fmt: skip
    lagging.start()
    try:
        labels = {"topic": "orders", "partition": "0", "group": "g"}
        wait_until(lambda: registry2.get_sample_value("schooner_mq_in_flight", labels) == 1, timeout=5)
        wait_until(lambda: registry2.get_sample_value("schooner_mq_lag_messages", labels) == 1, timeout=5)
        assert (registry2.get_sample_value("schooner_mq_lag_seconds", labels) or 0) >= 0.3
    finally:
        release.set()
        lagging.stop()


def test_trimming_a_tiered_topic_stops_at_what_is_archived(
    url: str, ks: Keyspace, redis: Any, make_topic: Any
) -> None:
    """The MQ library's trim never removes records the cold tier does not hold yet (archived_end)."""
    make_topic("tiered", 1, **{"remote.storage.enable": "true"})
    producer = Producer(url, keyspace=ks, registry=CollectorRegistry())
    sent = producer.send_batch("tiered", [OutgoingMessage(b"%d" % i, partition=0) for i in range(10)])
    admin = Admin(url, keyspace=ks)
    assert admin.trim("tiered")[0][0] == 0  # nothing archived: nothing goes
    redis.hset(ks.partition_state("tiered", 0), "archived_end", sent[6].offset)  # as the archiver records it
    removed, bound = admin.trim("tiered")[0]
    assert (removed, bound) == (6, sent[6].offset)
    assert admin.topic_stats("tiered").partitions[0].first_offset == sent[6].offset
