"""Transactions in the MQ read, claim and group-create scripts: markers are never delivered, read committed
skips aborted records and stops at the last stable offset. The log is written through the storage layer's
own transactional appends and markers (the broker's path), on both offset encodings."""

from __future__ import annotations

import time
from typing import Any

import pytest

from schooner.storage.keys import Keyspace
from schooner.storage.log import append as log_append
from schooner.storage.log import transactions
from schooner.storage.log.append import APPENDED, RecordBatch
from schooner.storage.log.entry import Record, parse_fields
from schooner.storage.mq import leases, queue
from schooner.storage.topics.metadata import Topic

from .conftest import GROUP, run

pytestmark = pytest.mark.both_encodings


class Log:
    """Appends plain and transactional records to partition 0, as the broker does."""

    def __init__(self, redis: Any, ks: Keyspace, topic: Topic) -> None:
        self.redis, self.ks, self.topic = redis, ks, topic
        self.sequences: dict[int, int] = {}

    def plain(self, *values: bytes) -> None:
        self._append(RecordBatch(self._records(values)))

    def txn(self, pid: int, *values: bytes) -> None:
        seq = self.sequences.get(pid, 0)
        self.sequences[pid] = seq + len(values)
        self._append(RecordBatch(self._records(values), pid, 0, seq), f"tx-{pid}")

    def end(self, pid: int, commit: bool) -> None:
        result = run(self.redis, transactions.write_marker(self.ks, self.topic, 0, pid, 0, commit))
        assert result.status == transactions.MARKER_WRITTEN

    def _records(self, values: tuple[bytes, ...]) -> list[Record]:
        return [Record(int(time.time() * 1000), None, v) for v in values]

    def _append(self, batch: RecordBatch, transactional_id: str | None = None) -> None:
        appended = log_append.append(self.ks, self.topic, 0, batch, transactional_id=transactional_id)
        assert run(self.redis, appended).status == APPENDED


def _values(reply: Any) -> list[bytes | None]:
    return [parse_fields(d.fields)[2] for d in reply.entries]


def _pending(redis: Any, ks: Keyspace) -> list[bytes]:
    return [p.entry_id for p in run(redis, queue.pending(ks, "jobs", 0, GROUP))]


def _mixed_log(log: Log) -> None:
    """p0, then an aborted and a committed transaction interleaved, then one left open, then p1."""
    log.plain(b"p0")
    log.txn(1, b"a0")
    log.txn(2, b"c0")
    log.txn(1, b"a1")
    log.end(1, commit=False)
    log.txn(2, b"c1")
    log.end(2, commit=True)
    log.txn(3, b"o0")
    log.plain(b"p1")


def test_read_committed_skips_markers_and_aborted_records_and_stops_at_the_lso(
    redis: Any, ks: Keyspace, topic: Topic
) -> None:
    log = Log(redis, ks, topic)
    _mixed_log(log)
    run(redis, queue.create_group(ks, topic, 0, GROUP, queue.EARLIEST))
    run(redis, leases.acquire(ks, "jobs", 0, GROUP, "m", 10_000))

    got = run(redis, queue.read(ks, topic, 0, GROUP, "m", 100))
    assert _values(got) == [b"p0", b"c0", b"c1"] and got.skipped == 4  # a0, a1 and two markers
    assert len(_pending(redis, ks)) == 3  # the skipped ones were acked, and o0 and p1 were not read
    held = run(redis, queue.read(ks, topic, 0, GROUP, "m", 100))
    assert held.entries == [] and held.skipped == 0 and len(_pending(redis, ks)) == 3

    log.end(3, commit=True)
    after = run(redis, queue.read(ks, topic, 0, GROUP, "m", 100))
    assert _values(after) == [b"o0", b"p1"] and after.skipped == 1


