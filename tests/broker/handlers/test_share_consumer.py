"""Share groups (KIP-932) with confluent-kafka's ShareConsumer (librdkafka 2.16): several consumers on one
partition, release, reject, lock expiry, the delivery count limit with a dead-letter topic, and a broker
restart. Each consumer polls in its own thread (tests/broker/share_rig.py)."""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

from confluent_kafka import AcknowledgeType, Consumer

from tests.broker.helpers import share_describe
from tests.broker.share_rig import (
    Delivery,
    ShareRunner,
    create_topic,
    produce,
    set_group_configs,
    wait_for,
)

LOCK_MS = 2000


def _assigned(broker: Any, group: str) -> int:
    """Members of the share group with a partition assigned (ShareGroupDescribe)."""
    (described,) = share_describe(broker.port, group)
    return sum(1 for m in described.members if m.assignment.topic_partitions)


def _values(n: int) -> list[bytes]:
    return [b"v%03d" % i for i in range(n)]


def test_consumers_share_one_partition_and_every_record_is_delivered_once(broker_factory: Any) -> None:
    # A window of 10 in-flight records makes the three consumers take turns on the one partition.
    broker = broker_factory(share_partition_max_record_locks=10)
    create_topic(broker.bootstrap, "sq-many")
    set_group_configs(broker.bootstrap, "sq-many-g", share_auto_offset_reset="earliest")

    def slow_accept(d: Delivery) -> Any:
        time.sleep(0.005)
        return AcknowledgeType.ACCEPT

    runners = [
        ShareRunner(f"c{i}", broker.bootstrap, "sq-many-g", ["sq-many"], slow_accept).start()
        for i in range(3)
    ]
    # Every consumer has the partition before the first record lands.
    wait_for(lambda: _assigned(broker, "sq-many-g") == 3, 30, "three members with the partition")
    produce(broker.bootstrap, "sq-many", _values(300))
    seen = lambda: {d.offset for r in runners for d in r.deliveries}  # noqa: E731
    wait_for(lambda: len(seen()) == 300, 60, "all 300 records delivered")
    time.sleep(0.5)
    for r in runners:
        r.stop()
    deliveries = [d for r in runners for d in r.deliveries]
    assert all(r.errors == [] for r in runners), [r.errors for r in runners]
    assert sorted(d.offset for d in deliveries) == list(range(300))  # each exactly once
    assert {d.value for d in deliveries} == set(_values(300))
    assert all(d.delivery_count == 1 for d in deliveries)
    per_consumer = Counter(d.consumer for d in deliveries)
    assert len(per_consumer) >= 2, per_consumer


def test_a_released_record_returns_with_count_two_and_a_rejected_one_never(broker_factory: Any) -> None:
    broker = broker_factory()
    create_topic(broker.bootstrap, "sq-ack")
    set_group_configs(broker.bootstrap, "sq-ack-g", share_auto_offset_reset="earliest")

    def decide(d: Delivery) -> Any:
        if d.value == b"release-me" and d.delivery_count == 1:
            return AcknowledgeType.RELEASE
        if d.value == b"reject-me":
            return AcknowledgeType.REJECT
        return AcknowledgeType.ACCEPT

    runner = ShareRunner("c", broker.bootstrap, "sq-ack-g", ["sq-ack"], decide).start()
    produce(broker.bootstrap, "sq-ack", [b"release-me", b"reject-me", b"fine"])
    wait_for(lambda: len(runner.deliveries) >= 4, 30, "the released record came back")
    time.sleep(1.0)
    runner.stop()
    got = [(d.value, d.delivery_count) for d in runner.deliveries]
    assert runner.errors == []
    assert sorted(got) == [(b"fine", 1), (b"reject-me", 1), (b"release-me", 1), (b"release-me", 2)]


