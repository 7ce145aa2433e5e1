"""Transactions with librdkafka (confluent-kafka): commit, abort, read_committed and the LSO, fencing,
and offsets sent to the transaction."""

from __future__ import annotations

import time
import uuid
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

import pytest


def _create(bootstrap: str, topic: str, partitions: int = 1) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(10)


def _txn_producer(bootstrap: str, transactional_id: str, **extra: Any) -> Producer:
    conf = {"bootstrap.servers": bootstrap, "transactional.id": transactional_id, "linger.ms": 5}
    conf.update(extra)
    producer = Producer(conf)
    producer.init_transactions(15)
    return producer


def _consume(bootstrap: str, topic: str, isolation: str, expect: int, timeout: float = 10.0,
             partitions: int = 1) -> list[bytes]:  # fmt: skip
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"g-{uuid.uuid4().hex}",
            "isolation.level": isolation,
            "enable.auto.commit": False,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    values: list[bytes] = []
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline and len(values) < expect:
            msg = consumer.poll(0.2)
            if msg is None or msg.error():
                continue
            values.append(msg.value())
        # a little longer, to see that nothing more arrives
        end = time.monotonic() + 0.5
        while time.monotonic() < end:
            msg = consumer.poll(0.1)
            if msg is not None and not msg.error():
                values.append(msg.value())
    finally:
        consumer.close()
    return values


def test_committed_visible_aborted_hidden_from_read_committed(broker) -> None:
    _create(broker.bootstrap, "txn-basic")
    producer = _txn_producer(broker.bootstrap, "tx-basic")
    producer.begin_transaction()
    for i in range(3):
        producer.produce("txn-basic", value=b"c%d" % i)
    producer.commit_transaction(15)
    producer.begin_transaction()
    for i in range(2):
        producer.produce("txn-basic", value=b"a%d" % i)
    producer.flush(15)
    producer.abort_transaction(15)
    producer.begin_transaction()
    producer.produce("txn-basic", value=b"c3")
    producer.commit_transaction(15)

    committed = _consume(broker.bootstrap, "txn-basic", "read_committed", 4)
    assert committed == [b"c0", b"c1", b"c2", b"c3"]
    uncommitted = _consume(broker.bootstrap, "txn-basic", "read_uncommitted", 6)
    assert uncommitted == [b"c0", b"c1", b"c2", b"a0", b"a1", b"c3"]


def test_open_transaction_holds_read_committed_at_the_lso(broker) -> None:
    _create(broker.bootstrap, "txn-lso")
    plain = Producer({"bootstrap.servers": broker.bootstrap})
    plain.produce("txn-lso", value=b"before")
    plain.flush(10)
    producer = _txn_producer(broker.bootstrap, "tx-lso")
    producer.begin_transaction()
    producer.produce("txn-lso", value=b"in-txn")
    producer.flush(15)
    plain.produce("txn-lso", value=b"after")  # appended later, outside the transaction
    plain.flush(10)

    assert _consume(broker.bootstrap, "txn-lso", "read_committed", 1) == [b"before"]
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "lso-probe",
                         "isolation.level": "read_committed"})  # fmt: skip
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition("txn-lso", 0), timeout=10)
        assert (low, high) == (0, 1)  # read_committed: the high end is the LSO
    finally:
        consumer.close()

    producer.commit_transaction(15)
    assert _consume(broker.bootstrap, "txn-lso", "read_committed", 3) == [b"before", b"in-txn", b"after"]


def test_a_second_producer_with_the_same_id_fences_the_first(broker) -> None:
    _create(broker.bootstrap, "txn-fence")
    first = _txn_producer(broker.bootstrap, "tx-fence")
    first.begin_transaction()
    first.produce("txn-fence", value=b"zombie")
    first.flush(15)
    second = _txn_producer(broker.bootstrap, "tx-fence")  # aborts the first's transaction
    second.begin_transaction()
    second.produce("txn-fence", value=b"live")
    second.commit_transaction(15)

    with pytest.raises(KafkaException) as caught:
        first.commit_transaction(15)
    error: KafkaError = caught.value.args[0]
    assert error.fatal() or error.code() in (KafkaError._FENCED, KafkaError.PRODUCER_FENCED)
    assert _consume(broker.bootstrap, "txn-fence", "read_committed", 1) == [b"live"]
