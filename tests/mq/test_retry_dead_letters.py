"""Handler outcomes: retries with backoff, dead letters with their error, replay, delete and purge."""

from __future__ import annotations

import time
from typing import Any

from prometheus_client import CollectorRegistry

from schooner.mq import (
    Admin,
    Consumer,
    ConsumerConfig,
    DeadLetter,
    Fail,
    Message,
    Producer,
    Retry,
    RetryPolicy,
)
from schooner.mq.message import ATTEMPT, GROUP
from schooner.storage.keys import Keyspace
from schooner.storage.log import entry
from schooner.storage.log import read as log_read
from schooner.storage.redis.calls import drive_sync

from .conftest import wait_until

POLICY = RetryPolicy(max_attempts=3, base_delay_ms=100, multiplier=2.0, jitter=0.2)
CONFIG = ConsumerConfig(start="earliest", lease_ms=1500, poll_ms=10, retry_poll_ms=10, retry=POLICY)


def consumer(
    url: str, ks: Keyspace, handler: Any, registry: CollectorRegistry, group: str = "billing"
) -> Consumer:
    return Consumer(url, "orders", group, handler, keyspace=ks, config=CONFIG, registry=registry)


def test_fails_twice_then_succeeds_with_backoff(
    url: str, ks: Keyspace, make_topic: Any, registry: CollectorRegistry
) -> None:
    make_topic("orders", 3)
    sent = Producer(url, keyspace=ks, registry=registry).send(
        "orders", b"pay", key=b"o-1", headers={"h": "1"}
    )
    calls: list[tuple[Message, float]] = []

    def handler(m: Message) -> None:
        calls.append((m, time.monotonic()))
        if m.attempt < 3:
            raise ValueError(f"boom {m.attempt}")

    with consumer(url, ks, handler, registry):
        wait_until(lambda: len(calls) >= 3)
        time.sleep(0.2)
    assert [m.attempt for m, _ in calls] == [1, 2, 3]
    assert {m.partition for m, _ in calls} == {sent.partition}
    assert [m.origin_offset for m, _ in calls] == [sent.offset] * 3
    assert calls[0][0].offset == sent.offset and calls[2][0].offset > calls[1][0].offset > sent.offset
    assert all(m.value == b"pay" and m.key == b"o-1" and m.headers == [("h", b"1")] for m, _ in calls)
    assert calls[1][0].last_error == ("ValueError", "boom 1") and calls[2][0].last_error == (
        "ValueError",
        "boom 2",
    )
    assert calls[1][0].first_failure_ms == calls[2][0].first_failure_ms is not None
    assert (
        calls[1][1] - calls[0][1] >= 0.08 and calls[2][1] - calls[1][1] >= 0.16
    )  # 100 ms, then 200 ms, +-20%
    labels = {"topic": "orders", "partition": str(sent.partition), "group": "billing"}
    assert registry.get_sample_value("schooner_mq_retried_total", labels) == 2
    assert registry.get_sample_value("schooner_mq_failed_total", labels) == 2
    admin = Admin(url, keyspace=ks)
    assert admin.dead_letter_count("orders") == 0 and admin.retries("orders") == []
    assert sum(lag.messages for lag in admin.lag("orders", "billing")) == 0


