"""The log as the readers plan it: Redis (the hot tier) and, with coldStore, the topics' tables (the cold
tier) below it, one offset order across both. The rules are the broker's (storage/cold/tiers.py), over
the same tier marks.

TieredLog answers the driver's planning questions (bounds, timestamps, record counts) over both tiers,
with the same methods as BlockingStore, so planning and admission control read it in place of one.
Everything it answers about a range comes from the records in that range, whichever tier holds them;
the archiver moving records from Redis to Delta (and trimming Redis) changes no answer, so a replayed
micro-batch is planned and split as it was the first time.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Protocol

from ..storage.blocking_store import BlockingStore
from ..storage.cold import tiers
from ..storage.cold.marks import TierMarks
from ..storage.log.read import PartitionBounds
from ..storage.topics.metadata import Topic
from .options import ColdOptions

if TYPE_CHECKING:
    from ..storage.cold.formats import ColdTables
    from ..storage.cold.table import ColdStore

COLD_PAGE = 32_768  # records per cold read: one Parquet row group of the archiver's files
COLD_PAGE_BYTES = 64 << 20  # ... and at most this much key and value data

_cold_stores: dict[tuple[ColdOptions, str, str], ColdTables] = {}


def cold_for(cold: ColdOptions, keyspace: str, redis_url: str) -> ColdTables:
    """One cold store per cold store, keyspace and process: it caches each table's file index. Topics of
    either table format (Delta, Iceberg); an Iceberg topic's catalog is coldStore.catalog's, or the one
    kept in the Redis at redis_url."""
    found = _cold_stores.get((cold, keyspace, redis_url))
    if found is None:
        # Imported here: delta-rs (or pyiceberg) loads only in the processes of queries that read a cold tier.
        from ..storage.cold.formats import ColdTables
        from ..storage.cold.iceberg.clients import from_url
        from ..storage.cold.location import ColdLocation

        location = ColdLocation.from_url(
            cold.url,
            endpoint=cold.endpoint,
            region=cold.region,
            access_key_id=cold.access_key_id,
            secret_access_key=cold.secret_access_key,
            allow_http=cold.allow_http,
        )
        tables = ColdTables(location, keyspace, cold.catalog, functools.partial(from_url, redis_url))
        found = _cold_stores[(cold, keyspace, redis_url)] = tables
    return found


_UNTIERED = TierMarks(None, None)  # the marks of a log read without its cold tier


class PlanningLog(Protocol):
    """What planning reads of the log: BlockingStore (Redis alone) or TieredLog (both tiers)."""

    def topics(self) -> list[Topic]: ...
    def bounds_of(self, partitions: Sequence[tuple[Topic, int]]) -> list[PartitionBounds]: ...
    def stable_bounds_of(
        self, partitions: Sequence[tuple[Topic, int]]
    ) -> list[tuple[PartitionBounds, int]]: ...
    def offset_for_timestamp(
        self, topic: Topic, partition: int, timestamp: int
    ) -> tuple[int, int] | None: ...
    def entries_in_ms(self, topic: Topic, partition: int, probes: Sequence[int], below: int) -> list[int]: ...
    def next_ends(self, wanted: Sequence[tuple[Topic, int, int, int, int]]) -> list[tuple[int, int]]: ...


class TieredLog:
    """BlockingStore's planning reads over both tiers; with no cold store, BlockingStore's answers."""

    def __init__(self, store: BlockingStore, cold: ColdTables | ColdStore | None) -> None:
        self.store = store
        self.cold = cold

    def topics(self) -> list[Topic]:
        return self.store.topics()

    def bounds_of(self, partitions: Sequence[tuple[Topic, int]]) -> list[PartitionBounds]:
        hot = self.store.bounds_of(partitions)
        marks = self._marks(partitions)
        return [self._lowered(b, m) for b, m in zip(hot, marks, strict=True)]

    def stable_bounds_of(self, partitions: Sequence[tuple[Topic, int]]) -> list[tuple[PartitionBounds, int]]:
        pairs = self.store.stable_bounds_of(partitions)
        marks = self._marks(partitions)
        return [(self._lowered(b, m), stable) for (b, stable), m in zip(pairs, marks, strict=True)]

    def _marks(self, partitions: Sequence[tuple[Topic, int]]) -> list[TierMarks]:
        """The tier marks, the one source of the cold tier's extent (storage/cold/tiers.py)."""
        return self.store.tier_marks(partitions) if self.cold is not None else [_UNTIERED] * len(partitions)

    @staticmethod
    def _lowered(hot: PartitionBounds, marks: TierMarks) -> PartitionBounds:
        """The whole log's bounds: its start is the cold tier's first offset (Kafka's earliest, -2)."""
        start = tiers.log_start(marks, hot.log_start_offset)
        if start >= hot.log_start_offset:
            return hot
        return replace(hot, log_start_offset=start, first_valid_offset=min(start, hot.first_valid_offset))

    def offset_for_timestamp(self, topic: Topic, partition: int, timestamp: int) -> tuple[int, int] | None:
        """Kafka's rule over both tiers, as the broker's ListOffsets answers it (broker/tiering)."""
        cold = None
        if self.cold is not None:
            (marks,) = self._marks([(topic, partition)])
            span = tiers.cold_span(marks)
            if span is not None:
                cold = self.cold.offset_for_timestamp(
                    topic, partition, timestamp, marks.archived_end, start=span[0]
                )
            if cold is not None and not tiers.needs_hot_lookup(cold, self._hot_from(topic, partition)):
                return cold
        return tiers.earliest_match(cold, self.store.offset_for_timestamp(topic, partition, timestamp))

    def cold_start(self, topic: Topic, partition: int) -> int | None:
        """The cold tier's first offset by the marks (None: it holds none of the partition)."""
        (marks,) = self._marks([(topic, partition)])
        span = tiers.cold_span(marks)
        return None if span is None else span[0]

    def _hot_from(self, topic: Topic, partition: int) -> int:
        """The lowest offset Redis still holds every record from (nothing at or after it was removed)."""
        return self.store.bounds_of([(topic, partition)])[0].first_valid_offset

    def entries_in_ms(self, topic: Topic, partition: int, probes: Sequence[int], below: int) -> list[int]:
        """BlockingStore.entries_in_ms, with the milliseconds Redis no longer holds counted in the cold
        tier: the last entry's sequence + 1 either way, so a range is estimated (and split) the same
        before and after the archiver moved it."""
        counts = self.store.entries_in_ms(topic, partition, probes, below)
        if self.cold is None or not any(c == 0 for c in counts):
            return counts
        bits = topic.offsets.bits
        mask = (1 << bits) - 1
        hot_from = self._hot_from(topic, partition)
        cold_start = self.cold_start(topic, partition)
        out = list(counts)
        for i, (ms, count) in enumerate(zip(probes, counts, strict=True)):
            first = ms << bits
            if count or first >= hot_from:
                continue
            stop = min(first + mask + 1, below)
            got = self.cold.read(topic, partition, first, COLD_PAGE_BYTES, mask + 1, start=cold_start)
            inside = [o for o in map(topic.offsets.offset_of_id, (e[0] for e in got.entries)) if o < stop]
            out[i] = (inside[-1] & mask) + 1 if inside else 0
        return out

    def next_ends(self, wanted: Sequence[tuple[Topic, int, int, int, int]]) -> list[tuple[int, int]]:
        """BlockingStore.next_ends: for each (topic, partition, start, end, n), how many records lie in
        [start, end) up to n and the offset after the last of them; counted in the cold tier from
        where Redis no longer holds the records, then on in Redis."""
        if self.cold is None:
            return self.store.next_ends(wanted)
        partitions = [(t, p) for t, p, *_ in wanted]
        hot_from = [b.first_valid_offset for b in self.store.bounds_of(partitions)]
        spans = [tiers.cold_span(m) for m in self._marks(partitions)]
        cold: list[tuple[int, int]] = []  # per ask: records counted in the cold tier, and after them
        asks: list[tuple[Topic, int, int, int, int]] = []  # what is left for Redis
        for (topic, p, start, end, n), valid, span in zip(wanted, hot_from, spans, strict=True):
            if start >= valid or span is None or end <= start or n <= 0:
                cold.append((0, start))
                asks.append((topic, p, start, end, n))
                continue
            got, after, resume = self._cold_count(topic, p, start, end, n, span[0])
            cold.append((got, after))
            asks.append((topic, p, resume, end, n - got))  # n - got == 0: Redis counts nothing
        out = []
        for (got, after), (more, later) in zip(cold, self.store.next_ends(asks), strict=True):
            out.append((got + more, later if more else after))
        return out

    def _cold_count(
        self, topic: Topic, partition: int, start: int, end: int, n: int, cold_start: int
    ) -> tuple[int, int, int]:
        """Up to n cold records in [start, end): how many, the offset after the last, and where the
        count goes on in Redis when it found fewer (the cold tier's end)."""
        assert self.cold is not None
        got, after, pos = 0, start, start
        while got < n and pos < end:
            read = self.cold.read(
                topic, partition, pos, COLD_PAGE_BYTES, min(n - got, COLD_PAGE), start=cold_start
            )
            if not read.entries:
                return got, after, max(pos, read.end_offset)
            inside = [o for o in map(topic.offsets.offset_of_id, (e[0] for e in read.entries)) if o < end]
            got += len(inside)
            if inside:
                after = inside[-1] + 1
            if len(inside) < len(read.entries):
                return got, after, end
            pos = read.next_offset
        return got, after, pos
