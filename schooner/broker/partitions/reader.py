"""PartitionReader: a fetch's partitions read through a cascade of sources, and the long poll around it.

Each partition is answered by the first source that can, cheapest first:

1. recent_batches.py: the batches this broker just appended, served as they were sent;
2. partition_ends.py: a read that found the partition's end, until its next append notice;
3. Redis: every partition left, in one pipelined `Store.read_many`, sized by the partition's average
   entry size from its last read (so XRANGE COUNT fetches about the partition's byte budget);
4. the cold tier (cold_reads.py): a tiered partition's offsets below its Redis start, read through
   AsyncColdStore in threads, the high watermark and LSO from that partition's Redis read.

A new source goes into `read` in the order of its cost, and must answer as a Redis read would.
The response's max_bytes then applies across partitions, the first with records always going (KIP-74).

Callers: handlers/fetch.py (`long_poll` around `read`; `kept_end` for a fetch session's unmoved
partitions; `count_out`) and handlers/share_fetch.py (`long_poll` around its acquire). Waits are woken
by appends (waiters.py), not by polling Redis.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from kio.schema.errors import ErrorCode

from ...storage.cold import tiers
from ...storage.cold.errors import ColdStoreError
from ...storage.cold.tiers import Tier
from ...storage.log.raw_entries import last_entry_id
from ...storage.log.read import PartitionRead
from ...storage.log.transactions import AbortedTransaction
from ...storage.store import Store
from ...storage.topic_partition import TopicPartition
from ...storage.topics.metadata import Topic
from ..outages import LOG_UNAVAILABLE, STORAGE_ERRORS
from .cold_reads import ColdReads
from .fetch_codec import codec_for, encode_entries
from .partition_ends import PartitionEnds
from .recent_batches import RecentBatches, Served
from .waiters import AppendWaiters

if TYPE_CHECKING:
    from ..metrics import BrokerMetrics

# Entries read per XRANGE before the partition's average size is known.
FIRST_READ_COUNT = 100
MAX_READ_COUNT = 10000


@dataclass(slots=True)
class PartitionAnswer:
    """One partition's part of a Fetch response."""

    index: int
    error: ErrorCode = ErrorCode.none
    high_watermark: int = -1
    log_start: int = -1
    last_stable: int = -1
    aborted: tuple[AbortedTransaction, ...] = ()
    records: bytes = b""
    count: int = 0  # records in `records` (the metrics' records out)


class WantedPartition(Protocol):
    """A FetchPartition of any served version (or a fetch session's, fetch_sessions.py)."""

    @property
    def partition(self) -> int: ...
    @property
    def fetch_offset(self) -> int: ...
    @property
    def partition_max_bytes(self) -> int: ...


class WantedTopic(Protocol):
    """A FetchTopic of any served version: its partitions (the handler reads its name)."""

    @property
    def partitions(self) -> Sequence[WantedPartition]: ...


Reading = Sequence[tuple[WantedTopic, Topic | ErrorCode]]


