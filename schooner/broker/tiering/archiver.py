"""Archiver: moves tiered partitions' committed records from Redis to the cold tier, once.

One pass (upkeep.py runs one every archive_interval_ms) over the keyspace's topics with
remote.storage.enable, for each partition this broker owns:

1. Ownership, as the groups': the partition's owner is a hash of "<topic>/<partition>" over the live
   brokers, so partitions spread over brokers and move when one leaves (a SIGKILLed broker's
   registration lapses after session_ms). Over that, a claim in Redis (tier_claim.lua, renewed each
   step, lapsing after CLAIM_MS) keeps two brokers from archiving a partition at once while the live
   set changes. Neither is needed for correctness: the Delta app transaction makes steps idempotent.
2. Archive: the table's own archived end is where a step starts (a step committed before a crash, but
   not recorded in Redis, is recorded now); `Store.archive_slice` reads committed entries from Redis
   (never past the LSO) and `AsyncColdStore.archive` commits them with the app transaction; then
   `archived_end` (and `cold_start`, on the first rows) go into the partition's state hash.
3. Trim Redis (`Store.trim_tiered`): to what local.retention.* keep, never at or past archived_end.
4. Retention, every log_retention_check_interval_ms: retention.ms and retention.bytes (dense topics)
   bound the whole log, so the cold tier is trimmed below their cut (Delta remove, then vacuum).

The archiver is what frees Redis when records come faster than retention removes them, so it must run
when Redis is full: its writes (the claim, the marks, the trim) are scripts Redis takes over maxmemory
(allow-oom, each saying why). The partitions that hold the most bytes in Redis go first. While Redis
is filling up (broker/memory.py, `filling`: half way to where producers are slowed), passes follow one
another without a pause (`next_pass`), and each step is followed by a trim of everything archived,
past local.retention.*: the records stay readable from the cold tier, and producers need the memory.

A cold store that fails: the pass logs once, keeps everything in Redis (nothing is trimmed above
archived_end), and waits a backoff that doubles up to MAX_BACKOFF_SECONDS before trying again.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
import zlib
from collections.abc import Awaitable, Callable

from ...config import Settings
from ...storage.cluster import BrokerInfo
from ...storage.cold.errors import ArchiveConflict, ColdStoreError
from ...storage.cold.marks import CLAIM_MS, TierMarks
from ...storage.redis.calls import StorageError
from ...storage.store import Store
from ...storage.topic_partition import TopicPartition
from ...storage.topics.metadata import Topic
from ..memory import RedisMemory
from ..metrics import BrokerMetrics
from ..metrics.meters import topic_label
from .tiering import Tiering

log = logging.getLogger(__name__)

MAX_STEPS_PER_PASS = 20  # slices one partition archives per pass, so others get their turn
MAX_BACKOFF_SECONDS = 60.0
PRESSED_PAUSE_SECONDS = 0.01  # between passes while Redis fills up: other tasks get the loop


def owner_of(topic: str, partition: int, brokers: list[BrokerInfo]) -> int | None:
    """The broker id that archives the partition: the groups' rule (ownership.py), over the same list."""
    if not brokers:
        return None
    return brokers[zlib.crc32(f"{topic}/{partition}".encode()) % len(brokers)].broker_id


