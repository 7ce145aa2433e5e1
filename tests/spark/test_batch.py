"""The batch reader and writer: topic selection, offset and timestamp bounds, the row schema with headers
and nulls, entries from a plain Redis client, splitting large ranges, and data loss."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from schooner.spark import planning
from schooner.spark.options import parse_source
from schooner.spark.source import SchoonerBatchReader
from schooner.storage.blocking_store import BlockingStore
from schooner.storage.log import retention
from schooner.storage.redis.calls import run_sync
from tests.spark.conftest import BASE_MS, Log, Rec

pytestmark = pytest.mark.both_encodings


def _read(spark: Any, log: Log, **options: str) -> list[Any]:
    return spark.read.format("schooner").options(**log.options).options(**options).load().collect()


def test_topics_are_chosen_by_subscribe_pattern_or_assign(spark: Any, log: Log) -> None:
    for name in ("metrics-a", "metrics-b", "other"):
        log.topic(name, 2)
        for p in (0, 1):
            log.values(name, p, 3, prefix=f"{name}/{p}/")

    def picked(**options: str) -> set[tuple[str, int]]:
        return {(r.topic, r.partition) for r in _read(spark, log, **options)}

    assert picked(subscribe="metrics-a,other") == {
        ("metrics-a", 0),
        ("metrics-a", 1),
        ("other", 0),
        ("other", 1),
    }
    assert picked(subscribePattern="metrics-.*") == {
        (t, p) for t in ("metrics-a", "metrics-b") for p in (0, 1)
    }
    assert picked(assign=json.dumps({"metrics-b": [1], "other": [0]})) == {("metrics-b", 1), ("other", 0)}


def test_offset_and_timestamp_bounds(spark: Any, log: Log) -> None:
    log.topic("bounded", 2)
    first = log.values("bounded", 0, 10, ts=BASE_MS + 1_000)
    second = log.values("bounded", 0, 10, ts=BASE_MS + 2_000)
    other = log.values("bounded", 1, 5, ts=BASE_MS + 1_500)
    starting = json.dumps({"bounded": {"0": first[4], "1": -2}})
    ending = json.dumps({"bounded": {"0": second[2], "1": -1}})
    rows = _read(spark, log, subscribe="bounded", startingOffsets=starting, endingOffsets=ending)
    assert sorted((r.partition, r.offset) for r in rows) == sorted(
        [(0, o) for o in first[4:] + second[:2]] + [(1, o) for o in other]
    )
    by_time = _read(spark, log, subscribe="bounded", startingTimestamp=str(BASE_MS + 1_500))
    assert sorted((r.partition, r.offset) for r in by_time) == sorted(
        [(0, o) for o in second] + [(1, o) for o in other]
    )
    until = _read(spark, log, subscribe="bounded", endingTimestamp=str(BASE_MS + 1_500))
    assert sorted((r.partition, r.offset) for r in until) == [(0, o) for o in first]
    with pytest.raises(Exception, match="no record at or after timestamp"):
        _read(spark, log, subscribe="bounded", startingTimestamp="9999999999999")
    late = _read(spark, log, subscribe="bounded", startingTimestamp="9999999999999",
                 startingOffsetsByTimestampStrategy="latest")  # fmt: skip
    assert late == []


def test_rows_carry_nulls_headers_and_entries_of_plain_redis_clients(spark: Any, log: Log) -> None:
    # These timestamps are made up and old: no time retention, or a dense topic would drop them.
    log.topic("mixed", 1, **{"retention.ms": "-1"})
    log.append("mixed", 0, [
        Rec(111, None, b"no key"),
        Rec(222, b"tombstone", None),
        Rec(333, b"h", b"with headers", [("a", b"1"), ("a", None), ("bin", bytes([0, 255]))]),
    ])  # fmt: skip
    # A plain writer's entry, without a timestamp field: on a dense topic it takes the next offset
    # with XADD 0-*, and its timestamp is its ID's milliseconds, 0; on a timestamp-encoded topic
    # its ID is its offset and its time.
    dense = log.offset_encoding == "dense"
    plain_id = "0-*" if dense else "4000000000000-0"
    log.redis.xadd(log.ks.stream("mixed", 0), {"value": b"from redis-cli"}, id=plain_id)
    rows = sorted(_read(spark, log, subscribe="mixed", includeHeaders="true"), key=lambda r: r.offset)
    assert [(r.key, r.value) for r in rows] == [
        (None, b"no key"),
        (b"tombstone", None),
        (b"h", b"with headers"),
        (None, b"from redis-cli"),
    ]
    assert [r.headers for r in rows[:2]] == [None, None]
    assert [(h.key, h.value) for h in rows[2].headers] == [("a", b"1"), ("a", None), ("bin", bytes([0, 255]))]
    plain_ms = 0 if dense else 4_000_000_000_000
    assert [round(r.timestamp.timestamp() * 1000) for r in rows] == [111, 222, 333, plain_ms]
    assert rows[3].offset == (3 if dense else 4_000_000_000_000 << 10)
    if dense:
        assert [r.offset for r in rows] == [0, 1, 2, 3]
    assert "headers" not in _read(spark, log, subscribe="mixed")[0].asDict()


def test_large_ranges_split_into_input_partitions_the_same_way_every_time(spark: Any, log: Log) -> None:
    log.topic("big", 2)
    for _ in range(6):
        log.values("big", 0, 100)
        log.values("big", 1, 20)
    options = {**log.options, "subscribe": "big", "maxRecordsPerPartition": "150"}
    df = spark.read.format("schooner").options(**options).load()
    assert df.rdd.getNumPartitions() > 3
    offsets = [(r.partition, r.offset) for r in df.collect()]
    assert sorted(offsets) == sorted((s.partition, s.offset) for s in log.read("big"))
    assert len(set(offsets)) == len(offsets) == 720

    reader = SchoonerBatchReader(parse_source(options, streaming=False))
    ranges = [(p.partition, p.start, p.end) for p in reader.partitions()]
    # A replayed micro-batch plans the same whole range again: more records after its end, and the
    # time that passed, change nothing about its split.
    log.values("big", 0, 500)
    store = BlockingStore.connect(log.url, log.ks)
    topic = log.load("big")
    whole = [(topic, 0, min(s for p, s, _ in ranges if p == 0), max(e for p, _, e in ranges if p == 0))]
    pieces = planning.plan(store, whole, 150)
    store.close()
    assert [(p.partition, p.start, p.end) for p in pieces] == [r for r in ranges if r[0] == 0]


@pytest.mark.parametrize("fail", [True, False])
def test_reading_trimmed_offsets_fails_or_skips(spark: Any, log: Log, fail: bool) -> None:
    topic = log.topic("short", 1)
    gone = log.values("short", 0, 5)
    kept = log.values("short", 0, 5, prefix="kept")

    run_sync(log.redis, retention.delete_records(log.ks, topic, 0, kept[0]))
    options = {"subscribe": "short", "startingOffsets": json.dumps({"short": {"0": gone[0]}}),
               "failOnDataLoss": str(fail).lower()}  # fmt: skip
    if fail:
        with pytest.raises(Exception, match="failOnDataLoss"):
            _read(spark, log, **options)
    else:
        assert sorted(r.value for r in _read(spark, log, **options)) == sorted(
            f"kept{i}".encode() for i in range(5)
        )


def test_batch_write_follows_topic_and_partition_columns(spark: Any, log: Log, tmp_path: Path) -> None:
    log.topic("left", 2)
    log.topic("right", 3)
    rows = [("left" if i % 2 else "right", i % 2, f"k{i}", f"value {i}") for i in range(40)]
    df = spark.createDataFrame(rows, "topic string, partition int, key string, value string")
    df.write.format("schooner").options(**log.options).mode("append").save()
    stored = {(t, s.partition, s.key, s.value) for t in ("left", "right") for s in log.read(t)}
    assert stored == {(t, p, k.encode(), v.encode()) for t, p, k, v in rows}
    with pytest.raises(Exception, match="topic option or give the rows a topic column"):
        df.drop("topic").write.format("schooner").options(**log.options).mode("append").save()
