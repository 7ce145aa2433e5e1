"""Both tiers without a SparkSession: the executor's read of an input partition that starts in the cold
tier (Delta or Iceberg) and ends in Redis, and the driver's planning answers (bounds, counts, splits,
timestamps), each compared with the same read or answer before the records were archived and trimmed."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from schooner.spark import planning, reading
from schooner.spark.options import ColdOptions
from schooner.spark.planning import DataLossError, RangePartition
from schooner.spark.reading import read_partition, store_for
from schooner.spark.tiers import TieredLog
from tests.spark.conftest import BASE_MS, Log, Rec, Tiers

pytestmark = pytest.mark.both_encodings


def _fill(log: Log, tiers: Tiers, name: str, **configs: str) -> None:
    """Plain records (nulls, headers), an aborted and a committed transaction interleaved, more plain
    records, and an aborted transaction at the end."""
    log.topic(name, 1, **configs)
    log.append(name, 0, [
        Rec(BASE_MS, None, b"no key"),
        Rec(BASE_MS + 1, b"tomb", None),
        Rec(BASE_MS + 2, b"h", b"headers", [("a", b"1"), ("a", None), ("bin", bytes([0, 255]))]),
        Rec(BASE_MS + 3, b"", b""),
    ])  # fmt: skip
    for i in range(3):
        tiers.txn(name, 0, 1, 2 * i, [Rec(BASE_MS + 10 + i, None, b"x%d" % i)] * 2)
        tiers.txn(name, 0, 2, i, [Rec(BASE_MS + 10 + i, None, b"c%d" % i)])
        log.values(name, 0, 2, prefix=f"mid{i}-", ts=BASE_MS + 20 + i)
    tiers.end_txn(name, 0, 1, commit=False)
    tiers.end_txn(name, 0, 2, commit=True)
    log.values(name, 0, 12, prefix="late", ts=BASE_MS + 30)
    tiers.txn(name, 0, 3, 0, [Rec(BASE_MS + 40, None, b"y")])
    tiers.end_txn(name, 0, 3, commit=False)
    log.values(name, 0, 3, prefix="last", ts=BASE_MS + 50)


def _rows(log: Log, part: RangePartition, committed: bool, cold: ColdOptions | None) -> list[dict[str, Any]]:
    batches = read_partition(part, log.url, log.keyspace, True, True, committed, cold)
    return pa.Table.from_batches(list(batches)).to_pylist() if batches else []


def _whole(log: Log, name: str) -> RangePartition:
    stored = log.read(name)
    return RangePartition(log.load(name), 0, stored[0].offset, stored[-1].offset + 1, check_loss=True)


@pytest.mark.parametrize("table_format", ["delta", "iceberg"])
@pytest.mark.parametrize("committed", [True, False])
def test_a_range_reads_the_cold_tier_then_redis_the_same_records_once(
    log: Log, tiers: Tiers, committed: bool, table_format: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(reading, "COLD_PAGE", 4)  # many cold pages, transactions across them
    _fill(log, tiers, "mixed", **{"schooner.table.format": table_format})
    part = _whole(log, "mixed")
    before = _rows(log, part, committed, None)
    cold = ColdOptions(tiers.url)
    assert _rows(log, part, committed, cold) == before  # nothing archived yet: Redis alone
    tiers.archive("mixed", 0, 9)  # the slice stops before the open transactions: fewer
    tiers.archive("mixed", 0, 14)
    hot_start = log.read("mixed")[0].offset
    assert hot_start > part.start  # Redis lost the first records
    assert _rows(log, part, committed, cold) == before
    values = [r["value"] for r in before]
    assert b"c0" in values and b"mid0-0" in values
    assert (b"x0" in values) is (not committed) and (b"y" in values) is (not committed)
    assert values.count(b"c1") == 1 and None in values  # the tombstone; markers are never rows
    # A range wholly in the cold tier, one from its middle, and one across the boundary.
    offsets = [r["offset"] for r in before]
    for start, end in ((part.start, hot_start), (offsets[3], hot_start), (offsets[5], offsets[-3])):
        piece = RangePartition(part.topic, 0, start, end, check_loss=True)
        assert _rows(log, piece, committed, cold) == [r for r in before if start <= r["offset"] < end]
    # Everything archived: Redis holds no record of the partition.
    while tiers.archive("mixed", 0, 100) < part.end:
        pass
    assert log.read("mixed") == []
    assert _rows(log, part, committed, cold) == before


def test_without_the_cold_store_the_archived_part_is_data_loss(log: Log, tiers: Tiers) -> None:
    _fill(log, tiers, "lossy")
    part = _whole(log, "lossy")
    tiers.archive("lossy", 0, 10)
    with pytest.raises(DataLossError, match="set coldStore"):
        _rows(log, part, True, None)


def test_records_gone_from_the_cold_tier_are_data_loss(log: Log, tiers: Tiers) -> None:
    _fill(log, tiers, "retained")
    part = _whole(log, "retained")
    before = _rows(log, part, False, None)
    tiers.archive("retained", 0, 30)
    topic = log.load("retained")
    cut = before[6]["offset"]
    tiers.trim("retained", 0, cut)  # retention of the whole log
    cold = ColdOptions(tiers.url)
    with pytest.raises(DataLossError, match="cold tier now starts at"):
        _rows(log, part, False, cold)
    kept = list(read_partition(part, log.url, log.keyspace, True, False, False, cold))
    assert pa.Table.from_batches(kept).to_pylist() == before[6:]
    log_view = TieredLog(store_for(log.url, log.keyspace), tiers.cold)
    assert log_view.bounds_of([(topic, 0)])[0].log_start_offset == cut


def test_planning_answers_the_same_before_and_after_archiving(log: Log, tiers: Tiers) -> None:
    log.topic("planned", 1)
    for i in range(12):  # several appends: on a timestamp-encoded topic, offsets with gaps
        log.values("planned", 0, 25, prefix=f"b{i}-", ts=BASE_MS + 1000 * i)
    topic = log.load("planned")
    stored = log.read("planned")
    start, end = stored[0].offset, stored[-1].offset + 1
    view = TieredLog(store_for(log.url, log.keyspace), tiers.cold)
    ks = [(topic, 0, s.offset, end, n) for s in stored[::37] for n in (1, 30, 400)]
    probes = planning.probe_ms(start, end, topic.offsets.bits)

    def answers() -> tuple[Any, ...]:
        bounds = view.bounds_of([(topic, 0)])[0]
        return (
            (bounds.log_start_offset, bounds.high_watermark),
            view.next_ends(ks),
            view.entries_in_ms(topic, 0, probes, end) if not topic.offsets.dense else None,
            [view.offset_for_timestamp(topic, 0, BASE_MS + 1000 * i) for i in (0, 3, 7, 11, 12)],
            [(p.start, p.end) for p in planning.plan(view, [(topic, 0, start, end)], 70)],
        )

    before = answers()
    assert before[0] == (start, end)
    tiers.archive("planned", 0, 180)
    assert log.read("planned")[0].offset > start
    assert answers() == before
    while tiers.archive("planned", 0, 1000) < end:
        pass
    assert answers() == before
