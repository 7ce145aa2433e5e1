"""Kafka clients and Spark on the same topics: Spark reads what a Kafka producer wrote through the
broker, at the offsets a Kafka consumer sees; a Kafka consumer reads what the Spark sink wrote."""

from __future__ import annotations

import json
from typing import Any

import pytest
from confluent_kafka import Producer

from tests.clients import SAMPLE, as_rec, consume, from_beginning
from tests.spark.conftest import Log


def _produce(bootstrap: str, topic: str, records: list[tuple[Any, ...]], **conf: Any) -> list[Any]:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, **conf})
    delivered: list[Any] = []

    def on_delivery(err: Any, msg: Any) -> None:
        delivered.append(err or msg)

    for key, value, headers, partition in records:
        extra = {} if partition is None else {"partition": partition}
        producer.produce(topic, value=value, key=key, headers=headers, on_delivery=on_delivery, **extra)
        producer.poll(0)
    assert producer.flush(30) == 0
    assert all(hasattr(d, "offset") for d in delivered), delivered
    return delivered


def test_spark_reads_kafka_records_at_the_offsets_kafka_consumers_see(
    spark: Any, broker: Any, log: Log
) -> None:
    log.topic("kafka-in", 3)
    records = [(r.key, r.value, list(r.headers) or None, i % 3) for i, r in enumerate(SAMPLE * 5)]
    for start in range(0, len(records), 7):  # several produce requests: offsets with gaps between batches
        _produce(broker.bootstrap, "kafka-in", records[start : start + 7])
    seen = consume(broker.bootstrap, from_beginning("kafka-in", 3), len(records), timeout=30)
    kafka = sorted(
        (m.partition(), m.offset(), m.timestamp()[1], as_rec(m.key(), m.value(), m.headers())) for m in seen
    )

    rows = (
        spark.read.format("schooner")
        .options(**log.options)
        .option("subscribe", "kafka-in")
        .option("includeHeaders", "true")
        .load()
        .collect()
    )
    ours = sorted(
        (
            r.partition,
            r.offset,
            round(r.timestamp.timestamp() * 1000),
            as_rec(r.key, r.value, [(h.key, h.value) for h in r.headers or []]),
        )
        for r in rows
    )
    assert len(ours) == len(records) and ours == kafka
    assert {r.topic for r in rows} == {"kafka-in"} and {r.timestampType for r in rows} == {0}


def test_kafka_consumers_read_what_the_spark_sink_wrote(spark: Any, broker: Any, log: Log) -> None:
    log.topic("spark-out", 4)
    log.topic("kafka-twin", 4)
    rows = [(f"user-{i % 17}".encode(), f"event {i}".encode(), [("n", str(i).encode())]) for i in range(60)]
    df = spark.createDataFrame(
        rows, "key binary, value binary, headers array<struct<key:string,value:binary>>"
    )
    df.write.format("schooner").options(**log.options).option("topic", "spark-out").mode("append").save()

    got = consume(broker.bootstrap, from_beginning("spark-out", 4), len(rows), timeout=30)
    assert sorted((m.key(), m.value(), m.headers()) for m in got) == sorted(rows)
    # Rows without a partition go where Kafka's own producers send their keys (murmur2).
    _produce(
        broker.bootstrap, "kafka-twin", [(k, v, None, None) for k, v, _ in rows], partitioner="murmur2_random"
    )
    twin = {
        m.key(): m.partition()
        for m in consume(broker.bootstrap, from_beginning("kafka-twin", 4), len(rows), timeout=30)
    }
    assert {m.key(): m.partition() for m in got} == twin
    assert len(set(twin.values())) > 1


@pytest.mark.both_encodings
def test_spark_reads_committed_records_of_kafka_transactions(spark: Any, broker: Any, log: Log) -> None:
    log.topic("txn-in", 1)
    plain = Producer({"bootstrap.servers": broker.bootstrap})
    plain.produce("txn-in", value=b"p0")
    plain.flush(10)
    txn = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "spark-tx", "linger.ms": 5})
    txn.init_transactions(15)
    for values, commit in (([b"a0", b"a1"], False), ([b"c0", b"c1"], True), ([b"o0"], None)):
        txn.begin_transaction()
        for v in values:
            txn.produce("txn-in", value=v)
        txn.flush(15)
        if commit is not None:
            txn.commit_transaction(15) if commit else txn.abort_transaction(15)
    plain.produce("txn-in", value=b"p1")  # after the open transaction's first record
    plain.flush(10)

    def read(**options: str) -> list[tuple[bytes, int]]:
        rows = spark.read.format("schooner").options(**log.options).options(**options).load().collect()
        return sorted(((r.value, r.offset) for r in rows), key=lambda vo: vo[1])

    committed = read(subscribe="txn-in")
    assert [v for v, _ in committed] == [b"p0", b"c0", b"c1"]
    past_the_lso = json.dumps({"txn-in": {"0": 1 << 62}})
    assert read(subscribe="txn-in", endingOffsets=past_the_lso) == committed
    everything = read(subscribe="txn-in", **{"isolation.level": "read_uncommitted"})
    assert [v for v, _ in everything] == [b"p0", b"a0", b"a1", b"c0", b"c1", b"o0", b"p1"]  # no marker

    txn.commit_transaction(15)
    after = read(subscribe="txn-in")
    kafka = consume(broker.bootstrap, from_beginning("txn-in", 1), 5, timeout=30)  # read_committed
    assert after == [(m.value(), m.offset()) for m in kafka]
    assert [v for v, _ in after] == [b"p0", b"c0", b"c1", b"o0", b"p1"]