class Archiver:
    def __init__(
        self,
        tiering: Tiering,
        settings: Settings,
        me: BrokerInfo,
        live_brokers: Callable[[], Awaitable[list[BrokerInfo]]],
        whose: str = "",
        metrics: BrokerMetrics | None = None,
        tenant: str | None = None,
        memory: RedisMemory | None = None,
    ) -> None:
        assert tiering.cold is not None
        self.tiering = tiering
        self.store: Store = tiering.store
        self.cold = tiering.cold
        self.settings = settings
        self.me = me
        self.live_brokers = live_brokers
        self._whose = whose  # for the log: "" or " of tenant x"
        self._token = f"{me.broker_id}:{uuid.uuid4().hex}"
        self._claim_ms = max(3 * settings.archive_interval_ms, CLAIM_MS)
        self._held: set[TopicPartition] = set()
        self._retained_at: dict[TopicPartition, float] = {}
        self._failures = 0  # consecutive passes the cold store failed
        self._resume_at = 0.0  # monotonic time before which no pass runs (backoff)
        self._metrics = metrics
        self._tenant = tenant
        self._memory = memory
        self.archived_records = 0  # counted for the tests
        self.archived_steps = 0
        self._steps_at_pass = -1  # archived_steps when the last pass began: did it take any?

    @property
    def filling(self) -> bool:
        """Redis is filling up: archive without pause, and trim all that is archived."""
        return self._memory is not None and self._memory.filling

    async def next_pass(self) -> None:
        """Waits for the next pass: archive_interval_ms, cut short when Redis starts filling up; a
        moment only while it is and the last pass found records to archive."""
        interval = max(self.settings.archive_interval_ms, 1) / 1000
        busy = self._steps_at_pass < self.archived_steps  # steps are taken in passes only
        self._steps_at_pass = self.archived_steps
        if self.filling:
            await asyncio.sleep(PRESSED_PAUSE_SECONDS if busy else interval)
        elif self._memory is None:
            await asyncio.sleep(interval)
        else:
            await self._memory.until_filling(interval)

    async def run_pass(self, topics: list[Topic]) -> None:
        """One pass over the tiered topics' partitions this broker owns."""
        now = time.monotonic()
        if now < self._resume_at:
            return
        tiered = [t for t in topics if t.remote_storage]
        brokers = await self.live_brokers()
        mine = {
            TopicPartition(t.name, p): (t, p)
            for t in tiered
            for p in range(t.partitions)
            if owner_of(t.name, p, brokers) == self.me.broker_id
        }
        for tp in self._held - mine.keys():  # moved to another broker: let it start without waiting
            self._held.discard(tp)
            topic = next((t for t in tiered if t.name == tp.topic), None)
            if topic is not None:
                await self.store.release_archiving(topic, tp.partition, self._token)
        if not mine:
            return
        gate = asyncio.Semaphore(max(self.settings.archive_concurrency, 1))
        failed: list[ColdStoreError] = []

        async def one(topic: Topic, partition: int) -> None:
            async with gate:
                try:
                    await self.partition(topic, partition)
                except ArchiveConflict as exc:  # another writer moved the table: next pass goes on
                    log.info("archive of %s/%d%s: %s", topic.name, partition, self._whose, exc)
                except ColdStoreError as exc:
                    failed.append(exc)

        # The partitions that hold the most in Redis first: they free the most memory, and the gate lets
        # tasks in in the order they were made.
        sizes = await self.store.partition_sizes(list(mine))
        fullest = sorted(mine, key=lambda tp: sizes.get(tp, 0), reverse=True)
        await asyncio.gather(*(one(*mine[tp]) for tp in fullest))
        if failed:
            self._failures += 1
            backoff = min(self.settings.archive_interval_ms / 1000 * 2**self._failures, MAX_BACKOFF_SECONDS)
            self._resume_at = time.monotonic() + backoff
            log.warning(
                "cold store failing%s (%d partitions; Redis keeps their records), next try in %.1f s: %s",
                self._whose, len(failed), backoff, failed[0],
            )  # fmt: skip
        elif self._failures:
            self._failures = 0
            log.warning("cold store reachable again%s; archiving resumed", self._whose)

    async def partition(self, topic: Topic, partition: int) -> None:
        """Archives, trims Redis and applies retention to one partition, if this broker holds its claim."""
        tp = TopicPartition(topic.name, partition)
        if not await self.store.claim_archiving(topic, partition, self._token, self._claim_ms):
            self._held.discard(tp)
            return
        self._held.add(tp)
        try:
            await self.archive(topic, partition)
        except ColdStoreError:  # a conflict with another writer too: the step did not commit
            if self._metrics is not None:
                self._metrics.remote_copy_errors.labels(topic_label(self._tenant, topic.name)).inc()
            raise
        await self.store.trim_tiered(topic, partition, self.filling)
        now = time.monotonic()
        interval = max(self.settings.log_retention_check_interval_ms, 1) / 1000
        if now - self._retained_at.get(tp, 0.0) >= interval:
            self._retained_at[tp] = now
            await self.apply_retention(topic, partition)

    async def archive(self, topic: Topic, partition: int) -> int:
        """Archives the partition's committed records from its archived end on; the records added."""
        marks = await self.tiering.marks(topic, partition)
        start = await self.cold.archived_end(topic, partition)  # the table is the truth
        behind = marks.archived_end is None or (start is not None and start > marks.archived_end)
        if start is not None and (behind or marks.cold_start is None):
            # A step committed before the broker could record it (a crash in between, a write Redis
            # lost), or the cold start missing: record them now. The table's first offset comes from an
            # index that reaches the archived end: one cached before those rows said "none", and the
            # next step's first offset became the cold start (a chaos run lost the records below it).
            first = None
            if marks.cold_start is None:
                first = await self.cold.start_offset(topic, partition, start)
            if await self.store.record_tier(topic, partition, start, first) is None:
                return 0
        if start is None:
            start = (await self.store.bounds(topic, partition)).log_start_offset
        added = 0
        batch = max(self.settings.archive_batch_records, 1)
        for _ in range(MAX_STEPS_PER_PASS):
            piece = await self.store.archive_slice(topic, partition, start, batch)
            if not piece.entries:
                break
            done = await self.cold.archive(topic, partition, piece)
            first = topic.offsets.offset_of_id(piece.entries[0][0]) if done.records else None
            if await self.store.record_tier(topic, partition, done.end, first) is None:
                return added  # the topic was deleted (or made again) meanwhile
            added += done.records
            self.archived_records += done.records
            self.archived_steps += 1
            if self.filling:  # producers wait for this memory: free it step by step
                await self.store.trim_tiered(topic, partition, to_archived_end=True)
            if self._metrics is not None and done.records:
                label = topic_label(self._tenant, topic.name)
                self._metrics.archived_records.labels(label).inc(done.records)
                self._metrics.archived_bytes.labels(label).inc(done.bytes)
                self._metrics.remote_copy_requests.labels(label).inc()  # a commit: rows were added
                self._metrics.remote_copy_bytes.labels(label).inc(done.bytes)
            start = done.end
            if len(piece.entries) < batch:
                break
            if not await self.store.claim_archiving(topic, partition, self._token, self._claim_ms):
                break  # another broker took it over
        return added

    async def apply_retention(self, topic: Topic, partition: int) -> None:
        """retention.ms and retention.bytes on the whole log: the cold tier trimmed below their cut."""
        marks = await self.tiering.marks(topic, partition)
        if marks.cold_start is None or marks.archived_end is None:
            return
        below = await self._retention_cut(topic, partition, marks)
        if below is None:
            return
        below = min(below, marks.archived_end)
        if below > marks.cold_start:
            await self.tiering.trim_cold(topic, partition, below)
            log.info(
                "retention trimmed %s/%d%s in the cold tier below %d",
                topic.name,
                partition,
                self._whose,
                below,
            )

    async def _retention_cut(self, topic: Topic, partition: int, marks: TierMarks) -> int | None:
        """The offset below which retention removes records (None: nothing to remove)."""
        cut: int | None = None
        if topic.retention_ms >= 0:
            found = await self.cold.offset_for_timestamp(
                topic, partition, int(time.time() * 1000) - topic.retention_ms, marks.archived_end
            )
            cut = found[0] if found is not None else marks.archived_end  # every cold record is older
        if topic.retention_bytes >= 0 and topic.offsets.dense and marks.average_record_bytes > 0:
            # Dense offsets count records, so the records kept are the high watermark less the count.
            keep = int(topic.retention_bytes // marks.average_record_bytes)
            high = (await self.store.bounds(topic, partition)).high_watermark
            cut = max(cut or 0, high - keep)
        return cut

    async def release_all(self, topics: list[Topic]) -> None:
        """Gives every claim back (a broker that stops), so the next owner need not wait them out."""
        by_name = {t.name: t for t in topics}
        for tp in list(self._held):
            topic = by_name.get(tp.topic)
            if topic is not None:
                try:
                    await self.store.release_archiving(topic, tp.partition, self._token)
                except (StorageError, OSError):
                    return
        self._held.clear()
