"""Topic configs with effect at the broker: retention of idle topics, LogAppendTime."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.broker.helpers import wait
from tests.clients import Rec, confluent_consume, confluent_produce

pytestmark = pytest.mark.both_encodings


def test_idle_topic_is_trimmed_by_the_sweeper(broker_factory, redis_client) -> None:
    from schooner.storage.keys import Keyspace

    broker = broker_factory(log_retention_check_interval_ms=200)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("idle", 1, 1, config={"retention.ms": "500"})])["idle"].result(10)
    confluent_produce(broker.bootstrap, "idle", [Rec(None, b"old")] * 5)
    stream = Keyspace(broker.settings.keyspace).stream("idle", 0)
    assert redis_client.xlen(stream) == 5
    deadline = time.monotonic() + 10
    while redis_client.xlen(stream) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert redis_client.xlen(stream) == 0  # no write came, the sweeper trimmed it


def test_log_append_time_topic(broker) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("lat", 1, 1, config={"message.timestamp.type": "LogAppendTime"})])[
        "lat"
    ].result(10)
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    before = int(time.time() * 1000)
    producer.produce("lat", value=b"v", timestamp=1_000)
    producer.flush(10)
    (msg,) = confluent_consume(broker.bootstrap, "lat", 1)
    kind, ts = msg.timestamp()
    assert kind == 2  # TIMESTAMP_LOG_APPEND_TIME
    assert ts >= before - 1000


def test_time_retention_goes_by_record_time_on_dense_topics(broker_factory, offset_encoding: str) -> None:
    """Dense topics apply retention.ms to record timestamps, as Kafka does: a batch stamped two hours
    ago is past a one-hour retention, and the next retention pass removes it (the append keeps it).
    Timestamp-encoded topics go by append time (the ID), so there the pass keeps it."""
    broker = broker_factory(log_retention_check_interval_ms=100)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("aged", 1, 1, config={"retention.ms": "3600000"})])["aged"].result(10)
    now = int(time.time() * 1000)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    for value, ts in ((b"stale", now - 7_200_000), (b"fresh", now)):
        producer.produce("aged", value=value, timestamp=ts)
        assert producer.flush(10) == 0
    if offset_encoding == "dense":
        wait(lambda: _log_start(broker.bootstrap, "aged") == 1, 20, "the retention pass")
    kept = [b"fresh"] if offset_encoding == "dense" else [b"stale", b"fresh"]
    got = confluent_consume(broker.bootstrap, "aged", len(kept))  # from the log start, in order
    assert [m.value() for m in got] == kept


def _log_start(bootstrap: str, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused"})
    try:
        low, _ = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10, cached=False)
        return int(low)
    finally:
        consumer.close()
