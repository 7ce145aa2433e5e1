"""The streaming reader: exact admission control, AvailableNow, new partitions, data loss, minimums."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from schooner.storage.log import retention
from schooner.storage.redis.calls import drive_sync, run_sync
from schooner.storage.topics import metadata
from tests.spark.conftest import Log

pytestmark = pytest.mark.both_encodings


def _stream(spark: Any, log: Log, topic: str, **options: Any) -> Any:
    reader = spark.readStream.format("schooner").options(**log.options).option("subscribe", topic)
    return (
        reader.option("startingOffsets", "earliest").options(**{k: str(v) for k, v in options.items()}).load()
    )


def _to_memory(df: Any, name: str, checkpoint: Path, available_now: bool = True) -> Any:
    writer = df.writeStream.format("memory").queryName(name).option("checkpointLocation", str(checkpoint))
    return (writer.trigger(availableNow=True) if available_now else writer).start()


def _to_files(df: Any, folder: Path, checkpoint: Path) -> Any:
    """A file sink: unlike the memory sink, it can restart from its checkpoint."""
    writer = (
        df.select("value", "partition", "offset").writeStream.format("parquet").option("path", str(folder))
    )
    return writer.option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start()


def _batch_sizes(query: Any) -> list[int]:
    return [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]


def test_max_offsets_per_trigger_gives_batches_of_exactly_that_size(
    spark: Any, log: Log, tmp_path: Path
) -> None:
    log.topic("events", 3)
    for p, n in ((0, 130), (1, 45), (2, 12)):
        for done in range(0, n, 20):  # several appends: on a timestamp-encoded topic, offsets with gaps
            log.values("events", p, min(20, n - done))
    q = _to_memory(_stream(spark, log, "events", maxOffsetsPerTrigger=50), "mopt", tmp_path / "cp")
    q.awaitTermination(120)
    assert _batch_sizes(q) == [50, 50, 50, 37]
    got = sorted((r.partition, r.offset) for r in spark.sql("select partition, offset from mopt").collect())
    stored = log.read("events")
    assert got == sorted((s.partition, s.offset) for s in stored)
    ends = {str(p): max(s.offset for s in stored if s.partition == p) + 1 for p in range(3)}
    assert json.loads(q.recentProgress[-1]["sources"][0]["latestOffset"]) == {"events": ends}  # reported


def test_available_now_stops_at_the_data_present_at_start(spark: Any, log: Log, tmp_path: Path) -> None:
    log.topic("feed", 2)
    before = log.values("feed", 0, 60) + log.values("feed", 1, 40)
    q = _to_memory(_stream(spark, log, "feed", maxOffsetsPerTrigger=25), "avn", tmp_path / "cp")
    late: list[int] = []

    def produce_while_running() -> None:
        while not q.recentProgress and q.isActive:  # the query has begun: later records are "new"
            time.sleep(0.05)
        for _ in range(5):
            late.extend(log.values("feed", 0, 10, prefix="late") + log.values("feed", 1, 10, prefix="late"))
            time.sleep(0.2)

    producer = threading.Thread(target=produce_while_running)
    producer.start()
    q.awaitTermination(120)
    producer.join()
    assert late, "records arrived while the query ran"
    values = [r.value for r in spark.sql("select value from avn").collect()]
    assert len(values) == len(before) and not any(v.startswith(b"late") for v in values)
    assert _batch_sizes(q) == [25, 25, 25, 25]

    q.stop()
    again = _to_memory(_stream(spark, log, "feed", maxOffsetsPerTrigger=1000), "avn2", tmp_path / "cp2")
    again.awaitTermination(120)
    assert spark.sql("select value from avn2").count() == len(before) + len(late)


def test_new_partitions_are_picked_up(spark: Any, log: Log, tmp_path: Path) -> None:
    topic = log.topic("growing", 2)
    log.values("growing", 0, 5)
    log.values("growing", 1, 5)
    q = _to_memory(_stream(spark, log, "growing"), "grow", tmp_path / "cp", available_now=False)
    try:
        q.processAllAvailable()
        assert spark.sql("select * from grow").count() == 10

        old = run_sync(log.redis, metadata.update(log.ks, "growing", partitions=3))
        drive_sync(log.redis, metadata.stamp_partitions(log.ks, "growing", topic.id, range(old, 3)))
        log.values("growing", 2, 7, prefix="new")
        deadline = time.monotonic() + 60
        while spark.sql("select * from grow where partition = 2").count() < 7 and time.monotonic() < deadline:
            q.processAllAvailable()
        assert spark.sql("select * from grow where partition = 2").count() == 7
        assert spark.sql("select * from grow").count() == 17
    finally:
        q.stop()


def test_min_offsets_per_trigger_waits_for_enough_records(spark: Any, log: Log, tmp_path: Path) -> None:
    log.topic("trickle", 1)
    log.values("trickle", 0, 3)
    q = _to_memory(
        _stream(spark, log, "trickle", minOffsetsPerTrigger=10, maxTriggerDelay="1h"),
        "minopt",
        tmp_path / "cp",
        available_now=False,
    )
    try:
        q.processAllAvailable()
        assert spark.sql("select * from minopt").count() == 0
        log.values("trickle", 0, 8)
        q.processAllAvailable()
        assert spark.sql("select * from minopt").count() == 11
    finally:
        q.stop()


@pytest.mark.parametrize("fail", [True, False])
def test_trimmed_data_fails_the_query_or_is_skipped(spark: Any, log: Log, tmp_path: Path, fail: bool) -> None:
    topic = log.topic("trimmed", 1)
    log.values("trimmed", 0, 10)
    first = _to_files(_stream(spark, log, "trimmed"), tmp_path / "out", tmp_path / "cp")
    first.awaitTermination(120)
    lost = log.values("trimmed", 0, 10, prefix="lost")
    kept = log.values("trimmed", 0, 10, prefix="kept")
    run_sync(log.redis, retention.delete_records(log.ks, topic, 0, kept[0]))

    df = _stream(spark, log, "trimmed", failOnDataLoss=str(fail).lower())
    again = _to_files(df, tmp_path / "out", tmp_path / "cp")
    if fail:
        with pytest.raises(Exception, match="failOnDataLoss"):
            again.awaitTermination(120)
        return
    again.awaitTermination(120)
    values = sorted(r.value for r in spark.read.parquet(str(tmp_path / "out")).collect())
    expected = [f"v{i}".encode() for i in range(10)] + [f"kept{i}".encode() for i in range(10)]
    assert values == sorted(expected) and len(lost) == 10
