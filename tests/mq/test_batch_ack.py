"""The consume path's batching: a fetched batch goes to the handler in one Handle effect, and its acks
ride on the member's next round trip (one XACK a partition), sent only after the handlers succeeded."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from prometheus_client import CollectorRegistry, Histogram

from schooner.mq import Consumer, ConsumerConfig, Fail, Message, OutgoingMessage, Producer, Retry, RetryPolicy
from schooner.mq.engine import Batch, Effect, Handle
from schooner.mq.message import decode
from schooner.mq.metrics import observe_all
from schooner.storage.keys import Keyspace
from schooner.storage.mq import queue
from schooner.storage.mq.queue import Delivery
from schooner.storage.offsets import DENSE_OFFSETS
from schooner.storage.redis import calls
from schooner.storage.topics import metadata

from .conftest import wait_until

CONFIG = ConsumerConfig(start="earliest", lease_ms=5000, poll_ms=5, retry_poll_ms=20,
                        retry=RetryPolicy(max_attempts=3, base_delay_ms=0, jitter=0.0))  # fmt: skip


QUIET = ConsumerConfig(start="earliest", lease_ms=5000, poll_ms=5, retry_poll_ms=60_000)  # no retry moves


def recording(work: Generator[Effect, Any, Any], batches: list[Batch]) -> Generator[Effect, Any, Any]:
    """Passes a member's effects through, keeping every Batch."""
    reply: Any = None
    while True:
        try:
            effect = work.send(reply)
        except StopIteration as done:
            return done.value
        if isinstance(effect, Batch):
            batches.append(effect)
        reply = yield effect


def pending_count(redis: Any, ks: Keyspace, topic: str) -> int:
    return len(calls.run_sync(redis, queue.pending(ks, topic, 0, "g")))


def test_a_batch_is_acked_with_one_xack_in_the_next_round_trip_after_its_handlers(
    url: str, ks: Keyspace, redis: Any, make_topic: Any, registry: CollectorRegistry
) -> None:
    make_topic("orders", 1)
    Producer(url, keyspace=ks, registry=registry).send_batch(
        "orders", [OutgoingMessage(b"%d" % i, partition=0) for i in range(10)]
    )
    handled: list[bytes | None] = []
    consumer = Consumer(url, "orders", "g", lambda m: handled.append(m.value), keyspace=ks, config=QUIET,
                        registry=registry)  # fmt: skip
    engine = consumer._engine(calls.run_sync(redis, metadata.load(ks, "orders", {})))
    try:
        consumer.drive(engine.start())
        batches: list[Batch] = []
        while len(handled) < 10:
            consumer.drive(recording(engine.step(), batches))
        # Every handler has run, and nothing is acked yet: the acks wait for the next round trip.
        assert handled == [b"%d" % i for i in range(10)]
        assert not any(c.args and c.args[0] == "XACK" for b in batches for c in b.calls)
        assert pending_count(redis, ks, "orders") == 10
        batches.clear()
        consumer.drive(recording(engine.step(), batches))
        first = batches[0].calls
        assert first[0].args[0] == "XACK" and len(first[0].args[3:]) == 10  # one XACK with the batch
        assert "queue_read" in {c.script for c in first[1:]}  # riding on the next read
        assert pending_count(redis, ks, "orders") == 0
        assert (
            registry.get_sample_value(
                "schooner_mq_acked_total", {"topic": "orders", "partition": "0", "group": "g"}
            )
            == 10
        )
        assert (
            registry.get_sample_value(
                "schooner_mq_handle_seconds_count", {"topic": "orders", "partition": "0", "group": "g"}
            )
            == 10
        )
        consumer.drive(engine.stop())
    finally:
        consumer.redis.close()