def test_always_failing_ends_in_dead_letters_and_replay_returns_it_to_its_partition(
    url: str, ks: Keyspace, redis: Any, make_topic: Any, registry: CollectorRegistry
) -> None:
    topic = make_topic("orders", 3)
    producer = Producer(url, keyspace=ks, registry=registry)
    sent = producer.send("orders", b"bad", key=b"o-2", headers=[("trace", b"t"), ("null", None)])
    producer.send("orders", b"fine", key=b"o-3")
    healthy = {"ok": False}
    billing: list[Message] = []
    audit: list[Message] = []

    def handler(m: Message) -> Fail | None:
        billing.append(m)
        return None if healthy["ok"] or m.value == b"fine" else Fail("CardDeclined", f"attempt {m.attempt}")

    admin = Admin(url, keyspace=ks)
    with consumer(url, ks, handler, registry), consumer(url, ks, audit.append, registry, group="audit"):
        wait_until(lambda: admin.dead_letter_count("orders") == 1)
        (letter,) = admin.dead_letters("orders")
        assert (letter.origin_topic, letter.origin_partition, letter.origin_offset) == (
            "orders",
            sent.partition,
            sent.offset,
        )
        assert (letter.group, letter.attempts, letter.error_type, letter.error_message) == (
            "billing",
            3,
            "CardDeclined",
            "attempt 3",
        )
        assert letter.first_failure_ms < letter.last_failure_ms
        assert (letter.key, letter.value, letter.headers) == (
            b"o-2",
            b"bad",
            [("trace", b"t"), ("null", None)],
        )
        assert [m.attempt for m in billing if m.value == b"bad"] == [1, 2, 3]
        healthy["ok"] = True
        assert admin.replay("orders", letter.letter_id) is True
        assert admin.replay("orders", letter.letter_id) is False  # gone: replayed once only
        wait_until(lambda: len([m for m in billing if m.value == b"bad"]) == 4)
        time.sleep(0.2)
    replayed = [m for m in billing if m.value == b"bad"][-1]
    assert (
        replayed.partition == sent.partition
        and replayed.attempt == 1
        and replayed.origin_offset == sent.offset
    )
    assert replayed.headers == [("trace", b"t"), ("null", None)]
    # The replay is a record of the origin partition that Kafka consumers read too, marked for billing.
    last = drive_sync(redis, log_read.read(ks, topic, sent.partition, replayed.offset, 1)).entries[0]
    headers = dict(entry.parse_fields(last[1])[3])
    assert headers[ATTEMPT] == b"1" and headers[GROUP] == b"billing"
    # The audit group saw each record once: not billing's retries nor the replay.
    assert sorted(m.value or b"" for m in audit) == [b"bad", b"fine"]
    assert admin.dead_letter_count("orders") == 0
    assert (
        registry.get_sample_value(
            "schooner_mq_dead_lettered_total",
            {"topic": "orders", "partition": str(sent.partition), "group": "billing"},
        )
        == 1
    )


def test_dead_letter_outcome_replay_elsewhere_delete_and_purge(
    url: str, ks: Keyspace, make_topic: Any, registry: CollectorRegistry
) -> None:
    make_topic("orders", 2)
    make_topic("parking", 4)
    producer = Producer(url, keyspace=ks, registry=registry)
    for i in range(4):
        producer.send("orders", b"%d" % i, key=b"key-%d" % i)

    def handler(m: Message) -> DeadLetter | Retry:
        if m.value == b"3":
            return Retry(delay_ms=1)
        return DeadLetter("Invalid", f"no {m.value!r}")

    admin = Admin(url, keyspace=ks)
    with consumer(url, ks, handler, registry):
        wait_until(lambda: admin.dead_letter_count("orders") == 4)
    letters = {d.value: d for d in admin.dead_letters("orders")}
    assert letters[b"0"].attempts == 1 and letters[b"0"].error_type == "Invalid"
    assert (letters[b"3"].attempts, letters[b"3"].error_type) == (3, "RetriesExhausted")
    moved = admin.replay("orders", letters[b"0"].letter_id, to_topic="parking")
    assert not isinstance(moved, bool) and moved.topic == "parking"
    seen: list[Message] = []
    with Consumer(url, "parking", "p", seen.append, keyspace=ks, config=CONFIG, registry=registry):
        wait_until(lambda: len(seen) == 1)
    assert (seen[0].key, seen[0].value, seen[0].partition) == (b"key-0", b"0", moved.partition)
    assert admin.delete_dead_letters("orders", [letters[b"1"].letter_id]) == 1
    assert sorted(d.value or b"" for d in admin.dead_letters("orders")) == [b"2", b"3"]
    assert admin.purge_dead_letters("orders") == 2
    assert admin.dead_letters("orders") == []


def test_an_entry_delivered_too_often_without_a_result_is_dead_lettered(
    url: str, ks: Keyspace, redis: Any, make_topic: Any, registry: CollectorRegistry
) -> None:
    make_topic("orders", 1)
    Producer(url, keyspace=ks, registry=registry).send("orders", b"poison", key=b"p")
    admin = Admin(url, keyspace=ks)
    admin.create_group("orders", "billing", start="earliest")
    stream = ks.stream("orders", 0)
    (entry_id,) = [e[0] for e in redis.execute_command("XRANGE", stream, "-", "+")]
    # Five members took it and died while handling it.
    redis.execute_command("XREADGROUP", "GROUP", "billing", "dead", "STREAMS", stream, ">")
    redis.execute_command("XCLAIM", stream, "billing", "dead", 0, entry_id, "RETRYCOUNT", 5)
    handled: list[Message] = []
    with consumer(url, ks, handled.append, registry):
        wait_until(lambda: admin.dead_letter_count("orders") == 1)
    (letter,) = admin.dead_letters("orders")
    assert (letter.error_type, letter.deliveries) == ("DeliveryLimitExceeded", 6)
    assert handled == [] and admin.pending("orders", "billing") == []
