"""Produce: decode batches, append each through the append script, answer per partition (acks 0/1/all)."""

from __future__ import annotations

import asyncio
import datetime
import logging
import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from types import ModuleType
from typing import NamedTuple, Protocol

from kio.schema.errors import ErrorCode
from kio.static.protocol import Entity, ResponsePayload

from ...coordinators.transaction_coordinator import Producer, TransactionError
from ...protocol.inflate import decompressed_limit
from ...protocol.legacy_records import read_message_set
from ...protocol.messages import NO_RESPONSE, Answer, make, response_module_of
from ...protocol.records import (
    CODEC_NONE,
    InvalidRecords,
    ProducedBatch,
    as_fetched,
    producer_of,
    read_batches,
    sequence_head,
)
from ...protocol.request_types import ProduceRequest
from ...security.acls import AclOperation, ResourceType
from ...storage.log.append import DUPLICATE, FOREIGN_ID, UNKNOWN_PARTITION, AppendResult
from ...storage.redis import server_info
from ...storage.redis.calls import OUTCOME_UNKNOWN
from ...storage.topic_partition import TopicPartition
from ...storage.topics.metadata import Topic
from ...storage.topics.timestamps import out_of_window
from ..context import BrokerContext
from ..internal_topics import is_internal
from ..partitions.fetch_codec import codec_for
from ..partitions.retry_order import RetryOrder, sequenced
from ..partitions.sequencer import Turn
from ..refusals import refused
from .common import (
    APPEND_UNANSWERED,
    LOG_UNAVAILABLE,
    NO_THROTTLE,
    STORAGE_ERRORS,
    resolve_topic,
    topic_for_write,
)

log = logging.getLogger(__name__)

_FIRST_V2_RECORDS_VERSION = 3
_IMPLICIT_ADD_VERSION = 12  # KIP-890: Produce v12 adds its partitions to the transaction itself
_FULL_LOG_INTERVAL_SECONDS = 10.0
_full_logged_at = -_FULL_LOG_INTERVAL_SECONDS


class RecordError(NamedTuple):
    """A record that made its batch refused (KIP-467's record_errors)."""

    batch_index: int  # the record's place in its batch
    message: str


class _PartitionResult:
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


class _PartitionData(Protocol):
    """A PartitionProduceData of any served version."""

    @property
    def index(self) -> int: ...
    @property
    def records(self) -> bytes | None: ...


class _TopicData(Protocol):
    """A TopicProduceData of any served version. The topic is `name` up to v12 and `topic_id` from
    v13, so those two are read with getattr()."""

    @property
    def partition_data(self) -> Sequence[_PartitionData]: ...


def _topic_key(topic_data: _TopicData) -> Hashable:
    """The topic as the request names it: by name up to v12, by id from v13."""
    return getattr(topic_data, "name", None) or getattr(topic_data, "topic_id", None)


