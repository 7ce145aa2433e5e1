"""Transactions with librdkafka (confluent-kafka): commit, abort, read_committed and the LSO, fencing,
and offsets sent to the transaction."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic


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


def test_a_transaction_timeout_aborts_and_fences(broker_factory) -> None:
    broker = broker_factory(transaction_check_ms=100)
    _create(broker.bootstrap, "txn-timeout")
    producer = _txn_producer(broker.bootstrap, "tx-timeout", **{"transaction.timeout.ms": 1000})
    producer.begin_transaction()
    producer.produce("txn-timeout", value=b"hung")
    producer.flush(15)
    time.sleep(2.0)  # past the timeout: the coordinator aborts on its next check
    assert _consume(broker.bootstrap, "txn-timeout", "read_committed", 1, timeout=2) == []
    assert _consume(broker.bootstrap, "txn-timeout", "read_uncommitted", 1) == [b"hung"]
    with pytest.raises(KafkaException):
        producer.commit_transaction(10)  # the abort bumped the epoch: this producer is fenced


def _coordinator_port(bootstrap_port: int, transactional_id: str) -> int:
    from kio.schema.find_coordinator.v4.request import FindCoordinatorRequest

    from tests import wire

    reply = wire.call(
        bootstrap_port, FindCoordinatorRequest(key_type=1, coordinator_keys=(transactional_id,))
    )
    return int(reply.coordinators[0].port)


def test_coordinator_killed_mid_transaction_another_broker_commits(broker_factory) -> None:
    brokers = [broker_factory(process=True) for _ in range(2)]
    bootstrap = ",".join(b.bootstrap for b in brokers)
    _create(bootstrap, "txn-crash", partitions=2)
    # A transactional id whose coordinator is the first broker, which is then killed.
    transactional_id = next(
        f"tx-crash-{i}"
        for i in range(100)
        if _coordinator_port(brokers[1].port, f"tx-crash-{i}") == brokers[0].port
    )
    producer = _txn_producer(bootstrap, transactional_id)
    producer.begin_transaction()
    for i in range(10):
        producer.produce("txn-crash", value=b"r%d" % i, partition=i % 2)
    producer.flush(15)
    brokers[0].kill()
    producer.commit_transaction(30)  # librdkafka finds the new coordinator, which has the state
    survivor = brokers[1].bootstrap
    got = _consume(survivor, "txn-crash", "read_committed", 10, timeout=20, partitions=2)
    assert sorted(got) == sorted(b"r%d" % i for i in range(10))


def _committed_values(
    bootstrap: str, topic: str, partitions: int, expect: int, timeout: float
) -> list[bytes]:
    return _consume(bootstrap, topic, "read_committed", expect, timeout=timeout, partitions=partitions)


def test_consume_transform_produce_killed_and_restarted_is_exactly_once(broker, tmp_path) -> None:
    import signal
    import subprocess
    import sys
    from pathlib import Path

    _create(broker.bootstrap, "ctp-in", partitions=2)
    _create(broker.bootstrap, "ctp-out", partitions=2)
    inputs = [b"m%04d" % i for i in range(1500)]
    plain = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
    for i, v in enumerate(inputs):
        plain.produce("ctp-in", value=v, partition=i % 2)
    assert plain.flush(15) == 0
    root = Path(__file__).resolve().parents[3]
    args = [
        sys.executable,
        "-m",
        "tests.broker.txn_copier",
        broker.bootstrap,
        "ctp-in",
        "ctp-out",
        "ctp",
        "tx-ctp",
    ]

    def start(name: str) -> subprocess.Popen[bytes]:
        log = open(tmp_path / name, "wb")  # noqa: SIM115 - closed with the process
        return subprocess.Popen(args, cwd=root, stdout=log, stderr=subprocess.STDOUT)

    first = start("first.log")
    try:
        deadline = time.monotonic() + 60
        while (tmp_path / "first.log").read_bytes().count(b"committed") < 5:
            assert first.poll() is None, (tmp_path / "first.log").read_text()
            assert time.monotonic() < deadline, "the copier commits nothing"
            time.sleep(0.05)
        first.send_signal(signal.SIGKILL)  # mid-run: a transaction is likely open
        first.wait(10)
    finally:
        if first.poll() is None:
            first.kill()
    copied_before = _consume(
        broker.bootstrap, "ctp-out", "read_committed", len(inputs), timeout=1, partitions=2
    )
    assert 0 < len(copied_before) < len(inputs)

    second = start("second.log")
    try:
        got = _consume(broker.bootstrap, "ctp-out", "read_committed", len(inputs), timeout=90, partitions=2)
    finally:
        second.kill()
        second.wait(10)
    assert sorted(got) == sorted(b"copy-" + v for v in inputs)  # every input once: none lost, none twice
