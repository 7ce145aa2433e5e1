"""The cold tier's Delta table, read by Spark with Delta Lake's own reader (delta-spark, format("delta"))
and no Schooner code on the read path, as a user's job would: a Spark of its own, in a process of its own,
with Delta's jars (apache_kafka/spark_tables/pom.xml). The rows are the ones the cold store serves.

An application test (make test-apps): a second JVM, and Delta's first read costs it 15 to 30 s here.
Iceberg tables are not read here: no iceberg-spark-runtime on Maven Central runs on Spark 4.2 yet (see
apache_kafka/spark_tables/pom.xml)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import apache_kafka
from schooner.storage.log.entry import parse_fields
from schooner.storage.log.transactions import CONTROL
from tests.spark.conftest import BASE_MS, Log, Rec, Tiers

pytestmark = pytest.mark.application

# The job: read the table at argv[1] with format("delta"), print its rows as JSON (bytes in hex).
READER = """
import json, sys
from pyspark.sql import SparkSession
spark = (
    SparkSession.builder.master("local[1]").appName("delta-reader")
    .config("spark.ui.enabled", "false")
    .config("spark.jars", sys.argv[2])
    # Delta's path reads without its SQL extension and catalog, which no path read needs.
    .config("spark.databricks.delta.requiredSparkConfsCheck.enabled", "false")
    .config("spark.databricks.delta.snapshotPartitions", "1")
    .getOrCreate()
)
hexed = lambda b: None if b is None else bytes(b).hex()
rows = spark.read.format("delta").load(sys.argv[1]).orderBy("offset").collect()
print(json.dumps([
    [r.offset, hexed(r.key), hexed(r.value), r.control, [[h.key, hexed(h.value)] for h in r.headers],
     r.transactional, r.producer_id]
    for r in rows
]))
spark.stop()
"""


def test_spark_reads_the_delta_table_with_delta_lakes_own_reader(log: Log, tiers: Tiers) -> None:
    import pyspark

    topic = log.topic("in_delta", 1, **{"schooner.table.format": "delta"})
    log.append("in_delta", 0, [
        Rec(BASE_MS, None, b"no key"),
        Rec(BASE_MS + 1, b"h", b"headers", [("a", b"1"), ("a", None), ("bin", bytes([0, 255]))]),
        Rec(BASE_MS + 2, b"tomb", None),
    ])  # fmt: skip
    tiers.txn("in_delta", 0, 7, 0, [Rec(BASE_MS + 3, b"tx", b"in a transaction")])
    tiers.end_txn("in_delta", 0, 7, commit=True)
    log.append("in_delta", 0, [Rec(BASE_MS + 4, b"", b"")])
    assert tiers.archive("in_delta", 0, 100) == 6
    assert log.read("in_delta") == []  # Redis holds none of it: the table is the only copy

    def hexed(b: bytes | None) -> str | None:
        return None if b is None else b.hex()

    held = []  # what the cold store serves: offset, key, value, control, headers
    for entry_id, fields in tiers.cold.read(topic, 0, 0, 1 << 20).entries:
        _, key, value, headers = parse_fields(fields)
        control = dict(zip(fields[::2], fields[1::2], strict=True)).get(CONTROL)
        offset = topic.offsets.offset_of_id(entry_id)
        held.append(
            [
                offset,
                hexed(key),
                hexed(value),
                control and control.decode(),
                [[k, hexed(v)] for k, v in headers],
            ]
        )

    jars = apache_kafka.spark_table_jars(Path(pyspark.__file__).parent / "jars")
    job = subprocess.run(
        [sys.executable, "-c", READER, tiers.cold.table_uri(topic), ",".join(jars)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert job.returncode == 0, job.stderr[-3000:]
    rows = json.loads(job.stdout.strip().splitlines()[-1])
    assert [r[:5] for r in rows] == held
    assert [r[3] for r in rows] == [None, None, None, None, "commit", None]
    assert rows[0][1] is None and rows[2][2] is None and rows[1][4][1] == ["a", None]
    assert [(r[5], r[6]) for r in rows[3:5]] == [(True, 7), (True, 7)]
