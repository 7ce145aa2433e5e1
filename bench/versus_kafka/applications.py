"""Figures of whole applications on each broker: a Kafka Streams topology (tests/java/streams/
OrderTotals.java: a repartition, an aggregation with its changelog, a stream-table join and a windowed
count, exactly_once_v2) and Spark's Kafka connector reading a topic (spark.read.format("kafka")). The
same program, records and settings whichever broker it is; each run checks that every record came through
before it counts."""

from __future__ import annotations

import pathlib
import subprocess
import tempfile
import threading
import time
from typing import Any

from confluent_kafka import Consumer, Producer

import apache_kafka

from .brokers import Broker
from .figures import Measured, Meter, _measured, create_topic

ROOT = pathlib.Path(__file__).resolve().parents[2]
TOPOLOGY = ROOT / "tests" / "java" / "streams" / "OrderTotals.java"
CUSTOMERS = 100
START_TIMEOUT_SECONDS = 180.0
RUN_TIMEOUT_SECONDS = 600.0


def streams_topology(broker: Broker, run: int, records: int) -> Measured:
    """`records` orders through the topology: from the moment it is RUNNING until the last order's join
    result is committed (a read_committed reader counts them), in orders per second."""
    prefix = f"vk-streams-{run}-"
    for topic in ("orders", "customers", "totals", "regions", "windows"):
        create_topic(broker, prefix + topic, partitions=3)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "partitioner": "murmur2_random",
                         "linger.ms": 5})  # fmt: skip
    for c in range(CUSTOMERS):
        producer.produce(prefix + "customers", f"r{c}".encode(), key=f"c{c}".encode(), timestamp=1)
    for i in range(records):
        producer.produce(prefix + "orders", f"c{i % CUSTOMERS},{i % 50 + 1}".encode(), key=f"o{i}".encode(),
                         timestamp=1_700_000_000_000 + i)  # fmt: skip
        if i % 10_000 == 0:
            producer.poll(0)
    if producer.flush(60) != 0:
        raise RuntimeError(f"{broker.name}: the orders were not all acknowledged")
    classes = apache_kafka.compiled_classes(TOPOLOGY)
    with tempfile.TemporaryDirectory() as state:
        command = apache_kafka.java_command(
            "OrderTotals",
            broker.bootstrap,
            f"{prefix}app",
            state,
            "classic",
            prefix,
            heap="512m",
            classes=classes,
        )
        app = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        running = threading.Event()
        threading.Thread(target=_watch, args=(app, running), daemon=True).start()
        try:
            if not running.wait(START_TIMEOUT_SECONDS):
                raise RuntimeError(f"{broker.name}: the Streams application did not start")
            with Meter(broker) as meter:
                _count_committed(broker, prefix + "regions", records)
        finally:
            app.kill()
            app.wait()
    return _measured(meter, records, msgs_per_s=records / meter.wall_seconds)


def _watch(app: subprocess.Popen[str], running: threading.Event) -> None:
    assert app.stdout is not None
    for line in app.stdout:
        if line.strip() == "state RUNNING":
            running.set()


def _count_committed(broker: Broker, topic: str, records: int) -> None:
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": f"{topic}-count",
                         "isolation.level": "read_committed", "auto.offset.reset": "earliest"})  # fmt: skip
    try:
        consumer.subscribe([topic])
        seen, deadline = 0, time.monotonic() + RUN_TIMEOUT_SECONDS
        while seen < records:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{broker.name}: {seen} of {records} join results")
            seen += sum(1 for m in consumer.consume(10_000, 1.0) if not m.error())
    finally:
        consumer.close()


_SPARK: Any = None


def _spark() -> Any:
    """One local SparkSession for the bench, with Spark's Kafka connector (apache_kafka/spark/pom.xml)."""
    global _SPARK
    if _SPARK is None:
        import pyspark
        from pyspark.sql import SparkSession

        jars = apache_kafka.spark_connector_jars(pathlib.Path(pyspark.__file__).parent / "jars")
        _SPARK = (
            SparkSession.builder.master("local[2]")
            .appName("schooner-bench")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.jars", ",".join(jars))
            .getOrCreate()
        )
        _SPARK.sparkContext.setLogLevel("ERROR")
    return _SPARK


def spark_read(broker: Broker, topic: str, records: int) -> Measured:
    """spark.read.format("kafka") of the whole topic, counted: records per second."""
    frame = (
        _spark()
        .read.format("kafka")
        .option("kafka.bootstrap.servers", broker.bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .load()
    )
    with Meter(broker) as meter:
        counted = frame.count()
    if counted != records:
        raise RuntimeError(f"{broker.name}: Spark read {counted} records of {topic}, not {records}")
    return _measured(meter, records, msgs_per_s=records / meter.wall_seconds)


def stop() -> None:
    global _SPARK
    if _SPARK is not None:
        _SPARK.stop()
        _SPARK = None
