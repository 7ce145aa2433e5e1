"""Records with old or future timestamps, through real clients: retention.ms removes old ones only in the
periodic retention pass (never while they are appended), and KIP-937's configs refuse them at produce."""

from __future__ import annotations

import time
import uuid
from typing import Any

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource, NewTopic
from kio.schema.errors import ErrorCode

from tests.broker.helpers import wait
from tests.clients import confluent_consume
from tests.wire import call, produce_request, record_batch

T = 10  # seconds for any one client call
HOUR_MS = 3_600_000
LONG_MAX = str(2**63 - 1)


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _create(bootstrap: str, name: str, **configs: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, 1, 1, config=configs)])[name].result(T)


def _produce(bootstrap: str, topic: str, stamped: list[tuple[bytes, int]]) -> list[Any]:
    """Each (value, timestamp) with its own delivery report: the error, or the delivered message."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "retries": 0})
    reports: list[Any] = []
    for value, ts in stamped:
        producer.produce(topic, value=value, timestamp=ts, partition=0,
                         on_delivery=lambda err, msg: reports.append(err or msg))  # fmt: skip
        assert producer.flush(T) == 0
    return reports


def _ends_and_lookups(bootstrap: str, topic: str, targets: list[int]) -> tuple[tuple[int, int], list[int]]:
    """(log start, high watermark) from ListOffsets, and the offset ListOffsets finds for each timestamp."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False})
    try:
        ends = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=T, cached=False)
        # One lookup per call: librdkafka keeps one of several asked for the same partition.
        found = [consumer.offsets_for_times([TopicPartition(topic, 0, ts)], timeout=T)[0] for ts in targets]
        return ends, [tp.offset for tp in found]
    finally:
        consumer.close()


def test_a_backfill_older_than_retention_stays_until_a_retention_pass(broker_factory) -> None:
    """Two records stamped in 1970 on a topic that keeps an hour: the append keeps them, so they are read
    and found by time; the next retention pass, as in Kafka, removes them."""
    first = broker_factory()  # Kafka's 5-minute pass: none runs during this test
    topic = _name("backfill")
    _create(first.bootstrap, topic, **{"retention.ms": str(HOUR_MS), "schooner.offset.encoding": "dense"})
    reports = _produce(first.bootstrap, topic, [(b"first", 1_000), (b"second", 2_000)])
    assert [r.offset() for r in reports] == [0, 1]

    got = confluent_consume(first.bootstrap, topic, 2)
    assert [(m.value(), m.timestamp()[1]) for m in got] == [(b"first", 1_000), (b"second", 2_000)]
    ends, found = _ends_and_lookups(first.bootstrap, topic, [0, 1_500, 2_001])
    assert ends == (0, 2)
    assert found == [0, 1, -1]  # -1: no record at or after that time

    # A second broker of the deployment with a short interval: its pass applies retention.ms.
    broker_factory(log_retention_check_interval_ms=100)
    wait(lambda: _ends_and_lookups(first.bootstrap, topic, [])[0] == (2, 2), 20, "the retention pass")
    assert _ends_and_lookups(first.bootstrap, topic, [0])[1] == [-1]


def test_kip_937_refuses_timestamps_outside_the_window(broker_factory) -> None:
    broker = broker_factory()
    now = int(time.time() * 1000)
    old, new = _name("before"), _name("diff")
    _create(broker.bootstrap, old, **{"message.timestamp.before.max.ms": str(HOUR_MS)})
    # The deprecated config (Kafka before 4.0) bounds both sides that are left at their defaults.
    _create(broker.bootstrap, new, **{"message.timestamp.difference.max.ms": "60000"})

    refused = _produce(broker.bootstrap, old, [(b"1970", 1_000)])
    refused += _produce(broker.bootstrap, old, [(b"next year", now + 365 * 24 * HOUR_MS)])  # after: 1 h
    refused += _produce(broker.bootstrap, new, [(b"two minutes old", now - 120_000)])
    assert [r.code() for r in refused] == [KafkaError.INVALID_TIMESTAMP] * 3, refused
    # librdkafka keeps the broker's error message to itself: the wire shows it.
    for topic, ts, config in [
        (old, 1_000, "message.timestamp.before.max.ms"),
        (old, now + 2 * HOUR_MS, "message.timestamp.after.max.ms"),
        (new, now - 120_000, "message.timestamp.difference.max.ms"),
    ]:
        answer = call(broker.port, produce_request(topic, record_batch([b"v"], ts))).responses[0]
        partition = answer.partition_responses[0]
        assert partition.error_code == ErrorCode.invalid_timestamp
        assert f"timestamp {ts}" in (partition.error_message or "") and config in partition.error_message
        assert [e.batch_index for e in partition.record_errors] == [0]  # KIP-467 names the record

    kept = _produce(broker.bootstrap, old, [(b"half an hour old", now - HOUR_MS // 2), (b"now", now)])
    assert [r.offset() for r in kept] == [0, 1]  # nothing of the refused batches was appended
    kept = _produce(broker.bootstrap, new, [(b"ten seconds ahead", now + 10_000)])
    assert [r.offset() for r in kept] == [0]


def test_kip_937_does_not_apply_to_log_append_time_topics(broker) -> None:
    topic = _name("lat")
    _create(broker.bootstrap, topic, **{"message.timestamp.type": "LogAppendTime",
                                        "message.timestamp.before.max.ms": "0"})  # fmt: skip
    reports = _produce(broker.bootstrap, topic, [(b"1970", 1_000)])
    assert reports[0].error() is None and reports[0].offset() == 0


def test_kip_937_configs_are_described_and_validated(broker) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    topic = _name("described")
    _create(broker.bootstrap, topic, **{"message.timestamp.before.max.ms": "86400000"})
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    configs = admin.describe_configs([resource])[resource].result(T)
    before, after = configs["message.timestamp.before.max.ms"], configs["message.timestamp.after.max.ms"]
    assert (before.value, before.source) == ("86400000", ConfigSource.DYNAMIC_TOPIC_CONFIG.value)
    assert (after.value, after.source) == (str(HOUR_MS), ConfigSource.DEFAULT_CONFIG.value)  # Kafka 4's
    assert {s.name for s in after.synonyms.values()} >= {"log.message.timestamp.after.max.ms"}
    difference = configs["message.timestamp.difference.max.ms"]
    assert (difference.value, difference.source) == (LONG_MAX, ConfigSource.DEFAULT_CONFIG.value)

    bad = NewTopic(_name("bad"), 1, 1, config={"message.timestamp.after.max.ms": "-1"})
    error = admin.create_topics([bad])[bad.topic].exception(T)
    assert error is not None and error.args[0].code() == KafkaError.INVALID_CONFIG
    assert "message.timestamp.after.max.ms" in error.args[0].str()
