"""Produce: decode and check each partition's batches, authorize, verify the transaction, hand the batches
to the partition writer (broker/partitions/writer.py), answer per partition (acks 0/1/all), and slow the
producers of tiered topics while Redis memory nears its mark (broker/memory.py)."""

from __future__ import annotations

import asyncio
import datetime
import logging
import time
from collections.abc import Callable, Coroutine, Hashable, Sequence
from typing import Any, Protocol

from kio.schema.errors import ErrorCode
from kio.static.protocol import Entity

from ...coordinators.transactions import Producer, TransactionError
from ...protocol.inflate import decompressed_limit
from ...protocol.legacy_records import read_message_set
from ...protocol.messages import NO_RESPONSE, NoResponse, make, optional_sibling, sibling
from ...protocol.records import InvalidRecords, ProducedBatch, producer_of, read_batches
from ...protocol.request_types import ProduceRequest
from ...protocol.response_types import ProduceResponse, response_for
from ...security.acls import AclOperation, ResourceType
from ...storage.topic_partition import TopicPartition
from ...storage.topics.metadata import Topic
from ...storage.topics.timestamps import out_of_window
from ..context import BrokerContext
from ..metadata.internal_topics import is_internal
from ..net.refusals import refused
from ..net.session import RequestScope
from ..partitions.writer import NOT_REPLICATED, PartitionAppend, RecordError
from ..schemas.validation import validated
from .common import LOG_UNAVAILABLE, NO_THROTTLE, STORAGE_ERRORS, resolve_topic

log = logging.getLogger(__name__)

_FIRST_V2_RECORDS_VERSION = 3
_IMPLICIT_ADD_VERSION = 12  # KIP-890: Produce v12 adds its partitions to the transaction itself


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


async def handle_produce(
    ctx: BrokerContext, body: ProduceRequest, scope: RequestScope
) -> ProduceResponse | NoResponse:
    resp = response_for(body)
    acks = body.acks
    if acks not in (0, 1, -1):
        return _response(resp, body, lambda t, p: PartitionAppend(ErrorCode.invalid_required_acks))
    transactional_id: str | None = getattr(body, "transactional_id", None)  # v0-v2 have none

    # enumerate() would join the versions' classes into `object`; the protocol keeps them checked.
    topics: Sequence[_TopicData] = body.topic_data
    # v0-v2 carry legacy message sets (magic 0 and 1), v3 and later v2 record batches only.
    legacy_ms = int(time.time() * 1000) if body.__version__ < _FIRST_V2_RECORDS_VERSION else None
    # Claim each partition's turn before the first await, so appends keep request order.
    where = {
        (ti, pd.index): (_topic_key(td), pd.index) for ti, td in enumerate(topics) for pd in td.partition_data
    }
    writer = ctx.data.writer
    turns = {key: writer.claim(partition) for key, partition in where.items()}
    # Each partition's append, not yet started: one runs in this task, several in tasks of their own.
    jobs: dict[tuple[int, int], Coroutine[Any, Any, PartitionAppend]] = {}
    resolved: list[tuple[int, _TopicData, Topic | ErrorCode]]
    try:
        if transactional_id is not None and not await ctx.access.authorizer.allowed(
            AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id, scope
        ):  # Kafka refuses the whole request, before any topic is looked at
            denied = ErrorCode.transactional_id_authorization_failed
            resolved = [(ti, td, denied) for ti, td in enumerate(topics)]
        else:
            resolved = [(ti, td, await _resolve(ctx, scope, td)) for ti, td in enumerate(topics)]
        if transactional_id is not None:
            refusal = await _verify_transaction(ctx, body.__version__, transactional_id, resolved)
            if refusal is not None:
                resolved = [(ti, td, refusal) for ti, td, _ in resolved]
        bound = ctx.settings.max_decompressed_batch_bytes
        # Decoded before the appends start: a partition's batches go to the writer as they are.
        # At Redis' memory mark every batch is refused and sent again (broker/memory.py): not decoded.
        full = writer.memory.full
        decoded = [
            (
                (ti, pd.index),
                topic,
                writer.at_mark(topic) if full and isinstance(topic, Topic)
                else _decode(scope, topic, pd, legacy_ms, transactional_id, bound),
            )
            for ti, topic_data, topic in resolved
            for pd in topic_data.partition_data
        ]  # fmt: skip
        for key, topic, batches in decoded:
            if isinstance(topic, Topic) and isinstance(batches, list) and validated(topic):
                batches = await _validate(ctx, scope, topic, key[1], batches)
            if isinstance(batches, PartitionAppend) and batches.record_errors:
                assert isinstance(topic, Topic)
                jobs[key] = writer.refuse_records(turns[key], topic, key[1], batches)
            elif isinstance(batches, PartitionAppend):  # refused, yet in its turn: later ones cannot overtake
                jobs[key] = writer.refuse(turns[key], batches)
            else:
                assert isinstance(topic, Topic)
                jobs[key] = writer.append(turns[key], topic, key[1], batches, transactional_id)
    except BaseException:
        for job in jobs.values():  # never started: their turns are released below with the others
            job.close()
        jobs.clear()
        raise
    finally:
        for key, turn in turns.items():
            if key not in jobs:
                turn.release()
    answered = False
    tasks: dict[tuple[int, int], asyncio.Task[PartitionAppend]] = {}
    results: dict[tuple[int, int], PartitionAppend] = {}
    try:
        if len(jobs) == 1:
            # Most requests name one partition: its append runs in this task, with no task to create
            # and gather.
            ((key, job),) = jobs.items()
            results[key] = await job
        else:
            tasks = {key: asyncio.ensure_future(job) for key, job in jobs.items()}
            await asyncio.gather(*tasks.values())
            results = {key: task.result() for key, task in tasks.items()}
        if acks == -1:
            topic_of = {ti: topic for ti, _, topic in resolved if isinstance(topic, Topic)}
            written = [key for key, r in results.items() if r.error == ErrorCode.none]
            if written and not await writer.durable([(topic_of[ti], p) for ti, p in written]):
                for key in written:
                    results[key].error = ErrorCode.not_enough_replicas_after_append
                    results[key].message = NOT_REPLICATED
        answered = True
    finally:  # also when the connection went away: the client resends whatever it has no answer to
        for ti, topic_data in enumerate(topics):
            for pd in topic_data.partition_data:
                key = (ti, pd.index)
                outcome = results[key] if key in results else _outcome(tasks.get(key))
                writer.settle(where[key], outcome, answered, pd.records)
    throttle = _memory_throttle(ctx, scope, resolved)
    if acks == 0:
        return NO_RESPONSE
    return _response(resp, body, lambda ti, p: results[(ti, p)], throttle)


