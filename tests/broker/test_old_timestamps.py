"""Records with old timestamps, through real clients: retention.ms removes them only in the periodic
retention pass, never while they are appended."""

from __future__ import annotations

import uuid
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.broker.helpers import wait
from tests.clients import confluent_consume

T = 10  # seconds for any one client call
HOUR_MS = 3_600_000


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