async def handle_produce(ctx: BrokerContext, body: ProduceRequest) -> Answer:
    mod = response_module_of(body)
    acks = body.acks
    if acks not in (0, 1, -1):
        return _response(mod, body, lambda t, p: _PartitionResult(ErrorCode.invalid_required_acks))
    transactional_id: str | None = getattr(body, "transactional_id", None)  # v0-v2 have none

    # enumerate() would join the versions' classes into `object`; the protocol keeps them checked.
    topics: Sequence[_TopicData] = body.topic_data
    # v0-v2 carry legacy message sets (magic 0 and 1), v3 and later v2 record batches only.
    legacy_ms = int(time.time() * 1000) if body.__version__ < _FIRST_V2_RECORDS_VERSION else None
    # Claim each partition's turn before the first await, so appends keep request order.
    where = {
        (ti, pd.index): (_topic_key(td), pd.index) for ti, td in enumerate(topics) for pd in td.partition_data
    }
    turns = {key: ctx.sequencer.claim(partition) for key, partition in where.items()}
    jobs: dict[tuple[int, int], asyncio.Task[_PartitionResult]] = {}
    resolved: list[tuple[int, _TopicData, Topic | ErrorCode]]
    try:
        if transactional_id is not None and not await ctx.authorizer.allowed(
            AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id
        ):  # Kafka refuses the whole request, before any topic is looked at
            denied = ErrorCode.transactional_id_authorization_failed
            resolved = [(ti, td, denied) for ti, td in enumerate(topics)]
        else:
            resolved = [(ti, td, await _resolve(ctx, td)) for ti, td in enumerate(topics)]
        if transactional_id is not None:
            refusal = await _verify_transaction(ctx, body.__version__, transactional_id, resolved)
            if refusal is not None:
                resolved = [(ti, td, refusal) for ti, td, _ in resolved]
        for ti, topic_data, topic in resolved:
            for partition_data in topic_data.partition_data:
                jobs[(ti, partition_data.index)] = asyncio.ensure_future(
                    _in_turn(
                        turns[(ti, partition_data.index)],
                        where[(ti, partition_data.index)],
                        ctx,
                        topic,
                        partition_data,
                        legacy_ms,
                        transactional_id,
                    )
                )
    finally:
        for key, turn in turns.items():
            if key not in jobs:
                turn.release()
    answered = False
    try:
        await asyncio.gather(*jobs.values())
        results = {key: task.result() for key, task in jobs.items()}
        if acks == -1:
            topic_of = {ti: topic for ti, _, topic in resolved if isinstance(topic, Topic)}
            written = [key for key, r in results.items() if r.error == ErrorCode.none]
            if written and not await _wait_durable(ctx, [(topic_of[ti], p) for ti, p in written]):
                for key in written:
                    results[key].error = ErrorCode.not_enough_replicas_after_append
                    results[key].message = _NOT_REPLICATED
        answered = True
    finally:  # also when the connection went away: the client resends whatever it has no answer to
        _settle_order(ctx.retry_order, topics, where, jobs, answered)
    if acks == 0:
        return NO_RESPONSE
    return _response(mod, body, lambda ti, p: results[(ti, p)])


async def _resolve(ctx: BrokerContext, topic_data: _TopicData) -> Topic | ErrorCode:
    topic_id = getattr(topic_data, "topic_id", None)
    if topic_id is not None:  # v13 has ids only, and ids are never auto-created
        return await resolve_topic(ctx, None, topic_id, op=AclOperation.WRITE)
    name = getattr(topic_data, "name", "")
    if not await ctx.authorizer.allowed(AclOperation.WRITE, ResourceType.TOPIC, name):
        return ErrorCode.topic_authorization_failed
    try:
        found = await topic_for_write(ctx, name, api="PRODUCE")
    except STORAGE_ERRORS:
        return LOG_UNAVAILABLE
    if found is None and is_internal(name):  # Kafka's answer to a client's append to one
        return ErrorCode.invalid_topic_exception
    return found if found is not None else ErrorCode.unknown_topic_or_partition


async def _verify_transaction(
    ctx: BrokerContext,
    version: int,
    transactional_id: str,
    resolved: list[tuple[int, _TopicData, Topic | ErrorCode]],
) -> ErrorCode | None:
    """A transactional produce: the producer must hold the id, and the partitions must be in its open
    transaction (added by AddPartitionsToTxn, or by this request itself from v12, transactions v2)."""
    producer = None
    partitions = []
    for _, topic_data, topic in resolved:
        for pd in topic_data.partition_data:
            if producer is None and pd.records:
                producer = producer_of(pd.records)
            if isinstance(topic, Topic) and 0 <= pd.index < topic.partitions:
                partitions.append(TopicPartition(topic.name, pd.index))
    if producer is None or not partitions:
        return None  # nothing to append: each partition gets its own error
    try:
        await ctx.transactions.verify_produce(
            transactional_id, Producer(*producer), partitions, implicit=version >= _IMPLICIT_ADD_VERSION
        )
    except TransactionError as exc:
        return exc.code
    except STORAGE_ERRORS:
        return LOG_UNAVAILABLE
    return None


def _settle_order(
    order: RetryOrder,
    topics: Sequence[_TopicData],
    where: Mapping[tuple[int, int], Hashable],
    jobs: dict[tuple[int, int], asyncio.Task[_PartitionResult]],
    answered: bool,
) -> None:
    """Tells the retry order how each partition's batches ended; a partition the client is to send
    again holds back the producer's later batches (also when its records never reached Redis)."""
    for ti, topic_data in enumerate(topics):
        for pd in topic_data.partition_data:
            task = jobs.get((ti, pd.index))
            if task is None or not task.done() or task.cancelled() or task.exception() is not None:
                r = None
            else:
                r = task.result()
            ok = answered and r is not None and r.error == ErrorCode.none
            partition = where[(ti, pd.index)]
            if r is not None and r.unsettled:
                for batch in r.unsettled:
                    order.closed(partition, batch, ok)
            elif not ok and (r is None or r.error in _RESENT) and pd.records:
                head = sequence_head(pd.records)
                if head is not None and sequenced(head):
                    order.closed(partition, head, False)


