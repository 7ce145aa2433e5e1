"""The long poll that Fetch and ShareFetch share (broker/partitions/reader.py): it reads again when an
append wakes it, stops when the read has enough or the deadline passes, and leaves no waiter behind."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from schooner.broker.partitions.partition_ends import PartitionEnds
from schooner.broker.partitions.reader import PartitionReader
from schooner.broker.partitions.recent_batches import RecentBatches
from schooner.broker.partitions.waiters import AppendWaiters
from schooner.storage.topic_partition import TopicPartition

WAITS = [TopicPartition("t", 0)]


def _reader() -> tuple[PartitionReader, AppendWaiters]:
    waiters = AppendWaiters()
    store: Any = None  # a long poll reads only through the caller's read()
    return PartitionReader(store, RecentBatches(), PartitionEnds(waiters), waiters, None, None), waiters


def test_an_append_wakes_the_poll_and_it_reads_again() -> None:
    async def run() -> tuple[int, float]:
        reader, waiters = _reader()
        reads = 0

        async def read() -> bool:
            nonlocal reads
            reads += 1
            return reads == 2  # the second read finds enough

        asyncio.get_running_loop().call_later(0.05, waiters.notify, "t", 0)
        started = time.monotonic()
        await reader.long_poll(WAITS, started + 5, read)
        assert waiters.waiting == 0 and not waiters.waited()
        return reads, time.monotonic() - started

    reads, took = asyncio.run(run())
    assert reads == 2 and took < 1


def test_the_poll_ends_at_the_deadline_or_at_once_with_nothing_to_wait_on() -> None:
    async def run() -> tuple[int, float, int]:
        reader, waiters = _reader()
        reads = 0

        async def never() -> bool:
            nonlocal reads
            reads += 1
            return False

        started = time.monotonic()
        await reader.long_poll(WAITS, started + 0.2, never, poll=0.05)  # poll: read again meanwhile
        took = time.monotonic() - started
        polled = reads
        reads = 0
        await reader.long_poll([], started + 5, never)
        return polled, took, reads

    polled, took, alone = asyncio.run(run())
    assert 0.2 <= took < 1 and polled >= 3
    assert alone == 1  # no partition to wait on: one read, no wait
