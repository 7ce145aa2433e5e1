"""Spark's own Kafka connector (spark-sql-kafka-0-10 of the pinned PySpark's release, resolved by the
project: apache_kafka/spark/pom.xml) against a Schooner broker over the Kafka protocol: a batch read at the
offsets a Kafka consumer sees, a batch write, a streaming query whose checkpoint carries it across a
restart with every record copied once, and read_committed leaving an aborted transaction out."""

from __future__ import annotations

import pathlib
from typing import Any

import pyspark
from confluent_kafka import Producer

import apache_kafka
from tests.java.topics import T, create, read_all


def produce(bootstrap: str, topic: str, count: int, start: int = 0) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(start, start + count):
        producer.produce(topic, f"v{i}".encode(), key=f"k{i}".encode())
    assert producer.flush(T) == 0


def kafka_read(spark: Any, bootstrap: str, topic: str, **options: str) -> list[tuple[int, int, str, str]]:
    frame = (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .options(**options)
        .load()
    )
    rows = frame.selectExpr(
        "partition", "offset", "CAST(key AS STRING) k", "CAST(value AS STRING) v"
    ).collect()
    return sorted((r.partition, r.offset, r.k, r.v) for r in rows)


def test_the_connector_is_the_release_of_spark() -> None:
    assert apache_kafka.spark_connector_version() == pyspark.__version__
    jars = apache_kafka.spark_connector_jars(pathlib.Path(pyspark.__file__).parent / "jars")
    assert any(f"spark-sql-kafka-0-10_2.13-{pyspark.__version__}.jar" in jar for jar in jars)


def test_a_batch_read_sees_what_a_kafka_consumer_sees(spark: Any, broker: Any) -> None:
    create(broker.bootstrap, "sk-read", 2)
    produce(broker.bootstrap, "sk-read", 120)
    assert kafka_read(spark, broker.bootstrap, "sk-read") == read_all(broker.bootstrap, "sk-read", 2)


def test_a_batch_write_lands_every_row(spark: Any, broker: Any) -> None:
    create(broker.bootstrap, "sk-write", 3)
    frame = spark.createDataFrame([(f"k{i}", f"w{i}") for i in range(90)], ["key", "value"])
    frame.write.format("kafka").option("kafka.bootstrap.servers", broker.bootstrap).option(
        "topic", "sk-write"
    ).save()
    stored = read_all(broker.bootstrap, "sk-write", 3)
    assert sorted((k, v) for _, _, k, v in stored) == sorted((f"k{i}", f"w{i}") for i in range(90))


def test_a_streaming_copy_resumes_from_its_checkpoint(
    spark: Any, broker: Any, tmp_path: pathlib.Path
) -> None:
    create(broker.bootstrap, "sk-stream", 2)
    create(broker.bootstrap, "sk-copy", 2)

    def run_once() -> None:
        source = (
            spark.readStream.format("kafka")
            .option("kafka.bootstrap.servers", broker.bootstrap)
            .option("subscribe", "sk-stream")
            .option("startingOffsets", "earliest")
            .load()
        )
        query = (
            source.selectExpr("key", "value")
            .writeStream.format("kafka")
            .option("kafka.bootstrap.servers", broker.bootstrap)
            .option("topic", "sk-copy")
            .option("checkpointLocation", str(tmp_path / "checkpoint"))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination(240)
        assert query.exception() is None

    produce(broker.bootstrap, "sk-stream", 60)
    run_once()
    assert len(read_all(broker.bootstrap, "sk-copy", 2)) == 60
    produce(broker.bootstrap, "sk-stream", 40, start=60)
    run_once()  # a new query on the same checkpoint: only the 40 written since
    copied = sorted(v for _, _, _, v in read_all(broker.bootstrap, "sk-copy", 2))
    assert copied == sorted(f"v{i}" for i in range(100))


def test_read_committed_leaves_out_an_aborted_transaction(spark: Any, broker: Any) -> None:
    create(broker.bootstrap, "sk-txn", 1)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "sk-txn-producer"})
    producer.init_transactions(T)
    for outcome, values in (("commit", ["c0", "c1"]), ("abort", ["a0", "a1", "a2"]), ("commit", ["c2"])):
        producer.begin_transaction()
        for v in values:
            producer.produce("sk-txn", v.encode(), key=b"k")
        producer.flush(T)
        if outcome == "commit":
            producer.commit_transaction(T)
        else:
            producer.abort_transaction(T)
    committed = kafka_read(spark, broker.bootstrap, "sk-txn", **{"kafka.isolation.level": "read_committed"})
    assert [v for _, _, _, v in committed] == ["c0", "c1", "c2"]
    everything = kafka_read(spark, broker.bootstrap, "sk-txn")
    assert [v for _, _, _, v in everything] == ["c0", "c1", "a0", "a1", "a2", "c2"]