async def _in_turn(
    turn: Turn,
    where: Hashable,
    ctx: BrokerContext,
    topic: Topic | ErrorCode,
    data: _PartitionData,
    legacy_ms: int | None,
    transactional_id: str | None,
) -> _PartitionResult:
    """Decodes, then sends the appends in this partition's turn; the replies are awaited after it, so
    the next request's batches go out while Redis runs these (the lane keeps them in order)."""
    prepared = _decode(topic, data, legacy_ms, transactional_id, ctx.settings.max_decompressed_batch_bytes)
    async with turn:  # even a refused batch waits its turn, so that later ones cannot overtake
        if isinstance(prepared, _PartitionResult):
            return prepared
        assert isinstance(topic, Topic)
        order = ctx.retry_order
        sequenced_batches = [b for b in prepared if sequenced(b)]
        if not all(order.admit(where, b) for b in sequenced_batches):
            return _PartitionResult(LOG_UNAVAILABLE, message=_RESEND_FIRST)
        for b in sequenced_batches:
            order.opened(where, b)
        try:
            pending = [await ctx.store.send_append(topic, data.index, batch) for batch in prepared]
        except BaseException as exc:
            _close(order, where, sequenced_batches)
            if isinstance(exc, STORAGE_ERRORS):
                return _storage_failure(topic, data.index, exc)
            raise
    try:
        results = [
            await _settle(ctx, topic, data.index, batch, f)
            for batch, f in zip(prepared, pending, strict=True)
        ]
    except OUTCOME_UNKNOWN as exc:
        # Sent, but no reply (Redis timed out or the connection broke): the batch may be appended.
        # REQUEST_TIMED_OUT tells clients so ("possibly persisted"); the retry then finds it a duplicate.
        _close(order, where, sequenced_batches)
        return _PartitionResult(APPEND_UNANSWERED, message=str(exc))
    except BaseException as exc:
        _close(order, where, sequenced_batches)
        if isinstance(exc, STORAGE_ERRORS):
            return _storage_failure(topic, data.index, exc)
        raise
    for batch, r in zip(prepared, results, strict=True):
        if r.status < 0:
            gap = r.status == OUT_OF_ORDER and order.behind_failure(where, batch)
            _close(order, where, sequenced_batches)
            if r.status == FOREIGN_ID:
                return _foreign_entry(ctx, topic, data.index, r.foreign_id)
            if gap:  # an earlier batch failed here: not lost data, the client is to resend in order
                return _PartitionResult(LOG_UNAVAILABLE, message=_RESEND_FIRST)
            return _PartitionResult(ErrorCode(-r.status))  # the append script's refusals are Kafka codes
    if ctx.metrics is not None:  # per batch, from its header's count and its size: no per-record work
        appended = [b for b, r in zip(prepared, results, strict=True) if r.status != DUPLICATE]
        ctx.metrics.topic(ctx.tenant, topic.name).produced(
            sum(len(b.records) for b in appended), sum(b.size_bytes for b in appended)
        )
    append_time = results[-1].append_time if topic.log_append_time else -1
    done = _PartitionResult(ErrorCode.none, results[0].base_offset, append_time, results[-1].log_start_offset)
    done.unsettled = sequenced_batches
    return done


def _close(order: RetryOrder, partition: Hashable, batches: list[ProducedBatch]) -> None:
    """A failure seen here, before the request ends: later requests' batches are held back at once."""
    for batch in batches:
        order.closed(partition, batch, False)


_RESEND_FIRST = "an earlier batch of this producer to this partition failed here and must be sent again first"
OUT_OF_ORDER = -ErrorCode.out_of_order_sequence_number.value
# Answers after which a client sends the batch again.
_RESENT = frozenset({LOG_UNAVAILABLE, APPEND_UNANSWERED, ErrorCode.not_enough_replicas_after_append})


