"""Transactions through confluent-kafka: the last stable offset, the aborted transactions a read_committed
fetch lists, and the error a fenced producer gets, as Kafka gives them."""

from __future__ import annotations

import datetime
import time
from typing import Any

from confluent_kafka import KafkaException, Producer
from kio.schema.fetch.v12.request import FetchPartition, FetchRequest, FetchTopic

from tests.conformance.peers import (
    LATEST,
    Peer,
    create_topic,
    list_offsets,
    listing,
    plain,
    same_answers,
    unique,
)

READ_COMMITTED = 1


def _producer(peer: Peer, transactional_id: str) -> Producer:
    producer = Producer(
        {"bootstrap.servers": peer.bootstrap, "transactional.id": transactional_id, "linger.ms": 0}
    )
    producer.init_transactions(30)
    return producer


def _transaction(producer: Producer, topic: str, values: list[bytes], commit: bool) -> None:
    producer.begin_transaction()
    for v in values:
        producer.produce(topic, v, partition=0)
    producer.flush(30)
    if commit:
        producer.commit_transaction(30)
    else:
        producer.abort_transaction(30)


def _fetch(peer: Peer, topic: str, isolation: int) -> Any:
    request = FetchRequest(
        max_wait=datetime.timedelta(0),
        min_bytes=1,
        max_bytes=1 << 20,
        isolation_level=isolation,
        topics=(
            FetchTopic(
                topic=topic,
                partitions=(FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20),),
            ),
        ),
        forgotten_topics_data=(),
    )
    answer = plain(peer.call(request), drop=frozenset({"session_id", "records"}))
    (partition,) = answer["responses"][0]["partitions"]
    for aborted in partition["aborted_transactions"] or ():
        aborted.pop("producer_id")  # made up by each broker
    return partition


def _settled(peer: Peer, topic: str, isolation: int, timeout: float = 30) -> Any:
    """A fetch once the last transaction's marker is written: Kafka writes markers after EndTxn
    answers (Schooner before), so until then its LSO is still the transaction's first offset."""
    deadline = time.monotonic() + timeout
    while True:
        partition = _fetch(peer, topic, isolation)
        if partition["last_stable_offset"] == partition["high_watermark"]:
            return partition
        assert time.monotonic() < deadline, partition
        time.sleep(0.05)


def test_last_stable_offset_and_aborted_transactions(kafka: Peer, schooner: Peer) -> None:
    topic, txn = unique("txn"), unique("txn-id")

    def scenario(peer: Peer) -> Any:
        create_topic(peer, topic)
        producer = _producer(peer, txn)
        _transaction(producer, topic, [b"a", b"b"], commit=True)  # offsets 0-1, marker 2
        _transaction(producer, topic, [b"c"], commit=False)  # offset 3, marker 4
        seen = [_settled(peer, topic, READ_COMMITTED), _fetch(peer, topic, 0)]
        producer.begin_transaction()  # an open one holds the LSO at its first offset
        producer.produce(topic, b"open", partition=0)
        producer.flush(30)
        seen += [
            _fetch(peer, topic, READ_COMMITTED),
            list_offsets(peer, topic, LATEST),
            listing(peer, topic, [LATEST], isolation=READ_COMMITTED),
        ]
        producer.abort_transaction(30)
        seen.append(_settled(peer, topic, READ_COMMITTED))
        return seen

    same_answers(scenario, kafka, schooner)


def test_a_fenced_producer_is_told_so(kafka: Peer, schooner: Peer) -> None:
    topic, txn = unique("fenced"), unique("txn-id")

    def scenario(peer: Peer) -> Any:
        create_topic(peer, topic)
        old = _producer(peer, txn)
        _producer(peer, txn)  # the same id again: the first is fenced
        old.begin_transaction()
        old.produce(topic, b"late", partition=0)
        try:
            old.flush(10)
            old.commit_transaction(10)
        except KafkaException as exc:
            error = exc.args[0]
            return error.name(), error.fatal(), error.retriable()
        return "committed"

    same_answers(scenario, kafka, schooner)
