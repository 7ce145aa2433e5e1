"""The MQ consumer on records a transactional Kafka producer (confluent-kafka) wrote through the broker:
read committed by default (no marker, no aborted record, nothing past an open transaction until it
commits), and read_uncommitted on request."""

from __future__ import annotations

import time
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from prometheus_client import CollectorRegistry

from schooner.mq import Consumer, ConsumerConfig, Message
from schooner.storage.keys import Keyspace
from tests.clients import consume, from_beginning

from .conftest import wait_until

pytestmark = pytest.mark.both_encodings


def _transactional_log(bootstrap: str, topic: str) -> tuple[Producer, Producer]:
    """p0; an aborted transaction (a0, a1); a committed one (c0, c1); an open one (o0); then p1, written
    outside the transaction after o0. Returns the plain producer and the one with the open transaction."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(10)
    plain = Producer({"bootstrap.servers": bootstrap})
    plain.produce(topic, value=b"p0")
    plain.flush(10)
    txn = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"{topic}-tx", "linger.ms": 5})
    txn.init_transactions(15)
    txn.begin_transaction()
    txn.produce(topic, value=b"a0")
    txn.produce(topic, value=b"a1")
    txn.flush(15)
    txn.abort_transaction(15)
    txn.begin_transaction()
    txn.produce(topic, value=b"c0")
    txn.produce(topic, value=b"c1")
    txn.commit_transaction(15)
    txn.begin_transaction()
    txn.produce(topic, value=b"o0")
    txn.flush(15)
    plain.produce(topic, value=b"p1")
    plain.flush(10)
    return plain, txn


def _consumer(
    url: str, keyspace: str, topic: str, group: str, seen: list[Message], **config: Any
) -> Consumer:
    cfg = ConsumerConfig(start="earliest", lease_ms=2000, poll_ms=10, **config)
    return Consumer(url, topic, group, seen.append, keyspace=Keyspace(keyspace), config=cfg,
                    registry=CollectorRegistry())  # fmt: skip


def test_mq_consumers_read_committed_by_default(broker: Any, redis_server: Any, keyspace: str) -> None:
    _, txn = _transactional_log(broker.bootstrap, "txn-mq")
    committed: list[Message] = []
    everything: list[Message] = []
    with (
        _consumer(redis_server.url, keyspace, "txn-mq", "committed", committed),
        _consumer(redis_server.url, keyspace, "txn-mq", "dirty", everything, isolation="read_uncommitted"),
    ):
        wait_until(lambda: len(committed) >= 3 and len(everything) >= 7)
        time.sleep(0.5)  # time enough to hand over anything more it would
        assert [m.value for m in committed] == [b"p0", b"c0", b"c1"]
        assert [m.value for m in everything] == [b"p0", b"a0", b"a1", b"c0", b"c1", b"o0", b"p1"]

        txn.commit_transaction(15)
        wait_until(lambda: len(committed) >= 5)
        time.sleep(0.3)
    assert [m.value for m in committed] == [b"p0", b"c0", b"c1", b"o0", b"p1"]
    assert len(everything) == 7  # the commit marker is not a message
    # The same records at the same offsets as a Kafka consumer's (confluent-kafka reads committed).
    kafka = consume(broker.bootstrap, from_beginning("txn-mq", 1), 5)
    assert [(m.value, m.offset) for m in committed] == [(k.value(), k.offset()) for k in kafka]


def test_isolation_must_be_a_kafka_level() -> None:
    with pytest.raises(ValueError, match="isolation"):
        ConsumerConfig(isolation="committed")
