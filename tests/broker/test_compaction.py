"""Compacted topics through the broker, with confluent-kafka: the sweep's compactor and Produce's checks."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic

from schooner.storage.keys import Keyspace
from tests.clients import Rec, confluent_consume, confluent_produce

pytestmark = pytest.mark.both_encodings


def _create(bootstrap: str, name: str, **config: str) -> None:
    """A compacted topic. Its dirty ratio is 0 unless given, so that the sweeps compact everything
    (at Kafka's 0.5 the last half of what a test produces could wait for more records)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    configs = {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0", **config}
    admin.create_topics([NewTopic(name, 1, 1, config=configs)])[name].result(10)


def _wait_for(check: Any, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while not check() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert check()


def test_latest_value_per_key_survives_and_tombstones_go(broker_factory, redis_client) -> None:
    broker = broker_factory(retention_check_ms=100)
    _create(broker.bootstrap, "table", **{"delete.retention.ms": "3000"})
    records = [Rec(b"k%d" % (i % 5), b"v%d" % i) for i in range(50)] + [Rec(b"k3", None)]
    delivered = confluent_produce(broker.bootstrap, "table", records)
    stream = Keyspace(broker.settings.keyspace).stream("table", 0)
    _wait_for(lambda: redis_client.xlen(stream) == 5)  # k0, k1, k2, k4 and k3's tombstone
    got = confluent_consume(broker.bootstrap, "table", 5, timeout=5)
    assert [(m.key(), m.value()) for m in got] == [
        (b"k0", b"v45"),
        (b"k1", b"v46"),
        (b"k2", b"v47"),
        (b"k4", b"v49"),
        (b"k3", None),
    ]
    assert [m.offset() for m in got] == [delivered[i].offset() for i in (45, 46, 47, 49, 50)]
    in_gap = confluent_consume(broker.bootstrap, "table", 5, offset=delivered[10].offset(), timeout=5)
    assert [m.offset() for m in in_gap] == [m.offset() for m in got]  # a position in a gap reads on
    _wait_for(lambda: redis_client.xlen(stream) == 4)  # the tombstone, delete.retention.ms later
    assert [m.key() for m in confluent_consume(broker.bootstrap, "table", 4, timeout=5)] == [
        b"k0",
        b"k1",
        b"k2",
        b"k4",
    ]


def test_records_without_a_key_are_refused(broker) -> None:
    _create(broker.bootstrap, "keyed")
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0, "retries": 0})
    errors: list[Any] = []
    producer.produce("keyed", value=b"no key", on_delivery=lambda err, msg: errors.append(err))
    producer.flush(10)
    assert [e.code() for e in errors] == [KafkaError.INVALID_RECORD]
    confluent_produce(broker.bootstrap, "keyed", [Rec(b"k", b"v")])  # a keyed record goes in


