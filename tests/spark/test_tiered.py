"""format("schooner") over both tiers: records archived to the cold tier's Delta table (and trimmed from
Redis) are read from earliest, byte for byte, in order and once, by batch and streaming queries;
read_committed hides aborted transactions in the cold part; and Spark reads the Delta table directly."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable

from tests.spark.conftest import BASE_MS, Log, Rec, Stored, Tiers


def _read(spark: Any, options: dict[str, str], **more: str) -> list[Any]:
    return spark.read.format("schooner").options(**options).options(**more).load().collect()


def _as_stored(row: Any) -> Stored:
    headers = [(h.key, h.value) for h in row.headers] if row.headers else []
    ts = round(row.timestamp.timestamp() * 1000)
    return Stored(row.partition, row.offset, ts, row.key, row.value, headers)


def _records(n: int, p: int) -> list[Rec]:
    out = []
    for i in range(n):
        headers = [("i", b"%d" % i), ("dup", None), ("dup", bytes([0, 255, i % 256]))] if i % 3 == 0 else []
        key = None if i % 7 == 0 else b"k%d" % i
        value = None if i % 11 == 5 else bytes([i % 256, 0]) + b"v%d-%d" % (p, i)
        out.append(Rec(BASE_MS + i, key, value, headers))
    return out


@pytest.mark.both_encodings
def test_batch_reads_earliest_across_both_tiers_byte_for_byte(spark: Any, log: Log, tiers: Tiers) -> None:
    log.topic("tiered", 2)
    for p, n in ((0, 150), (1, 60)):
        records = _records(n, p)
        for i in range(0, n, 40):  # several appends: gaps between them on timestamp-encoded topics
            log.append("tiered", p, records[i : i + 40])
    produced = log.read("tiered")
    tiers.archive("tiered", 0, 60)
    tiers.archive("tiered", 0, 40)
    tiers.archive("tiered", 1, 60)  # all of it: Redis keeps none of partition 1
    left = log.read("tiered")
    assert [s.partition for s in left] == [0] * 50

    rows = _read(spark, tiers.options, subscribe="tiered", includeHeaders="true")
    assert sorted(map(_as_stored, rows), key=lambda s: (s.partition, s.offset)) == produced
    for p in (0, 1):  # in offset order within each partition, as read
        offsets = [r.offset for r in rows if r.partition == p]
        assert offsets == sorted(offsets) and len(set(offsets)) == len(offsets)
    # Split into many input partitions, across the boundary: the same records.
    split = _read(spark, tiers.options, subscribe="tiered", maxRecordsPerPartition="35")
    assert sorted((r.partition, r.offset) for r in split) == [(s.partition, s.offset) for s in produced]
    # Bounded by offsets and by time, both starting in the cold tier.
    third, stop = produced[3].offset, produced[120].offset
    ending = json.dumps({"tiered": {"0": stop, "1": -1}})
    bounded = _read(spark, tiers.options, subscribe="tiered", endingOffsets=ending,
                    startingOffsets=json.dumps({"tiered": {"0": third, "1": -2}}))  # fmt: skip
    want = [(s.partition, s.offset) for s in produced if s.partition == 1 or third <= s.offset < stop]
    assert sorted((r.partition, r.offset) for r in bounded) == want
    by_time = _read(spark, tiers.options, subscribe="tiered", startingTimestamp=str(BASE_MS + 55))
    assert sorted((r.partition, r.offset) for r in by_time) == [
        (s.partition, s.offset) for s in produced if s.timestamp >= BASE_MS + 55
    ]
    # Without coldStore, earliest is Redis' start: the hot part only.
    hot = _read(spark, log.options, subscribe="tiered")
    assert sorted((r.partition, r.offset) for r in hot) == [(s.partition, s.offset) for s in left]


def test_read_committed_hides_aborted_transactions_in_the_cold_part(
    spark: Any, log: Log, tiers: Tiers
) -> None:
    log.topic("txns", 1)
    log.values("txns", 0, 3, prefix="plain")
    for i in range(4):
        tiers.txn("txns", 0, 5, i, [Rec(BASE_MS, None, b"aborted%d" % i)])
        tiers.txn("txns", 0, 6, i, [Rec(BASE_MS, None, b"committed%d" % i)])
    tiers.end_txn("txns", 0, 5, commit=False)
    tiers.end_txn("txns", 0, 6, commit=True)
    log.values("txns", 0, 3, prefix="after")
    hot = {level: _read(spark, tiers.options, subscribe="txns", **{"isolation.level": level})
           for level in ("read_committed", "read_uncommitted")}  # fmt: skip
    tiers.archive("txns", 0, 100)
    assert log.read("txns") == []
    for level, before in hot.items():
        rows = _read(spark, tiers.options, subscribe="txns", **{"isolation.level": level})
        assert rows == before
    values = [r.value for r in hot["read_committed"]]
    assert values == [b"plain0", b"plain1", b"plain2"] + [b"committed%d" % i for i in range(4)] + [
        b"after0", b"after1", b"after2"]  # fmt: skip
    assert len(hot["read_uncommitted"]) == 14  # every data record, no marker


def test_streaming_crosses_from_the_cold_tier_to_redis_exactly_once(
    spark: Any, log: Log, tiers: Tiers, tmp_path: Path
) -> None:
    log.topic("flow", 2)
    for p in (0, 1):
        log.values("flow", p, 40, prefix=f"first{p}-")
    tiers.archive("flow", 0, 30)
    tiers.archive("flow", 1, 40)

    def run() -> Any:
        df = (
            spark.readStream.format("schooner").options(**tiers.options).option("subscribe", "flow")
            .option("startingOffsets", "earliest").option("maxOffsetsPerTrigger", "25").load()
        )  # fmt: skip
        writer = df.select("value", "partition", "offset").writeStream.format("parquet")
        writer = writer.option("path", str(tmp_path / "out")).option(
            "checkpointLocation", str(tmp_path / "cp")
        )
        query = writer.trigger(availableNow=True).start()
        query.awaitTermination(180)
        assert query.exception() is None
        return query

    first = run()
    assert [p["numInputRows"] for p in first.recentProgress if p["numInputRows"]] == [25, 25, 25, 5]
    # More records; the archiver moves past where the query stopped and trims Redis behind it.
    for p in (0, 1):
        log.values("flow", p, 30, prefix=f"second{p}-")
    tiers.archive("flow", 0, 25)
    tiers.archive("flow", 1, 5)
    second = run()
    assert sum(p["numInputRows"] for p in second.recentProgress) == 60
    out = spark.read.parquet(str(tmp_path / "out")).collect()
    got = sorted((r.partition, r.offset, r.value) for r in out)
    assert got == sorted((p, i, f"{'first' if i < 40 else 'second'}{p}-{i % 40}".encode()) for p in (0, 1)
                         for i in range(70))  # fmt: skip


def test_the_delta_table_is_read_directly_for_history(spark: Any, log: Log, tiers: Tiers) -> None:
    topic = log.topic("history", 2)
    for p in (0, 1):
        log.append("history", p, _records(30, p))
        tiers.archive("history", p, 30, trim=False)
    produced = log.read("history")
    uri = tiers.cold.table_uri(topic)  # <root>/<keyspace>/<topic>/<topic id>
    table = DeltaTable(uri)
    wanted = [(s.partition, s.offset, s.key, s.value) for s in produced]

    # 1. delta-rs reads the table (its current version) into Arrow; Spark takes the Arrow table.
    df = spark.createDataFrame(table.to_pyarrow_table())
    rows = df.where("control is null and not aborted").orderBy("partition", "offset")
    assert [(r.partition, r.offset, r.key, r.value) for r in rows.collect()] == wanted
    first = df.where("partition = 0 and offset = 0").collect()[0]
    assert [(h.key, h.value) for h in first.headers] == produced[0].headers

    # 2. Spark reads the table's Parquet files itself: the files of the current version, with the table
    # folder as basePath so that `partition` comes back from the partition folders.
    files = table.file_uris()
    parquet = spark.read.option("basePath", uri).parquet(*files)
    sql = parquet.where("control is null and not aborted").orderBy("partition", "offset")
    assert [(r.partition, r.offset, r.key, r.value) for r in sql.collect()] == wanted
