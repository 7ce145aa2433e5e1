"""PartitionWriter: appends a partition's decoded batches through the Store, in request order.

Produce hands it batches it has decoded and checked; the writer owns what happens to them from there:
the partition's turn (sequencer.py), an idempotent producer's retry order (retry_order.py), the append
on the Store's lane and its settling, waking waiting fetches (waiters.py), keeping the batch for them
(recent_batches.py), the produce metrics, and the answers of a full Redis (at the high-water mark of
memory.py, or refusing writes itself) or a foreign entry ID.

Callers: handlers/produce.py. A request claims each partition's turn before its first await, appends
in that turn, and settles each partition once its answer is known (or the client has gone):

    turn = writer.claim(key)
    outcome = await writer.append(turn, topic, partition, batches)   # or writer.refuse(turn, answer)
    writer.settle(key, outcome, answered, records)
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Hashable, Sequence
from typing import TYPE_CHECKING, NamedTuple

from kio.schema.errors import ErrorCode

from ...protocol.records import CODEC_NONE, ProducedBatch, as_fetched, sequence_head
from ...storage.log.append import (
    DUPLICATE,
    FOREIGN_ID,
    OUT_OF_ORDER_SEQUENCE,
    UNKNOWN_PARTITION,
    AppendResult,
)
from ...storage.redis import server_info
from ...storage.redis.calls import OUTCOME_UNKNOWN
from ...storage.store import Store
from ...storage.topic_partition import TopicPartition
from ...storage.topics.metadata import Topic
from ..memory import RedisMemory
from ..outages import APPEND_UNANSWERED, LOG_UNAVAILABLE, STORAGE_ERRORS
from .fetch_codec import codec_for
from .recent_batches import RecentBatches
from .retry_order import RetryOrder, sequenced
from .sequencer import PartitionSequencer, Turn
from .waiters import AppendWaiters

if TYPE_CHECKING:
    from ..metrics import BrokerMetrics

log = logging.getLogger(__name__)


class RecordError(NamedTuple):
    """A record that made its batch refused (KIP-467's record_errors)."""

    batch_index: int  # the record's place in its batch
    message: str


class PartitionAppend:
    """One partition's answer to a Produce."""

    __slots__ = ("error", "base_offset", "append_time", "log_start", "message", "record_errors", "unsettled")

    def __init__(
        self,
        error: ErrorCode,
        base_offset: int = -1,
        append_time: int = -1,
        log_start: int = -1,
        message: str | None = None,
        record_errors: Sequence[RecordError] = (),
    ) -> None:
        self.error = error
        self.base_offset = base_offset
        self.append_time = append_time
        self.log_start = log_start
        self.message = message
        self.record_errors = record_errors  # KIP-467: which records of the batch were refused, and why
        # Sequenced batches that Redis appended, whose answer waits for acks (retry_order.py).
        self.unsettled: list[ProducedBatch] = []


RESEND_FIRST = "an earlier batch of this producer to this partition failed here and must be sent again first"
NOT_REPLICATED = (
    "appended, but not acknowledged by every replica of its Redis in time; the retry is deduplicated"
)
FULL_MESSAGE = "Redis is out of memory (maxmemory); retry once retention or topic deletion frees memory"
MARK_MESSAGE = (
    "Redis is nearly out of memory (at redis_memory_high_water of maxmemory, the rest kept for the "
    "brokers' own writes); retry once retention, the archiver or a topic deletion frees memory"
)
# Answers after which a client sends the batch again.
_RESENT = frozenset({LOG_UNAVAILABLE, APPEND_UNANSWERED, ErrorCode.not_enough_replicas_after_append})


class PartitionWriter:
    def __init__(
        self,
        store: Store,
        sequencer: PartitionSequencer,
        retry_order: RetryOrder,
        recent: RecentBatches,
        waiters: AppendWaiters,
        metrics: BrokerMetrics | None,
        tenant: str | None,
        stale_topic: Callable[[str], None],
        memory: RedisMemory,
    ) -> None:
        """stale_topic(name): the append found the topic deleted or re-created, so the cache drops it.
        memory: the deployment's view of Redis memory (tenants' writers share it)."""
        self._store = store
        self._sequencer = sequencer
        self._order = retry_order
        self._recent = recent
        self._waiters = waiters
        self._metrics = metrics
        self._tenant = tenant
        self._stale_topic = stale_topic
        self.memory = memory

    def claim(self, key: Hashable) -> Turn:
        """The partition's turn (key: the partition as the request names it). Claimed before the request's
        first await, so that appends keep request order."""
        return self._sequencer.claim(key)

    def at_mark(self, topic: Topic) -> PartitionAppend:
        """The answer to an append while Redis memory is at its mark: a retriable refusal."""
        return self._memory_refusal(topic, MARK_MESSAGE)

    def _memory_refusal(self, topic: Topic, message: str) -> PartitionAppend:
        """A retriable refusal for Redis memory (at the mark, or Redis refusing itself), counted."""
        if self._metrics is not None:
            self._metrics.memory_refusals.labels(topic.name).inc()
        return PartitionAppend(LOG_UNAVAILABLE, message=message)

    async def refuse(self, turn: Turn, answer: PartitionAppend) -> PartitionAppend:
        """A refused partition still waits its turn, so that a later request's batches cannot overtake."""
        async with turn:
            return answer

    async def refuse_records(
        self, turn: Turn, topic: Topic, partition: int, answer: PartitionAppend
    ) -> PartitionAppend:
        """refuse() of a batch whose records failed validation (INVALID_RECORD with record errors,
        INVALID_TIMESTAMP): the answer carries the partition's log start, as Kafka's does, whose log
        checks the records. -1 when Redis cannot say."""
        async with turn:
            with contextlib.suppress(*STORAGE_ERRORS):
                answer.log_start = (await self._store.bounds(topic, partition)).log_start_offset
            return answer

    async def append(
        self,
        turn: Turn,
        topic: Topic,
        partition: int,
        batches: list[ProducedBatch],
        transactional_id: str | None = None,
    ) -> PartitionAppend:
        """Sends the appends in the partition's turn; the replies are awaited after it, so the next
        request's batches go out while Redis runs these (the lane keeps them in order).
        transactional_id: the request's, which its transactional batches are appended with."""
        txn_ids = [transactional_id if b.is_transactional else None for b in batches]
        order, key = self._order, turn.key
        async with turn:
            if self.memory.full:  # refused like a full Redis, before it is: the rest is the reserve
                return self.at_mark(topic)
            sequenced_batches = [b for b in batches if sequenced(b)]
            for b in sequenced_batches:
                if not order.admit(key, b) and not await self._mark_stale(topic, partition, key, b):
                    order.closed(key, b, False)  # refused: it holds later batches back until it comes again
                    return PartitionAppend(LOG_UNAVAILABLE, message=RESEND_FIRST)
            for b in sequenced_batches:
                order.opened(key, b)
            self.memory.appending(sum(b.size_bytes for b in batches))
            try:
                pending = [
                    await self._store.send_append(topic, partition, batch, txn_id, self._waiters.origin)
                    for batch, txn_id in zip(batches, txn_ids, strict=True)
                ]
            except BaseException as exc:
                self._close(key, sequenced_batches)
                if isinstance(exc, STORAGE_ERRORS):
                    return self._storage_failure(topic, partition, exc)
                raise
        try:
            results = [
                await self._settle(topic, partition, batch, f, txn_id)
                for batch, f, txn_id in zip(batches, pending, txn_ids, strict=True)
            ]
        except OUTCOME_UNKNOWN as exc:
            # Sent, but no reply (Redis timed out or the connection broke): the batch may be appended.
            # REQUEST_TIMED_OUT tells clients so ("possibly persisted"); the retry then finds it a duplicate.
            self._close(key, sequenced_batches)
            return PartitionAppend(APPEND_UNANSWERED, message=str(exc))
        except BaseException as exc:
            self._close(key, sequenced_batches)
            if isinstance(exc, STORAGE_ERRORS):
                return self._storage_failure(topic, partition, exc)
            raise
        for batch, r in zip(batches, results, strict=True):
            if r.status >= 0 and sequenced(batch):
                order.appended(key, batch)
        for batch, r in zip(batches, results, strict=True):
            if r.status < 0:
                gap = r.status == OUT_OF_ORDER_SEQUENCE and order.behind_failure(key, batch)
                self._close(key, sequenced_batches)
                if r.status == FOREIGN_ID:
                    return self._foreign_entry(topic, partition, r.foreign_id)
                if gap:  # an earlier batch failed here: not lost data, the client is to resend in order
                    return PartitionAppend(LOG_UNAVAILABLE, message=RESEND_FIRST)
                return PartitionAppend(ErrorCode(-r.status))  # the append script's refusals are Kafka codes
        if self._metrics is not None:  # per batch, from its header's count and its size: no per-record work
            appended = [b for b, r in zip(batches, results, strict=True) if r.status != DUPLICATE]
            self._metrics.topic(self._tenant, topic.name).produced(
                sum(len(b.records) for b in appended), sum(b.size_bytes for b in appended)
            )
        append_time = results[-1].append_time if topic.log_append_time else -1
        done = PartitionAppend(
            ErrorCode.none, results[0].base_offset, append_time, results[-1].log_start_offset
        )
        done.unsettled = sequenced_batches
        return done

    def settle(
        self, key: Hashable, outcome: PartitionAppend | None, answered: bool, records: bytes | None
    ) -> None:
        """Tells the retry order how the partition's batches ended (outcome None: its append never
        finished); a partition the client is to send again holds back the producer's later batches, also
        when its records never reached Redis. Called also when the connection went away."""
        ok = answered and outcome is not None and outcome.error == ErrorCode.none
        if outcome is not None and outcome.unsettled:
            for batch in outcome.unsettled:
                self._order.closed(key, batch, ok)
        elif not ok and (outcome is None or outcome.error in _RESENT) and records:
            head = sequence_head(records)
            if head is not None and sequenced(head):
                self._order.closed(key, head, False)

    async def durable(self, partitions: list[tuple[Topic, int]]) -> bool:
        """acks=all: whether Redis has the appends on its replicas (and on disk, as configured)."""
        try:
            return await self._store.wait_durable(partitions)
        except STORAGE_ERRORS as exc:
            log.info("acks=all: no answer from Redis on replication: %s", exc)
            return False

    async def _mark_stale(self, topic: Topic, partition: int, key: Hashable, held: ProducedBatch) -> bool:
        """Whether the failure holding `held` back is already in the log: the retry of a batch that failed
        here may have gone to another broker (or Redis kept a batch whose reply was lost), and the
        client, answered, never sends it here again. Redis's producer state says; a read only when a
        mark holds a batch back."""
        try:
            state = await self._store.producer_state(topic, partition, held.producer_id)
        except STORAGE_ERRORS:
            return False
        if state is None:
            return False
        self._order.logged(key, held.producer_id, state.producer_epoch, state.last_sequence)
        return self._order.admit(key, held)

    def _close(self, key: Hashable, batches: list[ProducedBatch]) -> None:
        """A failure seen here, before the request ends: later requests' batches are held back at once."""
        for batch in batches:
            self._order.closed(key, batch, False)

    async def _settle(
        self,
        topic: Topic,
        partition: int,
        batch: ProducedBatch,
        sent: asyncio.Future[AppendResult],
        transactional_id: str | None,
    ) -> AppendResult:
        result = await self._store.settle_append(topic, partition, batch, sent, transactional_id)
        if result.status >= 0 and result.status != DUPLICATE:
            self._waiters.notify(topic.name, partition)
            self._keep_recent(topic, partition, batch, result)  # no await between: before a fetch wakes
        elif result.status == UNKNOWN_PARTITION:
            self._stale_topic(topic.name)  # deleted or re-created meanwhile: the next request reloads it
        return result

    def _keep_recent(self, topic: Topic, partition: int, batch: ProducedBatch, result: AppendResult) -> None:
        """Keeps the appended batch for fetches (recent_batches.py) when a read would return it as sent."""
        fetched = None
        if (
            batch.plain
            is not None  # uncompressed, CreateTime, records numbered in order (protocol/_produce.c)
            and result.open_transactions == 0
            and not topic.log_append_time
            and codec_for(topic.compression_type) == CODEC_NONE
            and result.last_offset - result.base_offset == len(batch.records) - 1
        ):
            fetched = as_fetched(batch.raw, result.base_offset)
        self._recent.appended(
            topic, partition, result.base_offset, result.last_offset + 1, fetched, result.log_start_offset,
            time.monotonic(), self._waiters.appends(TopicPartition(topic.name, partition)),
        )  # fmt: skip

    def _storage_failure(self, topic: Topic, partition: int, exc: BaseException) -> PartitionAppend:
        """KAFKA_STORAGE_ERROR is retriable: clients keep the batch and send it again later."""
        if not server_info.is_out_of_memory(exc):
            return PartitionAppend(LOG_UNAVAILABLE, message=str(exc))
        self.memory.refused()  # it says so in the log, once for the deployment
        return self._memory_refusal(topic, FULL_MESSAGE)

    def _foreign_entry(self, topic: Topic, partition: int, entry_id: str) -> PartitionAppend:
        """A plain `XADD key *` on a dense topic: no later entry can have ID 0-n, so appends stop here."""
        if self._metrics is not None:
            self._metrics.foreign_entry_refusals.labels(topic.name, str(partition)).inc()
        message = (
            f"partition {partition} of dense topic {topic.name!r} holds entry {entry_id}, appended by a "
            "plain Redis client with '*' rather than '0-*'; Redis accepts no dense ID after it. Records up "
            "to it stay readable; see docs/key-layout.md to repair the partition"
        )
        log.warning("refusing produce: %s", message)
        return PartitionAppend(ErrorCode.kafka_storage_error, message=message)
