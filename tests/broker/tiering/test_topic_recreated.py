"""A tiered topic deleted and made again under its name starts empty: no consumer is ever served a record
of its predecessor, from either tier, though the broker read the predecessor's cold tier a moment ago."""

from __future__ import annotations

import time

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from tests.broker.helpers import wait
from tests.broker.tiering.conftest import hot_state, tiered
from tests.clients import confluent_consume


def _produce(bootstrap: str, topic: str, values: list[bytes], stamp: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i, value in enumerate(values):
        producer.produce(topic, value=value, timestamp=stamp + i)
    assert producer.flush(20) == 0


def test_a_recreated_topic_never_serves_its_predecessors_records(
    tiered_broker, redis_client, keyspace
) -> None:
    b = tiered_broker
    tiered("again", b.bootstrap)
    old = int(time.time() * 1000) - 30_000
    _produce(b.bootstrap, "again", [b"old-%d" % i for i in range(60)], old)
    wait(lambda: hot_state(redis_client, keyspace, "again")[0] == 0, 20, "archived, Redis trimmed")
    # The broker reads (and keeps what it learned of) the predecessor's cold tier.
    assert [m.value() for m in confluent_consume(b.bootstrap, "again", 60)] == [
        b"old-%d" % i for i in range(60)
    ]

    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    admin.delete_topics(["again"], operation_timeout=10)["again"].result(15)
    tiered("again", b.bootstrap)
    _produce(b.bootstrap, "again", [b"new-%d" % i for i in range(5)], int(time.time() * 1000))

    for offset in (-2, 0, 3):
        got = confluent_consume(b.bootstrap, "again", 60, offset=offset, timeout=6)
        assert [m.value() for m in got] == [b"new-%d" % i for i in range(max(offset, 0), 5)]
    # Past the new topic's end (inside the old one's range) is out of range, not an old record: the
    # consumer resets to the end and gets nothing.
    got = confluent_consume(b.bootstrap, "again", 60, offset=30, timeout=4, **{"auto.offset.reset": "latest"})
    assert got == []