def test_records_held_by_a_consumer_that_stops_polling_go_to_another_after_the_lock(
    broker_factory: Any,
) -> None:
    broker = broker_factory(share_record_lock_duration_ms=LOCK_MS, share_min_record_lock_duration_ms=1000)
    create_topic(broker.bootstrap, "sq-lock")
    set_group_configs(broker.bootstrap, "sq-lock-g", share_auto_offset_reset="earliest")
    produce(broker.bootstrap, "sq-lock", _values(5))
    holder = ShareRunner("holder", broker.bootstrap, "sq-lock-g", ["sq-lock"], lambda d: None,
                         close_when_stopped=False).start()  # fmt: skip
    wait_for(lambda: len(holder.deliveries) >= 1, 30, "the holder got records")
    held = {d.offset: d.at for d in holder.deliveries}
    other = ShareRunner("other", broker.bootstrap, "sq-lock-g", ["sq-lock"]).start()
    wait_for(lambda: {d.offset for d in other.deliveries} >= set(held), 30, "the held records moved")
    other.stop()
    assert holder.errors == [] and other.errors == []
    for d in other.deliveries:
        if d.offset in held:
            assert d.delivery_count == 2
            assert d.at - held[d.offset] >= (LOCK_MS - 300) / 1000  # not before the lock ran out


def test_a_record_that_always_fails_stops_at_the_limit_and_lands_in_the_dlq(broker_factory: Any) -> None:
    broker = broker_factory()
    create_topic(broker.bootstrap, "sq-poison")
    set_group_configs(
        broker.bootstrap,
        "sq-poison-g",
        share_auto_offset_reset="earliest",
        share_delivery_count_limit="3",
        **{
            "errors.deadletterqueue.topic.name": "dlq.sq-poison",
            "errors.deadletterqueue.copy.record.enable": "true",
        },
    )

    def decide(d: Delivery) -> Any:
        return AcknowledgeType.RELEASE if d.value == b"poison" else AcknowledgeType.ACCEPT

    runner = ShareRunner("c", broker.bootstrap, "sq-poison-g", ["sq-poison"], decide).start()
    produce(broker.bootstrap, "sq-poison", [b"poison", b"fine"])
    wait_for(lambda: sum(d.value == b"poison" for d in runner.deliveries) >= 3, 30, "three deliveries")
    time.sleep(1.5)
    runner.stop()
    assert runner.errors == []
    assert [d.delivery_count for d in runner.deliveries if d.value == b"poison"] == [1, 2, 3]

    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "dlq-reader",
                         "auto.offset.reset": "earliest"})  # fmt: skip
    consumer.subscribe(["dlq.sq-poison"])
    letters = []
    deadline = time.time() + 20
    while not letters and time.time() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and not msg.error():
            letters.append(msg)
    consumer.close()
    assert len(letters) == 1
    headers = dict(letters[0].headers())
    assert letters[0].value() == b"poison"
    assert headers["dlq.origin.topic"] == b"sq-poison" and headers["dlq.origin.offset"] == b"0"
    assert headers["dlq.group.id"] == b"sq-poison-g"


def test_a_broker_restart_loses_no_acknowledgement(broker_factory: Any) -> None:
    first = broker_factory()
    create_topic(first.bootstrap, "sq-restart")
    set_group_configs(first.bootstrap, "sq-restart-g", share_auto_offset_reset="earliest")
    produce(first.bootstrap, "sq-restart", _values(10))
    runner = ShareRunner("before", first.bootstrap, "sq-restart-g", ["sq-restart"]).start()
    wait_for(lambda: len(runner.deliveries) == 10, 30, "the first ten")
    runner.stop()  # commit_sync: every acknowledgement answered
    first.stop()

    second = broker_factory()
    produce(second.bootstrap, "sq-restart", [b"after-%d" % i for i in range(5)])
    after = ShareRunner("after", second.bootstrap, "sq-restart-g", ["sq-restart"]).start()
    wait_for(lambda: len(after.deliveries) >= 5, 30, "the five new ones")
    time.sleep(1.0)
    after.stop()
    assert after.errors == []
    assert sorted(d.value for d in after.deliveries) == [b"after-%d" % i for i in range(5)]
    assert sorted(d.offset for d in after.deliveries) == list(range(10, 15))
