"""Spark source throughput: format("schooner") read by a streaming query into the noop sink, local[2],
warm, over 1M records in 3 partitions, divided by a raw Python XRANGE read of the same records in the
same run; and the fixed cost of one micro-batch.

    python -m bench.spark redis://127.0.0.1:6379/0
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from typing import Any

RECORDS = 1_000_000
PARTITIONS = 3
VALUE_BYTES = 100
APPEND_BATCH = 1000
XRANGE_COUNT = 10_000  # the page the Spark reader uses too
RUNS = 3
OVERHEAD_BATCHES = 20


@dataclass(slots=True)
class _Record:
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]


def _fill(redis: Any, options: dict[str, str], topic: str) -> int:
    from schooner.spark import ensure_topic
    from schooner.storage.keys import Keyspace
    from schooner.storage.log.append import RecordBatch, append
    from schooner.storage.redis.calls import run_sync

    t = ensure_topic(options, topic, PARTITIONS)
    ks = Keyspace(options["keyspace"])
    value = b"x" * VALUE_BYTES
    per_partition = RECORDS // PARTITIONS
    for p in range(PARTITIONS):
        for first in range(0, per_partition, APPEND_BATCH):
            now = int(time.time() * 1000)
            batch = [
                _Record(now, b"key-%d" % i, value, [])
                for i in range(first, min(first + APPEND_BATCH, per_partition))
            ]
            run_sync(redis, append(ks, t, p, RecordBatch(batch), notify=False))
    return per_partition * PARTITIONS


def _raw_xrange(redis: Any, keyspace: str, topic: str) -> tuple[int, float]:
    """Every entry of every partition, page by page, as a plain Python client would read them."""
    from schooner.storage.keys import Keyspace

    ks = Keyspace(keyspace)
    started = time.perf_counter()
    count = 0
    for p in range(PARTITIONS):
        start: bytes = b"-"
        while True:
            page = redis.execute_command("XRANGE", ks.stream(topic, p), start, "+", "COUNT", XRANGE_COUNT)
            if not page:
                break
            count += len(page)
            start = b"(" + page[-1][0]
    return count, time.perf_counter() - started


def _session() -> Any:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from schooner.spark import register

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("schooner-bench-spark")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.memory", "2g")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    return spark


def _stream_to_noop(spark: Any, options: dict[str, str], topic: str, **extra: str) -> list[dict[str, Any]]:
    """One AvailableNow query from the earliest offsets; returns the progress of its batches with data."""
    with tempfile.TemporaryDirectory(prefix="schooner-bench-spark-") as checkpoint:
        query = (
            spark.readStream.format("schooner")
            .options(**options)
            .option("subscribe", topic)
            .option("startingOffsets", "earliest")
            .options(**extra)
            .load()
            .writeStream.format("noop")
            .option("checkpointLocation", checkpoint)
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination()
        return [p for p in query.recentProgress if p["numInputRows"]]


def _cleanup(redis: Any, keyspace: str) -> None:
    for key in redis.scan_iter(match=f"{keyspace}:*", count=1000):
        redis.unlink(key)


def run(redis_url: str) -> dict[str, float]:
    from schooner.storage.redis import client

    keyspace = f"bench-spark-{uuid.uuid4().hex[:8]}"
    options = {"redis.url": redis_url, "keyspace": keyspace}
    redis = client.connect_sync(redis_url)
    try:
        records = _fill(redis, options, "spark-source")
        spark = _session()
        _stream_to_noop(spark, options, "spark-source")  # warm-up: JVM, Python workers, code paths
        spark_rates, raw_rates = [], []
        for _ in range(RUNS):
            count, seconds = _raw_xrange(redis, keyspace, "spark-source")
            assert count == records, (count, records)
            raw_rates.append(count / seconds)
            batches = _stream_to_noop(spark, options, "spark-source")
            rows = sum(p["numInputRows"] for p in batches)
            assert rows == records, (rows, records)
            spark_rates.append(rows / (sum(p["durationMs"]["triggerExecution"] for p in batches) / 1000))

        # The fixed cost of a micro-batch: batches of one record each, so reading is next to nothing.
        from schooner.spark import ensure_topic
        from schooner.storage.keys import Keyspace
        from schooner.storage.log.append import RecordBatch, append
        from schooner.storage.redis.calls import run_sync

        tiny = ensure_topic(options, "spark-tiny", 1)
        now = int(time.time() * 1000)
        ones = [_Record(now, None, b"x", [])] * OVERHEAD_BATCHES
        run_sync(redis, append(Keyspace(keyspace), tiny, 0, RecordBatch(ones)))
        batches = _stream_to_noop(spark, options, "spark-tiny", maxOffsetsPerTrigger="1")
        assert len(batches) == OVERHEAD_BATCHES, len(batches)
        overhead_ms = statistics.median(p["durationMs"]["triggerExecution"] for p in batches)
    finally:
        _cleanup(redis, keyspace)
        redis.close()
    spark_rate, raw_rate = statistics.median(spark_rates), statistics.median(raw_rates)
    return {
        "spark_source_rows_per_s": round(spark_rate),
        "raw_xrange_rows_per_s": round(raw_rate),
        "spark_source_vs_raw_xrange": round(spark_rate / raw_rate, 3),
        "spark_microbatch_overhead_ms": round(overhead_ms, 1),
    }


if __name__ == "__main__":
    url = sys.argv[1] if len(sys.argv) > 1 else "redis://127.0.0.1:6379/0"
    for name, value in run(url).items():
        print(f"{name}: {value}")
