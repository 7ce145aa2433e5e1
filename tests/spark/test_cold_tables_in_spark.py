"""The cold tier's Delta table, read by Spark with Delta Lake's own reader (delta-spark, format("delta")) and
no Schooner code on the read path: the rows are the ones the cold store serves.

Iceberg tables are not read here: no iceberg-spark-runtime on Maven Central runs on Spark 4.2 yet (see
apache_kafka/spark_tables/pom.xml)."""

from __future__ import annotations

from typing import Any

from schooner.storage.log.entry import parse_fields
from schooner.storage.log.transactions import CONTROL
from tests.spark.conftest import BASE_MS, Log, Rec, Tiers


def test_spark_reads_the_delta_table_with_delta_lakes_own_reader(spark: Any, log: Log, tiers: Tiers) -> None:
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

    held = []  # what the cold store serves: offset, key, value, control, headers
    for entry_id, fields in tiers.cold.read(topic, 0, 0, 1 << 20).entries:
        _, key, value, headers = parse_fields(fields)
        control = dict(zip(fields[::2], fields[1::2], strict=True)).get(CONTROL)
        offset = topic.offsets.offset_of_id(entry_id)
        held.append((offset, key, value, control and control.decode(), headers))

    rows = spark.read.format("delta").load(tiers.cold.table_uri(topic)).orderBy("offset").collect()
    got = [(r.offset, r.key, r.value, r.control, [(h.key, h.value) for h in r.headers]) for r in rows]
    assert got == held
    assert [r.control for r in rows] == [None, None, None, None, "commit", None]
    assert rows[0].key is None and rows[2].value is None and rows[1].headers[1].value is None
    assert [(r.transactional, r.producer_id) for r in rows[3:5]] == [(True, 7), (True, 7)]
