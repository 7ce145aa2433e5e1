"""Consumers of a tiered topic read every record from offset 0 after Redis holds only the last second:
a confluent-kafka consumer group, kcat, and read_committed consumers across both tiers."""

from __future__ import annotations

import time
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer

from tests.broker.helpers import wait
from tests.broker.tiering.conftest import group_read, hot_state, tiered
from tests.clients import SAMPLE, Rec, kcat

pytestmark = pytest.mark.both_encodings


def _produce_for(bootstrap: str, topic: str, seconds: float) -> list[tuple[Rec, int]]:
    """Keeps producing SAMPLE's records (every shape of key, value and header) with timestamps of their
    own, in batches, for `seconds`; what was produced, with each record's timestamp."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    sent: list[tuple[Rec, int]] = []
    base = int(time.time() * 1000) - 10_000  # old enough to leave Redis at once, recent for retention
    end = time.monotonic() + seconds
    while time.monotonic() < end or len(sent) < 200:
        for rec in SAMPLE * 5:
            stamp = base + len(sent)
            producer.produce(
                topic, value=rec.value, key=rec.key, headers=list(rec.headers) or None, timestamp=stamp
            )
            sent.append((rec, stamp))
        producer.flush(10)
        time.sleep(0.1)
    assert producer.flush(30) == 0
    return sent


def _wait_archived_and_trimmed(redis_client: Any, keyspace: str, topic: str, produced: int) -> None:
    """Until the cold tier holds all and Redis keeps a small tail."""

    def done() -> bool:
        length, state = hot_state(redis_client, keyspace, topic)
        return "cold_start" in state and length < produced // 4 and "archived_end" in state

    wait(done, 30, "archive and trim")


def test_group_and_kcat_read_every_record_across_tiers(tiered_broker, redis_client, keyspace) -> None:
    b = tiered_broker
    tiered("across", b.bootstrap)
    sent = _produce_for(b.bootstrap, "across", 2.5)
    _wait_archived_and_trimmed(redis_client, keyspace, "across", len(sent))
    got = group_read(b.bootstrap, "across", len(sent))
    assert len(got) == len(sent)
    offsets = [m.offset() for m in got]
    assert len(set(offsets)) == len(offsets), "an offset came twice"
    for msg, (rec, stamp) in zip(got, sent, strict=True):
        assert (msg.key(), msg.value()) == (rec.key, rec.value)
        assert [(k, None if v is None else bytes(v)) for k, v in (msg.headers() or [])] == list(rec.headers)
        assert msg.timestamp() == (1, stamp)  # CreateTime, as produced

    # kcat (librdkafka 2.0.2) from the beginning: keys, values and timestamps of the printable records.
    out = kcat("-b", b.bootstrap, "-C", "-t", "across", "-o", "beginning", "-e", "-f", "%o|%T|%K|%S|%h\n")
    lines = out.splitlines()
    assert len(lines) == len(sent)
    for line, msg, (rec, stamp) in zip(lines, got, sent, strict=True):
        offset, ts, key_len, value_len, _ = line.split("|", 4)
        assert int(offset) == msg.offset() and int(ts) == stamp
        assert int(key_len) == (-1 if rec.key is None else len(rec.key))
        assert int(value_len) == (-1 if rec.value is None else len(rec.value))


def test_read_committed_hides_aborted_transactions_in_both_tiers(
    tiered_broker, redis_client, keyspace
) -> None:
    b = tiered_broker
    tiered("txns", b.bootstrap)
    producer = Producer({"bootstrap.servers": b.bootstrap, "transactional.id": "tier-tx", "linger.ms": 5})
    producer.init_transactions(15)
    expected: list[bytes] = []
    for round_ in range(6):
        producer.begin_transaction()
        values = [b"r%d-%d" % (round_, i) for i in range(40)]
        for v in values:
            producer.produce("txns", value=v, key=b"k")
        producer.flush(10)  # an abort would purge records not sent yet
        if round_ % 2:
            producer.abort_transaction(15)
        else:
            producer.commit_transaction(15)
            expected += values
    plain = Producer({"bootstrap.servers": b.bootstrap})
    plain.produce("txns", value=b"after", key=b"k")
    plain.flush(10)
    expected.append(b"after")
    _wait_archived_and_trimmed(redis_client, keyspace, "txns", 240)

    committed = group_read(b.bootstrap, "txns", len(expected), **{"isolation.level": "read_committed"})
    assert [m.value() for m in committed] == expected
    everything = group_read(b.bootstrap, "txns", 241, **{"isolation.level": "read_uncommitted"})
    assert len(everything) == 241  # the aborted records are there for read_uncommitted


def test_a_consumer_keeps_up_while_records_move_to_the_cold_tier(
    tiered_broker, redis_client, keyspace
) -> None:
    """No gap and no repeat while the archiver trims under a consumer that reads slowly from 0."""
    b = tiered_broker
    tiered("moving", b.bootstrap)
    sent = _produce_for(b.bootstrap, "moving", 1.0)
    consumer = Consumer(
        {
            "bootstrap.servers": b.bootstrap,
            "group.id": "slow",
            "auto.offset.reset": "earliest",
            "fetch.max.bytes": 2048,  # small fetches: many of them, some cold, some hot
            "message.max.bytes": 2048,
            "max.partition.fetch.bytes": 512,
        }
    )
    consumer.subscribe(["moving"])
    offsets: list[int] = []
    deadline = time.monotonic() + 40
    try:
        while len(offsets) < len(sent) and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is not None and not msg.error():
                offsets.append(msg.offset())
    finally:
        consumer.close()
    assert offsets == sorted(set(offsets)) and len(offsets) == len(sent)