def _storage_failure(topic: Topic, partition: int, exc: BaseException) -> _PartitionResult:
    """KAFKA_STORAGE_ERROR is retriable: clients keep the batch and send it again later."""
    if not server_info.is_out_of_memory(exc):
        return _PartitionResult(LOG_UNAVAILABLE, message=str(exc))
    global _full_logged_at
    now = time.monotonic()
    if now - _full_logged_at >= _FULL_LOG_INTERVAL_SECONDS:  # a full Redis refuses every batch
        _full_logged_at = now
        log.warning(
            "Redis is out of memory (maxmemory reached, noeviction): refusing produce to %s-%d and "
            "others; consumers keep reading, producing resumes once retention or deleting topics "
            "frees memory",
            topic.name,
            partition,
        )
    return _PartitionResult(LOG_UNAVAILABLE, message=_FULL_MESSAGE)


def _foreign_entry(ctx: BrokerContext, topic: Topic, partition: int, entry_id: str) -> _PartitionResult:
    """A plain `XADD key *` on a dense topic: no later entry can have ID 0-n, so appends stop here."""
    if ctx.metrics is not None:
        ctx.metrics.foreign_entry_refusals.labels(topic.name, str(partition)).inc()
    message = (
        f"partition {partition} of dense topic {topic.name!r} holds entry {entry_id}, appended by a plain "
        "Redis client with '*' rather than '0-*'; Redis accepts no dense ID after it. Records up to it stay "
        "readable; see docs/key-layout.md to repair the partition"
    )
    log.warning("refusing produce: %s", message)
    return _PartitionResult(ErrorCode.kafka_storage_error, message=message)


_FULL_MESSAGE = "Redis is out of memory (maxmemory); retry once retention or topic deletion frees memory"


def _keyless(batch: ProducedBatch) -> list[int]:
    """The indexes in the batch of the records without a key."""
    if batch.plain is not None:  # all or none of a plain batch's records have keys
        return [] if batch.plain.keyed else list(range(len(batch.records)))
    return [i for i, r in enumerate(batch.records) if r.key is None]


def _decode(
    topic: Topic | ErrorCode,
    data: _PartitionData,
    legacy_ms: int | None,
    transactional_id: str | None,
    max_decompressed: int,
) -> list[ProducedBatch] | _PartitionResult:
    """The partition's batches; legacy_ms (v0-v2 only) stamps legacy records that have no timestamp.
    max_decompressed: the broker's setting, 0 for a multiple of the topic's max.message.bytes."""
    if isinstance(topic, ErrorCode):
        return _PartitionResult(topic)
    if not 0 <= data.index < topic.partitions:
        return _PartitionResult(ErrorCode.unknown_topic_or_partition)
    bound = decompressed_limit(max_decompressed, topic.max_message_bytes)
    try:
        raw = data.records or b""
        batches = read_batches(raw, bound) if legacy_ms is None else read_message_set(raw, legacy_ms, bound)
    except InvalidRecords as exc:
        return _refused(topic, data.index, ErrorCode(exc.error_code), str(exc))
    if not batches:
        return _PartitionResult(ErrorCode.invalid_record, message="no record batch")
    limit = topic.max_message_bytes
    now_ms = int(time.time() * 1000)
    for batch in batches:
        if batch.checked_bytes > limit:
            message = f"batch of {batch.checked_bytes} bytes exceeds max.message.bytes={limit}"
            return _refused(topic, data.index, ErrorCode.message_too_large, message)
        if batch.is_transactional:
            if transactional_id is None:
                message = "a transactional batch needs the request's transactional id"
                return _PartitionResult(ErrorCode.invalid_record, message=message)
            batch.transactional_id = transactional_id
        if topic.compacted and (keyless := _keyless(batch)):
            # As Kafka: the compactor keeps the latest record per key, so every record needs one.
            why = f"compacted topic {topic.name!r} refuses records without a key"
            message = f"{len(keyless)} of the batch's {len(batch.records)} records refused: {why}"
            errors = [RecordError(i, why) for i in keyless]
            return _refused(topic, data.index, ErrorCode.invalid_record, message, errors)
        outside = out_of_window(topic, batch, now_ms)  # KIP-937
        if outside is not None:
            errors = [RecordError(outside.index, outside.message)]
            return _refused(topic, data.index, ErrorCode.invalid_timestamp, outside.message, errors)
    return batches