def _memory_throttle(
    ctx: BrokerContext, scope: RequestScope, resolved: list[tuple[int, _TopicData, Topic | ErrorCode]]
) -> datetime.timedelta:
    """While Redis memory nears the mark, a produce to a tiered topic is throttled as a quota would
    (KIP-219: throttle_time_ms, and the connection muted that long), so its producer slows to what the
    archiver frees before it is refused. Untiered topics have no archiver to wait for: the mark alone."""
    ms = ctx.memory.throttle_ms()
    if ms <= 0 or not any(isinstance(t, Topic) and t.remote_storage for _, _, t in resolved):
        return NO_THROTTLE
    session = scope.session
    session.throttled_until = max(session.throttled_until, asyncio.get_running_loop().time() + ms / 1000)
    if ctx.metrics is not None:
        ctx.metrics.memory_throttle_seconds.inc(ms / 1000)
    return datetime.timedelta(milliseconds=ms)


async def _resolve(ctx: BrokerContext, scope: RequestScope, topic_data: _TopicData) -> Topic | ErrorCode:
    topic_id = getattr(topic_data, "topic_id", None)
    if topic_id is not None:  # v13 has ids only, and ids are never auto-created
        return await resolve_topic(ctx, scope, None, topic_id, op=AclOperation.WRITE)
    name = getattr(topic_data, "name", "")
    if not await ctx.access.authorizer.allowed(AclOperation.WRITE, ResourceType.TOPIC, name, scope):
        return ErrorCode.topic_authorization_failed
    if is_internal(name):  # Kafka's answer to a client's append to one
        return ErrorCode.invalid_topic_exception
    try:
        found = await ctx.topics.load(name)  # Produce never creates a topic, as Kafka: Metadata does
    except STORAGE_ERRORS:
        return LOG_UNAVAILABLE
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


def _outcome(task: asyncio.Task[PartitionAppend] | None) -> PartitionAppend | None:
    """A partition's answer, or None when its append never finished (not started, cancelled, failed)."""
    if task is None or not task.done() or task.cancelled() or task.exception() is not None:
        return None
    return task.result()


def _keyless(batch: ProducedBatch) -> list[int]:
    """The indexes in the batch of the records without a key."""
    if batch.plain is not None:  # all or none of a plain batch's records have keys
        return [] if batch.plain.keyed else list(range(len(batch.records)))
    return [i for i, r in enumerate(batch.records) if r.key is None]