def test_a_failure_inside_a_batch_keeps_order_and_acks_only_the_successes(
    url: str, ks: Keyspace, redis: Any, make_topic: Any, registry: CollectorRegistry
) -> None:
    make_topic("orders", 1)
    Producer(url, keyspace=ks, registry=registry).send_batch(
        "orders", [OutgoingMessage(b"%d" % i, partition=0) for i in range(8)]
    )
    seen: list[tuple[bytes | None, int]] = []

    def handler(m: Message) -> Fail | Retry | None:
        seen.append((m.value, m.attempt))
        if m.value == b"3" and m.attempt == 1:
            return Fail("Flaky", "once")
        if m.value == b"5" and m.attempt == 1:
            raise ValueError("boom")
        return None

    with Consumer(url, "orders", "g", handler, keyspace=ks, config=CONFIG, registry=registry):
        wait_until(lambda: len(seen) == 10 and pending_count(redis, ks, "orders") == 0)
    firsts = [v for v, attempt in seen if attempt == 1]
    assert firsts == [b"%d" % i for i in range(8)]  # in order, the failures did not stop the batch
    assert sorted(v for v, attempt in seen if attempt == 2) == [b"3", b"5"]
    labels = {"topic": "orders", "partition": "0", "group": "g"}
    assert registry.get_sample_value("schooner_mq_failed_total", labels) == 2
    assert registry.get_sample_value("schooner_mq_retried_total", labels) == 2
    # 6 first attempts and the 2 retries succeeded; the failed originals were acked by their retries.
    assert registry.get_sample_value("schooner_mq_acked_total", labels) == 8


def messages(n: int) -> list[Message]:
    return [decode("t", 0, DENSE_OFFSETS, Delivery(b"0-%d" % (i + 1), [b"value", b"v"], 1)) for i in range(n)]


def test_the_driver_hands_back_once_maintenance_is_due_and_stops_at_a_failure(
    url: str, ks: Keyspace, registry: CollectorRegistry
) -> None:
    calls_made: list[bytes | None] = []

    def handler(m: Message) -> Retry | None:
        calls_made.append(m.value)
        return Retry() if m.offset == 3 else None

    ticks = iter(range(100))
    consumer = Consumer(url, "t", "g", handler, keyspace=ks, registry=registry)
    try:
        # The clock reads 0 first, then 1, 2, ...: with until=2 two messages are handled.
        done = consumer._handle(Handle(messages(5), 2.0, lambda: float(next(ticks))))
        assert (done.seconds, done.failure, len(calls_made)) == ([1.0, 1.0], None, 2)
        done = consumer._handle(Handle(messages(6), 1e9, lambda: 0.0))
        assert (len(done.seconds), done.failure) == (4, Retry())  # offset 3 is the fourth: it stops there
        assert consumer._handle(Handle(messages(3), 0.0, lambda: 0.0)).seconds == []  # due at once
    finally:
        consumer.redis.close()


def test_a_plain_entry_decodes_to_the_message_the_constructor_builds() -> None:
    fields = [b"key", b"k", b"value", b"v", b"timestamp", b"1700000000000"]
    got = decode("t", 2, DENSE_OFFSETS, Delivery(b"0-8", fields, 3))
    assert got == Message("t", 2, 7, b"k", b"v", 1_700_000_000_000, [], 1, 3, 7, entry_id=b"0-8")
    assert type(got) is Message


def test_observe_all_equals_observing_one_by_one() -> None:
    registry = CollectorRegistry()
    one = Histogram("one", "", registry=registry)
    many = Histogram("many", "", registry=registry)
    amounts = [0.0, 0.004, 0.005, 0.0051, 0.3, 0.3, 2.0, 9.0, 100.0, 0.00001]
    for a in amounts:
        one.observe(a)
    observe_all(many, amounts)
    observe_all(many, [])

    def samples(h: Histogram) -> dict[str, tuple[dict[str, str], float]]:
        return {
            s.name.split("_", 1)[1] + s.labels.get("le", ""): (s.labels, s.value)
            for s in h.collect()[0].samples
            if not s.name.endswith("_created")
        }

    assert samples(many) == samples(one)
    assert samples(one)["count"][1] == len(amounts)