def test_produce_and_consume_during_compaction(broker_factory, redis_client) -> None:
    """Producing while the compactor runs loses no key's latest value, and a consumer reading all the
    while sees offsets only grow."""
    broker = broker_factory(retention_check_ms=50, compaction_step_entries=50)
    _create(broker.bootstrap, "changelog")
    latest: dict[bytes, tuple[int, bytes]] = {}
    done = threading.Event()

    def produce() -> None:
        producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 2})

        def delivered(err: Any, msg: Any) -> None:
            assert err is None
            latest[msg.key()] = (msg.offset(), msg.value())

        for i in range(6000):
            producer.produce("changelog", key=b"k%d" % (i % 40), value=b"%d" % i, on_delivery=delivered)
            if i % 500 == 499:
                producer.flush(10)
                time.sleep(0.1)  # let sweeps compact between bursts
        assert producer.flush(30) == 0
        done.set()

    writer = threading.Thread(target=produce)
    writer.start()
    consumer = Consumer(
        {"bootstrap.servers": broker.bootstrap, "group.id": "unused", "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition("changelog", 0, -2)])
    seen: dict[bytes, tuple[int, bytes]] = {}
    last = -1
    count = 0
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is None:
                if done.is_set() and max(o for o, _ in latest.values()) <= last:
                    break
                continue
            assert msg.error() is None, msg.error()
            assert msg.offset() > last
            last = msg.offset()
            count += 1
            seen[msg.key()] = (msg.offset(), msg.value())
    finally:
        consumer.close()
        writer.join(30)
    assert done.is_set()
    assert seen == latest
    stream = Keyspace(broker.settings.keyspace).stream("changelog", 0)
    _wait_for(lambda: redis_client.xlen(stream) == 40)
    after = confluent_consume(broker.bootstrap, "changelog", 40, timeout=5)
    assert {m.key(): (m.offset(), m.value()) for m in after} == latest


def test_lag_and_ratio_configs_are_described_and_checked(broker) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    _create(
        broker.bootstrap, "lags", **{"min.cleanable.dirty.ratio": "0.25", "max.compaction.lag.ms": "60000"}
    )
    resource = ConfigResource(ConfigResource.Type.TOPIC, "lags")
    configs = admin.describe_configs([resource])[resource].result(10)
    assert configs["min.cleanable.dirty.ratio"].value == "0.25"
    assert configs["max.compaction.lag.ms"].value == "60000"
    assert not configs["max.compaction.lag.ms"].is_default
    assert configs["min.compaction.lag.ms"].value == "0" and configs["min.compaction.lag.ms"].is_default

    def refused(future: Any) -> int:
        with pytest.raises(KafkaException) as raised:
            future.result(10)
        return raised.value.args[0].code()

    for bad in ({"min.cleanable.dirty.ratio": "1.5"}, {"min.compaction.lag.ms": "120000"}):
        topic = NewTopic(
            "bad-lags", 1, 1, config={"cleanup.policy": "compact", "max.compaction.lag.ms": "60000", **bad}
        )
        assert refused(admin.create_topics([topic])["bad-lags"]) == KafkaError.INVALID_CONFIG
    above = ConfigResource(
        ConfigResource.Type.TOPIC,
        "lags",
        incremental_configs=[
            ConfigEntry("min.compaction.lag.ms", "60001", incremental_operation=AlterConfigOpType.SET)
        ],
    )
    assert refused(admin.incremental_alter_configs([above])[above]) == KafkaError.INVALID_CONFIG
    assert admin.describe_configs([resource])[resource].result(10)["min.compaction.lag.ms"].value == "0"


def _read_all(bootstrap: str, topic: str, isolation: str, count: int) -> list[tuple[int, bytes, bytes]]:
    """(offset, key, value) of `count` records from the beginning, then a short wait for any more."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "unused",
            "enable.auto.commit": False,
            "isolation.level": isolation,
        }
    )
    consumer.assign([TopicPartition(topic, 0, -2)])
    out: list[tuple[int, bytes, bytes]] = []
    deadline = time.monotonic() + 10
    try:
        while time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is not None:
                assert msg.error() is None, msg.error()
                out.append((msg.offset(), msg.key(), msg.value()))
            if len(out) == count:
                deadline = min(deadline, time.monotonic() + 0.5)  # and nothing more
    finally:
        consumer.close()
    return out


def test_transactions_on_a_compacted_topic(broker_factory, redis_client) -> None:
    """Aborted records go, committed ones are compacted like any others, nothing at or after an open
    transaction's first record is touched, and markers go delete.retention.ms later, their aborted-index
    members with them. Both isolation levels then read the same records at their first offsets."""
    broker = broker_factory(retention_check_ms=100)
    _create(broker.bootstrap, "txn-table", **{"delete.retention.ms": "1000"})
    ks = Keyspace(broker.settings.keyspace)
    stream = ks.stream("txn-table", 0)
    offsets: dict[bytes, int] = {}

    def transaction(producer: Producer, records: list[tuple[bytes, bytes]], commit: bool | None) -> None:
        def delivered(err: Any, msg: Any) -> None:
            assert err is None
            offsets[msg.key() + b"=" + msg.value()] = msg.offset()

        producer.begin_transaction()
        for key, value in records:
            producer.produce("txn-table", key=key, value=value, on_delivery=delivered)
        producer.flush(15)
        if commit is not None:
            (producer.commit_transaction if commit else producer.abort_transaction)(15)

    def values() -> list[bytes]:
        return [fields[b"value"] for _, fields in redis_client.xrange(stream) if b"value" in fields]

    conf = {"bootstrap.servers": broker.bootstrap, "linger.ms": 5}
    one = Producer({**conf, "transactional.id": "tx-table-1"})
    two = Producer({**conf, "transactional.id": "tx-table-2"})
    one.init_transactions(15)
    two.init_transactions(15)
    transaction(one, [(b"k%d" % i, b"v1") for i in range(5)], True)
    transaction(one, [(b"k%d" % i, b"bad") for i in range(5)], False)
    transaction(two, [(b"k0", b"open")], None)  # stays open: the last stable offset
    transaction(one, [(b"k%d" % i, b"v3") for i in range(3)], True)
    _wait_for(lambda: b"bad" not in values())
    time.sleep(1)  # ten sweeps: still nothing at or after the open transaction's first record goes
    assert values() == [b"v1"] * 5 + [b"open"] + [b"v3"] * 3
    two.abort_transaction(15)
    _wait_for(lambda: redis_client.xlen(stream) == 5)  # less "open", k0-k2's v1 and the four markers
    assert values() == [b"v1", b"v1", b"v3", b"v3", b"v3"]
    assert not redis_client.exists(ks.aborted("txn-table", 0))
    assert not redis_client.exists(ks.compaction_aborts("txn-table", 0))
    latest = [(b"k3", b"v1"), (b"k4", b"v1"), (b"k0", b"v3"), (b"k1", b"v3"), (b"k2", b"v3")]
    expected = [(offsets[k + b"=" + v], k, v) for k, v in latest]
    assert _read_all(broker.bootstrap, "txn-table", "read_committed", 5) == expected
    assert _read_all(broker.bootstrap, "txn-table", "read_uncommitted", 5) == expected