def test_read_committed_reads_up_to_the_lso_in_pieces(redis: Any, ks: Keyspace, topic: Topic) -> None:
    log = Log(redis, ks, topic)
    log.plain(b"p0", b"p1", b"p2")
    log.txn(7, b"o0")
    log.plain(b"p3")
    run(redis, queue.create_group(ks, topic, 0, GROUP, queue.EARLIEST))
    run(redis, leases.acquire(ks, "jobs", 0, GROUP, "m", 10_000))
    assert _values(run(redis, queue.read(ks, topic, 0, GROUP, "m", 2))) == [b"p0", b"p1"]
    assert _values(run(redis, queue.read(ks, topic, 0, GROUP, "m", 2))) == [b"p2"]
    assert _values(run(redis, queue.read(ks, topic, 0, GROUP, "m", 2))) == []
    log.end(7, commit=False)
    got = run(redis, queue.read(ks, topic, 0, GROUP, "m", 2))
    assert (_values(got), got.skipped) == ([b"p3"], 1)  # o0, aborted, is skipped
    got = run(redis, queue.read(ks, topic, 0, GROUP, "m", 2))
    assert (_values(got), got.skipped) == ([], 1)  # the marker, read after p3


def test_read_uncommitted_delivers_every_record_but_no_marker(redis: Any, ks: Keyspace, topic: Topic) -> None:
    log = Log(redis, ks, topic)
    _mixed_log(log)
    run(redis, queue.create_group(ks, topic, 0, GROUP, queue.EARLIEST, committed=False))
    run(redis, leases.acquire(ks, "jobs", 0, GROUP, "m", 10_000))
    got = run(redis, queue.read(ks, topic, 0, GROUP, "m", 100, committed=False))
    assert _values(got) == [b"p0", b"a0", b"c0", b"a1", b"c1", b"o0", b"p1"] and got.skipped == 2


def test_a_group_created_at_latest_starts_at_the_lso(redis: Any, ks: Keyspace, topic: Topic) -> None:
    log = Log(redis, ks, topic)
    log.plain(b"old")
    log.txn(4, b"o0")
    log.plain(b"p0")
    run(redis, queue.create_group(ks, topic, 0, GROUP, queue.LATEST))
    run(redis, queue.create_group(ks, topic, 0, "dirty", queue.LATEST, committed=False))
    run(redis, leases.acquire(ks, "jobs", 0, GROUP, "m", 10_000))
    run(redis, leases.acquire(ks, "jobs", 0, "dirty", "m", 10_000))
    assert _values(run(redis, queue.read(ks, topic, 0, GROUP, "m", 100))) == []
    log.end(4, commit=True)
    log.plain(b"p1")
    assert _values(run(redis, queue.read(ks, topic, 0, GROUP, "m", 100))) == [b"o0", b"p0", b"p1"]
    dirty = run(redis, queue.read(ks, topic, 0, "dirty", "m", 100, committed=False))
    assert _values(dirty) == [b"p1"]  # read uncommitted: latest is the high watermark


def test_claim_acks_aborted_records_a_read_uncommitted_member_left_pending(
    redis: Any, ks: Keyspace, topic: Topic
) -> None:
    log = Log(redis, ks, topic)
    log.plain(b"p0")
    log.txn(5, b"a0", b"a1")
    log.end(5, commit=False)
    log.plain(b"p1")
    run(redis, queue.create_group(ks, topic, 0, GROUP, queue.EARLIEST))
    run(redis, leases.acquire(ks, "jobs", 0, GROUP, "old", 300))
    read = run(redis, queue.read(ks, topic, 0, GROUP, "old", 100, committed=False))
    assert _values(read) == [b"p0", b"a0", b"a1", b"p1"] and len(_pending(redis, ks)) == 4
    time.sleep(0.35)  # the old member's lease lapses
    run(redis, leases.acquire(ks, "jobs", 0, GROUP, "new", 10_000))
    claimed = run(redis, queue.claim(ks, topic, 0, GROUP, "new", b"0-0", 100))
    assert [parse_fields(d.fields)[2] for d in claimed.entries] == [b"p0", b"p1"]
    assert len(_pending(redis, ks)) == 2