def _decode(
    scope: RequestScope,
    topic: Topic | ErrorCode,
    data: _PartitionData,
    legacy_ms: int | None,
    transactional_id: str | None,
    max_decompressed: int,
) -> list[ProducedBatch] | PartitionAppend:
    """The partition's batches; legacy_ms (v0-v2 only) stamps legacy records that have no timestamp.
    max_decompressed: the broker's setting, 0 for a multiple of the topic's max.message.bytes."""
    if isinstance(topic, ErrorCode):
        return PartitionAppend(topic)
    if not 0 <= data.index < topic.partitions:
        return PartitionAppend(ErrorCode.unknown_topic_or_partition)
    bound = min(decompressed_limit(max_decompressed, topic.max_message_bytes), topic.max_decompressed_bytes)
    try:
        raw = data.records or b""
        batches = read_batches(raw, bound) if legacy_ms is None else read_message_set(raw, legacy_ms, bound)
    except InvalidRecords as exc:
        return _refused(scope, topic, data.index, ErrorCode(exc.error_code), str(exc))
    if not batches:
        return PartitionAppend(ErrorCode.invalid_record, message="no record batch")
    limit = topic.max_message_bytes
    now_ms = int(time.time() * 1000)
    for batch in batches:
        if batch.checked_bytes > limit:
            message = f"batch of {batch.checked_bytes} bytes exceeds max.message.bytes={limit}"
            return _refused(scope, topic, data.index, ErrorCode.message_too_large, message)
        if batch.is_transactional and transactional_id is None:
            message = "a transactional batch needs the request's transactional id"
            return PartitionAppend(ErrorCode.invalid_record, message=message)
        if topic.compacted and (keyless := _keyless(batch)):
            # As Kafka: the compactor keeps the latest record per key, so every record needs one.
            why = f"compacted topic {topic.name!r} refuses records without a key"
            message = f"{len(keyless)} of the batch's {len(batch.records)} records refused: {why}"
            errors = [RecordError(i, why) for i in keyless]
            return _refused(scope, topic, data.index, ErrorCode.invalid_record, message, errors)
        outside = out_of_window(topic, batch, now_ms)  # KIP-937
        if outside is not None:
            errors = [RecordError(outside.index, outside.message)]
            return _refused(scope, topic, data.index, ErrorCode.invalid_timestamp, outside.message, errors)
    return batches


async def _validate(
    ctx: BrokerContext, scope: RequestScope, topic: Topic, partition: int, batches: list[ProducedBatch]
) -> list[ProducedBatch] | PartitionAppend:
    """The batches, or their refusal when a record fails the topic's schema validation (schemas/)."""
    try:
        refusal = await ctx.schema_validation.check(topic, batches)
    except STORAGE_ERRORS:
        return PartitionAppend(LOG_UNAVAILABLE)
    if refusal is None:
        return batches
    if ctx.metrics is not None:
        ctx.metrics.schema_refusals.labels(topic.name).inc(len(refusal.records))
    errors = [RecordError(index, why) for index, why in refusal.records]
    return _refused(scope, topic, partition, ErrorCode.invalid_record, refusal.message, errors)


def _refused(
    scope: RequestScope,
    topic: Topic,
    partition: int,
    code: ErrorCode,
    message: str,
    record_errors: Sequence[RecordError] = (),
) -> PartitionAppend:
    """A batch refused for what it holds, said in the log too (net/refusals.py): a client may only
    retry it."""
    reason = f"{topic.name}-{partition}: {code.name.upper()}: {message}"
    refused(log, "PRODUCE", reason, kind=f"{topic.name}:{code.name}", topic=topic.name, partition=partition,
            error=code.name.upper(), scope=scope)  # fmt: skip
    return PartitionAppend(code, message=message, record_errors=record_errors)


def _response(
    resp: type[ProduceResponse],
    body: ProduceRequest,
    result_for: Callable[[int, int], PartitionAppend],
    throttle: datetime.timedelta = NO_THROTTLE,
) -> ProduceResponse:
    requested: Sequence[_TopicData] = body.topic_data
    partition_cls, topic_cls = (
        sibling(resp, "PartitionProduceResponse"),
        sibling(resp, "TopicProduceResponse"),
    )
    topics = []
    for ti, topic_data in enumerate(requested):
        partitions = []
        for partition_data in topic_data.partition_data:
            r: PartitionAppend = result_for(ti, partition_data.index)
            partitions.append(
                make(
                    partition_cls,
                    index=partition_data.index,
                    error_code=r.error,
                    base_offset=r.base_offset,
                    log_append_time=_time(r.append_time),
                    log_start_offset=r.log_start,
                    record_errors=_record_errors(resp, r.record_errors),
                    error_message=r.message,
                )
            )
        topics.append(
            make(
                topic_cls,
                name=getattr(topic_data, "name", None),
                topic_id=getattr(topic_data, "topic_id", None),
                partition_responses=tuple(partitions),
            )
        )
    return make(resp, responses=tuple(topics), throttle_time=throttle)


def _record_errors(resp: type[ProduceResponse], errors: Sequence[RecordError]) -> tuple[Entity, ...]:
    error_cls = optional_sibling(resp, "BatchIndexAndErrorMessage")  # v8+ only
    if not errors or error_cls is None:
        return ()
    return tuple(
        make(
            error_cls,
            batch_index=e.batch_index,
            batch_index_error_message=e.message,
        )
        for e in errors
    )


def _time(ms: int) -> datetime.datetime | None:
    if ms < 0:
        return None
    return datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.UTC)