class PartitionReader:
    def __init__(
        self,
        store: Store,
        recent: RecentBatches,
        ends: PartitionEnds,
        waiters: AppendWaiters,
        metrics: BrokerMetrics | None,
        tenant: str | None,
        cold: ColdReads | None = None,
    ) -> None:
        self._store = store
        self._cold = cold or ColdReads(store, None)
        self._recent = recent
        self._ends = ends
        self._waiters = waiters
        self._metrics = metrics
        self._tenant = tenant
        # Average entry size per partition, from its last read, to size the next XRANGE COUNT.
        self._sizes: dict[TopicPartition, int] = {}

    def forget_topic(self, name: str) -> None:
        """Drops what the reader keeps of the topic's cold tier (it was deleted, or changed)."""
        self._cold.forget(name)

    async def long_poll(
        self,
        waits: Sequence[TopicPartition],
        deadline: float,
        read: Callable[[], Awaitable[bool]],
        poll: float | None = None,
    ) -> None:
        """Calls read() until it says it has enough, the deadline (time.monotonic()) passes, or there is
        nothing to wait on; between reads, waits for an append to a partition of `waits` (or `poll`
        seconds, for changes that publish no notice)."""
        waiters = self._waiters
        while True:
            # Listen before reading: an append landing between the read and the wait still wakes us.
            event = waiters.register(waits)
            try:
                done = await read()
                remaining = deadline - time.monotonic()
                if done or remaining <= 0 or not waits:
                    return
                await waiters.wait(event, remaining if poll is None else min(remaining, poll))
            finally:
                waiters.unregister(waits, event)

    def kept_end(self, topic: Topic, partition: int, offset: int, now: float) -> PartitionRead | None:
        """The kept read at the partition's end from `offset`, while it holds (partition_ends.py)."""
        return self._ends.get(topic, partition, offset, now)

    async def read(
        self, reading: Reading, max_bytes: int, committed: bool, partition_cap: int | None = None
    ) -> tuple[list[list[PartitionAnswer]], int]:
        """Each partition's answer, in the request's shape, and the record bytes they hold together."""
        results = [[PartitionAnswer(p.partition) for p in wanted.partitions] for wanted, _ in reading]
        # Every partition is read in one pipelined round trip (not one connection each: a Fetch may name
        # more partitions than the connection pool holds).
        planned: list[tuple[PartitionAnswer, Topic, WantedPartition, int]] = []
        for (wanted, topic), row in zip(reading, results, strict=True):
            for request, result in zip(wanted.partitions, row, strict=True):
                if isinstance(topic, ErrorCode):
                    result.error = topic
                elif not 0 <= request.partition < topic.partitions:
                    result.error = ErrorCode.unknown_topic_or_partition
                else:
                    budget = (
                        request.partition_max_bytes
                        if partition_cap is None
                        else min(request.partition_max_bytes, partition_cap)
                    )
                    planned.append((result, topic, request, max(budget, 1)))
        if planned:
            await self._read_planned(planned, committed)
        # The response's max_bytes applies across partitions; the first one with data always goes (KIP-74).
        total = 0
        for row in results:
            for r in row:
                if not r.records:
                    continue
                if total and total + len(r.records) > max_bytes:
                    r.records = b""
                    continue
                total += len(r.records)
        return results, total

    def count_out(self, reading: Reading, results: list[list[PartitionAnswer]]) -> None:
        """Records and bytes out, per partition from what the encoder counted (what goes in the response)."""
        if self._metrics is None:
            return
        for (_, topic), row in zip(reading, results, strict=True):
            if not isinstance(topic, Topic):
                continue
            records = size = 0
            for r in row:
                if r.records:
                    records += r.count
                    size += len(r.records)
            if size:
                self._metrics.topic(self._tenant, topic.name).fetched(records, size)

    async def _read_planned(
        self, planned: list[tuple[PartitionAnswer, Topic, WantedPartition, int]], committed: bool
    ) -> None:
        # Partitions read at their end since their last append notice are not read again.
        ends, recent, sizes = self._ends, self._recent, self._sizes
        now = time.monotonic()
        sent: list[tuple[PartitionAnswer, Topic, WantedPartition, int]] = []
        reads = []
        marks = []
        for planned_one in planned:
            result, topic, request, budget = planned_one
            offset = max(request.fetch_offset, 0)
            served = recent.serve(topic, request.partition, request.fetch_offset, budget, now)
            if served is not None:
                _fill_served(result, request.fetch_offset, served)
                if served.next_offset == served.high_watermark:  # all of it: the next fetch is at the end
                    ends.put_end(
                        topic, request.partition, served.next_offset, served.last_at, served.notices,
                        served.log_start, served.log_start, served.high_watermark,
                    )  # fmt: skip
                continue
            known = ends.get(topic, request.partition, offset, now)
            if known is not None:
                self._fill(result, topic, request, known, budget)
                continue
            average = sizes.get(TopicPartition(topic.name, request.partition))
            count = (
                FIRST_READ_COUNT if average is None else max(1, min(MAX_READ_COUNT, budget // average + 1))
            )
            if self._cold.below_hot(topic, request.partition, offset):
                count = 1  # a cold read: Redis gives only the bounds and the LSO
            sent.append(planned_one)
            marks.append(ends.mark(topic, request.partition))
            reads.append((topic, request.partition, offset, count))
        try:
            found = await self._store.read_many(reads, committed) if reads else []
        except STORAGE_ERRORS:
            for result, *_ in sent:
                result.error = LOG_UNAVAILABLE
        else:
            low: list[tuple[PartitionAnswer, Topic, WantedPartition, int, PartitionRead]] = []
            for (result, topic, request, budget), read, mark in zip(sent, found, marks, strict=True):
                if self._cold.tiered(topic):
                    self._cold.saw(topic, request.partition, read)
                    if request.fetch_offset < read.first_valid_offset:
                        low.append((result, topic, request, budget, read))
                        continue
                self._fill(result, topic, request, read, budget)
                if result.error == ErrorCode.none:
                    _keep_end(ends, topic, request, read, result.count, now, mark)
            if low:
                await self._read_cold(low, committed)
        await self._report_cold_starts(planned)

    async def _read_cold(
        self, low: list[tuple[PartitionAnswer, Topic, WantedPartition, int, PartitionRead]], committed: bool
    ) -> None:
        """Tiered partitions fetched below their Redis start: from the cold tier, all at once, where the
        tier marks route them (storage/cold/tiers.py)."""
        cold = self._cold
        try:
            marks = await cold.marks([(t, r.partition) for _, t, r, _, _ in low], fresh=True)
        except STORAGE_ERRORS:
            for result, *_ in low:
                result.error = LOG_UNAVAILABLE
            return
        gaps: list[tuple[PartitionAnswer, Topic, WantedPartition, int, PartitionRead]] = []
        colds: list[tuple[PartitionAnswer, Topic, WantedPartition, int, PartitionRead]] = []
        for (result, topic, request, budget, hot), mark in zip(low, marks, strict=True):
            offset = max(request.fetch_offset, 0)
            where = tiers.route(offset, mark, hot.first_valid_offset)
            start = tiers.log_start(mark, hot.first_valid_offset)
            # The whole log's start: below it the offset is out of range, as in Redis.
            hot = dataclasses.replace(hot, log_start_offset=start, first_valid_offset=start)
            if where is Tier.OUT_OF_RANGE or request.fetch_offset < 0:
                self._fill(result, topic, request, hot, budget)
            elif where is Tier.COLD:
                colds.append((result, topic, request, budget, hot))
            else:  # nothing archived from the offset up to the Redis start (a gap): Redis's records
                gaps.append((result, topic, request, budget, hot))
        reads = await asyncio.gather(
            *(cold.read(t, r.partition, r.fetch_offset, budget, committed) for _, t, r, budget, _ in colds),
            return_exceptions=True,
        )
        for (result, topic, request, budget, hot), got in zip(colds, reads, strict=True):
            if isinstance(got, ColdStoreError):
                result.error = LOG_UNAVAILABLE  # KAFKA_STORAGE_ERROR: retriable
            elif isinstance(got, BaseException):
                raise got
            elif got.entries:
                read = got.as_partition_read(hot.high_watermark, hot.last_stable_offset, hot.log_start_offset)
                self._fill(result, topic, request, read, budget)
            else:
                gaps.append((result, topic, request, budget, hot))
        if not gaps:
            return
        try:
            found = await self._store.read_many(
                [(t, r.partition, max(r.fetch_offset, 0), FIRST_READ_COUNT) for _, t, r, _, _ in gaps],
                committed,
            )
        except STORAGE_ERRORS:
            for result, *_ in gaps:
                result.error = LOG_UNAVAILABLE
            return
        for (result, topic, request, budget, hot), read in zip(gaps, found, strict=True):
            start = hot.first_valid_offset
            self._fill(
                result,
                topic,
                request,
                dataclasses.replace(read, log_start_offset=start, first_valid_offset=start),
                budget,
            )

    async def _report_cold_starts(
        self, planned: list[tuple[PartitionAnswer, Topic, WantedPartition, int]]
    ) -> None:
        """A tiered partition's log start is the cold tier's (kept MARKS_TTL_SECONDS)."""
        tiered = [(r, t, w) for r, t, w, _ in planned if self._cold.tiered(t) and r.error == ErrorCode.none]
        if not tiered:
            return
        try:
            marks = await self._cold.marks([(t, w.partition) for _, t, w in tiered], fresh=False)
        except STORAGE_ERRORS:
            return
        for (result, _, _), mark in zip(tiered, marks, strict=True):
            result.log_start = tiers.log_start(mark, result.log_start)

    def _fill(
        self,
        result: PartitionAnswer,
        topic: Topic,
        request: WantedPartition,
        read: PartitionRead,
        budget: int,
    ) -> None:
        """One partition's answer from its read: offsets, then the records as batches."""
        if request.fetch_offset > read.high_watermark or request.fetch_offset < read.first_valid_offset:
            result.error = ErrorCode.offset_out_of_range  # and no offsets, as Kafka: ListOffsets tells them
            return
        result.high_watermark = read.high_watermark
        result.log_start = read.log_start_offset
        result.last_stable = read.last_stable_offset
        result.aborted = read.aborted
        if read.entries:
            records, n, payload = encode_entries(
                read.entries,
                topic.offsets,
                codec_for(topic.compression_type),
                topic.log_append_time,
                budget,
                read.codec_runs,
            )
            result.records = records
            result.count = n
            if n:
                self._sizes[TopicPartition(topic.name, request.partition)] = max(1, payload // n)


def _keep_end(
    ends: PartitionEnds,
    topic: Topic,
    request: WantedPartition,
    read: PartitionRead,
    sent: int,
    now: float,
    mark: int,
) -> None:
    """Remembers a read that found the partition's end: nothing from the fetch offset, or every entry up
    to the high watermark (all sent), so the consumer's next fetch from there need not read again."""
    if not read.entries:
        ends.put(topic, request.partition, max(request.fetch_offset, 0), now, mark, read)
        return
    if sent != len(read.entries):
        return  # the response was full before the read's end
    end = topic.offsets.offset_of_id(last_entry_id(read.entries)) + 1
    if end == read.high_watermark and read.last_stable_offset >= end:
        ends.put_end(
            topic, request.partition, end, now, mark, read.log_start_offset, read.first_valid_offset,
            read.last_stable_offset,
        )  # fmt: skip


def _fill_served(result: PartitionAnswer, offset: int, served: Served) -> None:
    """One partition's answer from batches this broker just appended (recent_batches.py)."""
    result.high_watermark = served.high_watermark
    result.log_start = served.log_start
    result.last_stable = served.high_watermark  # no transaction was open at the append
    result.records = b"".join(served.batches)
    result.count = served.next_offset - offset
