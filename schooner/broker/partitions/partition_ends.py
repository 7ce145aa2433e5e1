"""Fetch's reads of partitions that found nothing new, reused until the partition is appended to.

A consumer of many partitions sends a Fetch that names all of them (a fetch session's too: the broker
reads every partition of the session), and a parked Fetch reads them all again on each wake-up, though
at any moment most of them are at their end. Without this every such read is a round of XRANGE, XINFO
STREAM and the state reads per partition, so the cost per record grows with the partition count.

An entry is kept only for a read that found no records and no error. It is reused for a fetch from the
same offset while the partition has had no append notice since the read was sent (AppendWaiters counts
them: this broker's appends, and the append scripts' notices from any broker) and for at most
`window` seconds: writers that publish no notice (plain Redis clients, retention's trims, a Redis
Cluster notice that arrived before its subscription) are seen at most that much later by fetches that
do not wait; waiting fetches are woken by the look at their partitions' last IDs (waiters.py).
"""

from __future__ import annotations

import uuid

from ...storage.log.read import PartitionRead
from ...storage.topic_partition import TopicPartition
from ...storage.topics.metadata import Topic
from .waiters import AppendWaiters

# Twice the fetch handler's poll interval: a writer that publishes no notice is seen within a second or so.
WINDOW_SECONDS = 1.0
# Entries of deleted topics are never read again; past this many the lot is dropped and rebuilt.
MAX_ENTRIES = 200_000


class PartitionEnds:
    def __init__(self, waiters: AppendWaiters, window: float = WINDOW_SECONDS) -> None:
        self._waiters = waiters
        self._window = window
        # (topic id, partition) -> (time the read was sent, appends counted then, offset, the read, and
        # the partition by name, as the waiters count its notices)
        self._ends: dict[tuple[uuid.UUID, int], tuple[float, int, int, PartitionRead, TopicPartition]] = {}

    def mark(self, topic: Topic, partition: int) -> int:
        """Taken before the read is sent: an append that the read may have missed bumps the count."""
        return self._waiters.appends(TopicPartition(topic.name, partition))

    def get(self, topic: Topic, partition: int, offset: int, now: float) -> PartitionRead | None:
        found = self._ends.get((topic.id, partition))
        if found is None:
            return None
        at, appends, seen_offset, read, named = found
        if seen_offset != offset or now - at > self._window or appends != self._waiters.appends(named):
            return None
        return read

    def put(
        self, topic: Topic, partition: int, offset: int, sent_at: float, appends: int, read: PartitionRead
    ) -> None:
        """Keeps a read that found nothing from `offset` (callers check that it found no error either)."""
        if len(self._ends) >= MAX_ENTRIES:
            self._ends.clear()
        self._ends[(topic.id, partition)] = (
            sent_at,
            appends,
            offset,
            read,
            TopicPartition(topic.name, partition),
        )

    def put_end(
        self,
        topic: Topic,
        partition: int,
        end: int,
        sent_at: float,
        appends: int,
        log_start: int,
        first_valid: int,
        last_stable: int,
    ) -> None:
        """Keeps what a read from `end` would find when `end` is the partition's high watermark: nothing."""
        self.put(
            topic,
            partition,
            end,
            sent_at,
            appends,
            PartitionRead([], log_start, end, first_valid, last_stable),
        )

    def __len__(self) -> int:
        return len(self._ends)
