"""The executor's read of one input partition, called as Spark's worker calls it (no session needed):
transactions that span more than one XRANGE page."""

from __future__ import annotations

import pyarrow as pa
import pytest

from schooner.spark.planning import RangePartition
from schooner.spark.reading import PAGE, read_partition
from schooner.storage.log import append as log_append
from schooner.storage.log import transactions
from schooner.storage.log.append import RecordBatch
from schooner.storage.redis.calls import run_sync
from tests.spark.conftest import BASE_MS, Log, Rec

pytestmark = pytest.mark.both_encodings


def _txn_append(log: Log, pid: int, seq: int, values: list[bytes]) -> None:
    batch = RecordBatch([Rec(BASE_MS, None, v) for v in values], pid, 0, seq)
    appended = log_append.append(log.ks, log.load("big-txn"), 0, batch, transactional_id=f"tx-{pid}")
    result = run_sync(log.redis, appended)
    assert result.status == 0, result


def _end(log: Log, pid: int, commit: bool) -> None:
    marker = transactions.write_marker(log.ks, log.load("big-txn"), 0, pid, 0, commit)
    assert run_sync(log.redis, marker).status == transactions.MARKER_WRITTEN


def _values(batches: list[pa.RecordBatch]) -> list[bytes]:
    return [v for b in batches for v in b.column("value").to_pylist()]


def test_aborted_and_committed_transactions_across_pages(log: Log) -> None:
    log.topic("big-txn", 1)
    log.values("big-txn", 0, 3, prefix="before")
    chunk, chunks = 500, (PAGE // 500) // 2 + 2  # each transaction: more than half a page
    for i in range(chunks):
        _txn_append(log, 1, i * chunk, [b"x%d" % (i * chunk + j) for j in range(chunk)])
        _txn_append(log, 2, i * chunk, [b"c%d" % (i * chunk + j) for j in range(chunk)])
    _end(log, 1, commit=False)
    _end(log, 2, commit=True)
    log.values("big-txn", 0, 2, prefix="later")
    topic = log.load("big-txn")
    end = log.read("big-txn")[-1].offset + 1
    assert end > PAGE  # two pages at least

    def read(committed: bool) -> list[bytes]:
        part = RangePartition(topic, 0, 0, end, check_loss=True)
        return _values(list(read_partition(part, log.url, log.keyspace, False, True, committed)))

    plain = [b"before0", b"before1", b"before2"]
    committed_values = [b"c%d" % n for n in range(chunks * chunk)]
    assert read(committed=True) == plain + committed_values + [b"later0", b"later1"]
    everything = read(committed=False)
    assert len(everything) == 3 + 2 * chunks * chunk + 2 and None not in everything  # no marker
    assert [v for v in everything if v.startswith(b"x")] == [b"x%d" % n for n in range(chunks * chunk)]
