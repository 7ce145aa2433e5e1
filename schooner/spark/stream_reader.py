"""The streaming reader: Kafka offsets per partition in the checkpoint, admission control, AvailableNow.

Spark builds this object on the driver, keeps it there for the query's planning calls, and ships
copies to executors for read(). So it holds options and small driver-side state only; connections
live in reading's per-process cache.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Sequence

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    ReadMinRows,
    SupportsTriggerAvailableNow,
)

from ..storage.log.read import PartitionBounds
from ..storage.topics.metadata import Topic
from . import planning
from .decoded import ReaderSchema, decode_batches
from .options import SourceOptions, TopicPartition
from .planning import FROM_BEGINNING, DataLossError, RangePartition, data_loss_message
from .reading import PAGE, log_for, read_partition
from .tiers import PlanningLog

log = logging.getLogger(__name__)

Range = tuple[Topic, int, int, int]  # topic, partition, start (inclusive), end (exclusive)


def take(store: PlanningLog, ranges: Sequence[Range], n: int) -> tuple[dict[TopicPartition, int], int]:
    """Ends that admit exactly n records in all (fewer if fewer are there), shared out evenly: each
    round asks every partition that still has records for an equal part of what is left.

    Returns the end per partition and the number of records admitted.
    """
    ends = {planning.key(t, p): s for t, p, s, _ in ranges}
    active = [r for r in ranges if r[3] > max(r[2], 0)]
    remaining = n
    while remaining > 0 and active:
        share, extra = divmod(remaining, len(active))
        asks = [
            (t, p, ends[planning.key(t, p)], e, min(share + (i < extra), PAGE))
            for i, (t, p, _, e) in enumerate(active)
        ]
        asks = [a for a in asks if a[4] > 0]
        still = []
        for (t, p, _, e, want), (got, after) in zip(asks, store.next_ends(asks), strict=True):
            remaining -= got
            if got:
                ends[planning.key(t, p)] = after
            if got < want:
                ends[planning.key(t, p)] = e  # exhausted: past any gap at the tail too
            elif after < e:
                still.append((t, p, after, e))
        active = still
    return ends, n - remaining


class SchoonerStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, opts: SourceOptions, readers: tuple[ReaderSchema, ...] = ()) -> None:
        self.opts = opts
        self.readers = readers  # the decoded columns' reader schemas, resolved when the query started
        self._target: dict[TopicPartition, int] | None = None  # Trigger.AvailableNow's end
        self._last_trigger = time.monotonic()  # for minOffsetsPerTrigger with maxTriggerDelay

    # -- driver ------------------------------------------------------------------------------------
    def _store(self) -> PlanningLog:
        return log_for(self.opts)

    def _current(
        self,
    ) -> tuple[list[tuple[Topic, int]], list[PartitionBounds], list[int], set[TopicPartition]]:
        """Subscribed partitions with their bounds and the end of the reader's view of each (the LSO for
        read_committed), and every partition that exists."""
        store = self._store()
        topics = store.topics()
        existing = {(t.name, p) for t in topics for p in range(t.partitions)}
        sub = self.opts.subscription
        tps = [
            (t, p)
            for t in topics
            if sub.matches(t.name)
            for p in sub.partitions_of(t.name, t.partitions)
            if p < t.partitions
        ]
        bounds, ends = planning.load_bounds(store, tps, self.opts.committed)
        return tps, bounds, ends, existing

    def initialOffset(self) -> dict:
        tps, bounds, ends, _ = self._current()
        seen = planning.visible(bounds, ends)
        start = planning.resolve(self._store(), tps, seen, self.opts.starting, self.opts.timestamp_strategy)
        return planning.to_json(start)

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.opts.max_offsets_per_trigger:
            return ReadMaxRows(self.opts.max_offsets_per_trigger)
        if self.opts.min_offsets_per_trigger:
            return ReadMinRows(self.opts.min_offsets_per_trigger)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        tps, _, ends, _ = self._current()
        self._target = {planning.key(t, p): e for (t, p), e in zip(tps, ends, strict=True)}

    def reportLatestOffset(self) -> dict | None:
        tps, _, ends, _ = self._current()
        return planning.to_json({planning.key(t, p): e for (t, p), e in zip(tps, ends, strict=True)})

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        begin = planning.from_json(start)
        tps, bounds, view_ends, existing = self._current()
        gone = sorted(k for k in begin if k not in existing)
        if gone:
            text = data_loss_message(f"partitions {', '.join(f'{t}-{p}' for t, p in gone)} no longer exist")
            if self.opts.fail_on_data_loss:
                raise DataLossError(text)
            log.warning(text)
        ranges: list[Range] = []
        for (topic, p), b, view_end in zip(tps, bounds, view_ends, strict=True):
            k = planning.key(topic, p)
            end = view_end
            if self._target is not None:
                if k not in self._target:
                    continue  # appeared after AvailableNow began
                end = min(end, self._target[k])
            s = begin.get(k, FROM_BEGINNING)
            if s > b.high_watermark:
                if self._target is None:
                    text = data_loss_message(
                        f"{topic.name}-{p}: offset {s} is past the log's end {b.high_watermark}"
                    )
                    if self.opts.fail_on_data_loss:
                        raise DataLossError(text)
                    log.warning(text)  # partitions() then reads the partition from its beginning
            elif s > end:
                end = s  # read_committed from where an uncommitted read stopped: wait for the LSO
            ranges.append((topic, p, s, end))
        ends = self._admit(ranges, limit)
        if ends is None:
            return start  # too few records for minOffsetsPerTrigger yet: no batch
        if ends != begin:
            self._last_trigger = time.monotonic()
        return planning.to_json(ends)

    def _admit(self, ranges: list[Range], limit: ReadLimit) -> dict[TopicPartition, int] | None:
        everything = {planning.key(t, p): e for t, p, _, e in ranges}
        if isinstance(limit, ReadAllAvailable):
            return everything  # the engine's call (Trigger.Once, a last AvailableNow batch): no limit
        most = limit.max_rows if isinstance(limit, ReadMaxRows) else self.opts.max_offsets_per_trigger
        least = limit.min_rows if isinstance(limit, ReadMinRows) else self.opts.min_offsets_per_trigger
        if self._target is not None:
            least = None  # AvailableNow must not wait for records that will never come
        counting = [(t, p, max(s, 0), e) for t, p, s, e in ranges if s <= e]
        if most:
            ends, admitted = take(self._store(), counting, most)
            ends.update({planning.key(t, p): e for t, p, s, e in ranges if s > e})
        else:
            ends = everything
            admitted = take(self._store(), counting, least)[1] if least else 0
        waited_ms = (time.monotonic() - self._last_trigger) * 1000
        if least and admitted < least and waited_ms < self.opts.max_trigger_delay_ms:
            return None
        return ends

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        begin, stop = planning.from_json(start), planning.from_json(end)
        store = self._store()
        topics = {t.name: t for t in store.topics()}
        ranges = []
        for (name, p), e in stop.items():
            topic = topics.get(name)
            if topic is None or p >= topic.partitions:
                continue  # deleted since: latestOffset reported it
            s = begin.get((name, p), FROM_BEGINNING)
            if s > e:
                if self.opts.fail_on_data_loss:
                    raise DataLossError(
                        data_loss_message(f"{name}-{p}: offset {s} is past the log's end {e}")
                    )
                s = FROM_BEGINNING  # the topic was re-created: read the new log from its beginning
            ranges.append((topic, p, s, e))
        return planning.plan(store, ranges, self.opts.max_records_per_partition, self.opts.min_partitions)

    def commit(self, end: dict) -> None:
        pass  # the log keeps records by retention, not by what readers have read

    # -- executors ---------------------------------------------------------------------------------
    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, RangePartition):
            return iter(())
        o = self.opts
        batches = read_partition(
            partition, o.redis_url, o.keyspace, o.include_headers, o.fail_on_data_loss, o.committed, o.cold
        )
        return decode_batches(batches, self.readers, o.redis_url, o.keyspace, o.include_headers)