def _refused(
    topic: Topic, partition: int, code: ErrorCode, message: str, record_errors: Sequence[RecordError] = ()
) -> _PartitionResult:
    """A batch refused for what it holds, said in the log too: a client may only retry it (refusals.py)."""
    reason = f"{topic.name}-{partition}: {code.name.upper()}: {message}"
    refused(log, "PRODUCE", reason, kind=f"{topic.name}:{code.name}", topic=topic.name, partition=partition,
            error=code.name.upper())  # fmt: skip
    return _PartitionResult(code, message=message, record_errors=record_errors)


async def _settle(
    ctx: BrokerContext, topic: Topic, partition: int, batch: ProducedBatch, sent: asyncio.Future[AppendResult]
) -> AppendResult:
    result = await ctx.store.settle_append(topic, partition, batch, sent)
    if result.status >= 0 and result.status != DUPLICATE:
        ctx.waiters.notify(topic.name, partition)
        _keep_recent(ctx, topic, partition, batch, result)  # no await between: before a fetch wakes
    elif result.status == UNKNOWN_PARTITION:
        ctx.forget_topic(topic.name)  # deleted or re-created meanwhile: the next request reloads it
    return result


def _keep_recent(
    ctx: BrokerContext, topic: Topic, partition: int, batch: ProducedBatch, result: AppendResult
) -> None:
    """Keeps the appended batch for fetches (recent_batches.py) when a read would return it as sent."""
    fetched = None
    if (
        batch.plain is not None  # uncompressed, CreateTime, records numbered in order (protocol/_produce.c)
        and result.open_transactions == 0
        and not topic.log_append_time
        and codec_for(topic.compression_type) == CODEC_NONE
        and result.last_offset - result.base_offset == len(batch.records) - 1
    ):
        fetched = as_fetched(batch.raw, result.base_offset)
    ctx.recent_batches.appended(
        topic, partition, result.base_offset, result.last_offset + 1, fetched, result.log_start_offset,
        time.monotonic(), ctx.waiters.appends(TopicPartition(topic.name, partition)),
    )  # fmt: skip


_NOT_REPLICATED = (
    "appended, but not acknowledged by every replica of its Redis in time; the retry is deduplicated"
)


async def _wait_durable(ctx: BrokerContext, partitions: list[tuple[Topic, int]]) -> bool:
    try:
        return await ctx.store.wait_durable(partitions)
    except STORAGE_ERRORS as exc:
        log.info("acks=all: no answer from Redis on replication: %s", exc)
        return False


def _response(
    mod: ModuleType, body: ProduceRequest, result_for: Callable[[int, int], _PartitionResult]
) -> ResponsePayload:
    requested: Sequence[_TopicData] = body.topic_data
    topics = []
    for ti, topic_data in enumerate(requested):
        partitions = []
        for partition_data in topic_data.partition_data:
            r: _PartitionResult = result_for(ti, partition_data.index)
            partitions.append(
                make(
                    mod.PartitionProduceResponse,
                    index=partition_data.index,
                    error_code=r.error,
                    base_offset=r.base_offset,
                    log_append_time=_time(r.append_time),
                    log_start_offset=r.log_start,
                    record_errors=_record_errors(mod, r.record_errors),
                    error_message=r.message,
                )
            )
        topics.append(
            make(
                mod.TopicProduceResponse,
                name=getattr(topic_data, "name", None),
                topic_id=getattr(topic_data, "topic_id", None),
                partition_responses=tuple(partitions),
            )
        )
    return make(mod.ProduceResponse, responses=tuple(topics), throttle_time=NO_THROTTLE)


def _record_errors(mod: ModuleType, errors: Sequence[RecordError]) -> tuple[Entity, ...]:
    if not errors or not hasattr(mod, "BatchIndexAndErrorMessage"):  # v8+ only
        return ()
    return tuple(
        make(mod.BatchIndexAndErrorMessage, batch_index=e.batch_index, batch_index_error_message=e.message)
        for e in errors
    )


def _time(ms: int) -> datetime.datetime | None:
    if ms < 0:
        return None
    return datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.UTC)
