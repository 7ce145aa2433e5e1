"""Fetch: reads partitions with XRANGE, long-polls until min_bytes or max_wait; fetch sessions (KIP-227)
are broker/fetch_sessions.py."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Protocol

from kio.schema.errors import ErrorCode
from kio.static.protocol import ResponsePayload

from ...protocol.messages import make, response_module_of
from ...protocol.request_types import FetchRequest
from ...security.acls import AclOperation
from ...storage.log.read import PartitionRead
from ...storage.log.transactions import AbortedTransaction
from ...storage.topic_partition import TopicPartition
from ...storage.topics.metadata import Topic
from ..context import BrokerContext
from ..fetch_sessions import FINAL_EPOCH, FetchPlan, TopicRef, WantedPartition, WantedTopic
from ..partitions.fetch_codec import codec_for, encode_entries
from ..partitions.partition_ends import PartitionEnds
from ..partitions.recent_batches import Served
from ..quotas import fetch_byte_cap
from .common import LOG_UNAVAILABLE, NO_THROTTLE, STORAGE_ERRORS, long_poll_deadline, resolve_topic

# Entries read per XRANGE before the partition's average size is known.
FIRST_READ_COUNT = 100
MAX_READ_COUNT = 10000


@dataclass(slots=True)
class _PartitionFetch:
    index: int
    error: ErrorCode = ErrorCode.none
    high_watermark: int = -1
    log_start: int = -1
    last_stable: int = -1
    aborted: tuple[AbortedTransaction, ...] = ()
    records: bytes = b""
    count: int = 0  # records in `records` (the metrics' records out)


class _FetchPartition(Protocol):
    """A FetchPartition of any served version."""

    @property
    def partition(self) -> int: ...
    @property
    def fetch_offset(self) -> int: ...
    @property
    def partition_max_bytes(self) -> int: ...


class _FetchTopic(Protocol):
    """A FetchTopic of any served version: named by `topic` up to v12 and by `topic_id` from v13,
    so those two are read with getattr()."""

    @property
    def partitions(self) -> Sequence[_FetchPartition]: ...


async def handle_fetch(ctx: BrokerContext, body: FetchRequest) -> ResponsePayload:
    mod = response_module_of(body)
    version = body.__version__
    plan = ctx.fetch_sessions.begin(
        getattr(body, "session_id", 0),
        getattr(body, "session_epoch", FINAL_EPOCH),
        _wanted(body),
        _forgotten(body),
    )
    if isinstance(plan, ErrorCode):  # the session is unknown or out of step: the client starts a new one
        return make(mod.FetchResponse, throttle_time=NO_THROTTLE, error_code=plan, session_id=0, responses=())
    deadline = long_poll_deadline(ctx, body.max_wait)
    committed = body.isolation_level == 1
    # A consumer_byte_rate quota caps the response (and so min_bytes) at what the window allows.
    max_bytes = fetch_byte_cap(body.max_bytes)
    min_bytes = min(body.min_bytes, max_bytes)
    partition_cap = max_bytes if max_bytes < body.max_bytes else None
    requested: Sequence[_FetchTopic] = plan.topics
    resolved: list[tuple[_FetchTopic, Topic | ErrorCode]] = []
    for fetch_topic in requested:
        resolved.append((fetch_topic, await _resolve(ctx, fetch_topic, version)))
    waits = [
        TopicPartition(t.name, p.partition)
        for ft, t in resolved
        if isinstance(t, Topic)
        for p in ft.partitions
    ]
    while True:
        # Listen before reading: an append landing between the read and the wait still wakes us.
        event = ctx.waiters.register(waits)
        try:
            reading = _unsettled(ctx, plan, resolved) if plan.incremental else resolved
            results, total = await _read_all(ctx, reading, max_bytes, committed, partition_cap)
            remaining = deadline - time.monotonic()
            has_error = any(r.error != ErrorCode.none for rs in results for r in rs)
            if total >= min_bytes or has_error or remaining <= 0 or not waits:
                break
            await ctx.waiters.wait(event, remaining)  # woken by appends from any writer (waiters.py)
        finally:
            ctx.waiters.unregister(waits, event)
    if ctx.metrics is not None:
        _count_out(ctx, reading, results)
    if plan.session is not None:
        changed = _changed(plan, reading, results)  # remembers what this response sends
        if plan.incremental:
            results = changed
    topics = []
    for (fetch_topic, _), partition_results in zip(reading, results, strict=True):
        if plan.incremental and not partition_results:
            continue
        partitions = tuple(
            make(
                mod.PartitionData,
                partition_index=r.index,
                error_code=r.error,
                high_watermark=r.high_watermark,
                last_stable_offset=r.last_stable,
                log_start_offset=r.log_start,
                aborted_transactions=_aborted(mod, r.aborted) if committed else None,
                preferred_read_replica=-1,
                records=r.records,
            )
            for r in partition_results
        )
        topics.append(
            make(
                mod.FetchableTopicResponse,
                topic=getattr(fetch_topic, "topic", None),
                topic_id=getattr(fetch_topic, "topic_id", None),
                partitions=partitions,
            )
        )
    return make(
        mod.FetchResponse,
        throttle_time=NO_THROTTLE,
        error_code=ErrorCode.none,
        session_id=plan.session.id if plan.session is not None else 0,
        responses=tuple(topics),
    )


def _unsettled(
    ctx: BrokerContext, plan: FetchPlan, resolved: list[tuple[_FetchTopic, Topic | ErrorCode]]
) -> list[tuple[_FetchTopic, Topic | ErrorCode]]:
    """An incremental fetch's partitions less those whose answer can only be "unchanged": the kept
    read at their end (partition_ends.py) still holds for their fetch offset, and its offsets are those
    the session last sent. A consumer of many partitions finds most of them so on every fetch, and
    the fetch then costs the partitions that moved, not all of the session's."""
    session = plan.session
    assert session is not None
    ends = ctx.partition_ends
    now = time.monotonic()
    out: list[tuple[_FetchTopic, Topic | ErrorCode]] = []
    for fetch_topic, topic in resolved:
        if not isinstance(topic, Topic):
            out.append((fetch_topic, topic))
            continue
        assert isinstance(fetch_topic, WantedTopic)
        ref = fetch_topic.ref
        moving = []
        for p in fetch_topic.partitions:
            offset = p.fetch_offset
            known = (
                ends.get(topic, p.partition, offset, now)
                if 0 <= p.partition < topic.partitions and offset >= 0
                else None
            )
            if (
                known is None
                or not known.first_valid_offset <= offset <= known.high_watermark
                or session.sent(ref, p.partition)
                != (known.high_watermark, known.log_start_offset, known.last_stable_offset)
            ):
                moving.append(p)
        if moving:
            out.append((WantedTopic(fetch_topic.topic, fetch_topic.topic_id, moving), topic))
    return out


def _wanted(body: FetchRequest) -> list[WantedTopic]:
    return [
        WantedTopic(
            getattr(t, "topic", None),
            getattr(t, "topic_id", None),
            [WantedPartition(p.partition, p.fetch_offset, p.partition_max_bytes) for p in t.partitions],
        )
        for t in body.topics
    ]


def _forgotten(body: FetchRequest) -> list[tuple[TopicRef, Sequence[int]]]:
    out: list[tuple[TopicRef, Sequence[int]]] = []
    for t in getattr(body, "forgotten_topics_data", ()):
        topic_id = getattr(t, "topic_id", None)
        out.append((topic_id if topic_id is not None else getattr(t, "topic", ""), t.partitions))
    return out


def _changed(
    plan: FetchPlan,
    reading: list[tuple[_FetchTopic, Topic | ErrorCode]],
    results: list[list[_PartitionFetch]],
) -> list[list[_PartitionFetch]]:
    """The partitions an incremental response holds: those with records, an error, or offsets that
    changed since the session last sent them (KIP-227). Records what this response sends."""
    assert plan.session is not None
    out = []
    for (wanted, _), row in zip(reading, results, strict=True):
        assert isinstance(wanted, WantedTopic)
        ref = wanted.ref
        out.append(
            [
                r
                for r in row
                if plan.session.respond(
                    ref,
                    r.index,
                    bool(r.records),
                    r.error != ErrorCode.none,
                    (r.high_watermark, r.log_start, r.last_stable),
                )
            ]
        )
    return out


def _count_out(
    ctx: BrokerContext,
    resolved: list[tuple[_FetchTopic, Topic | ErrorCode]],
    results: list[list[_PartitionFetch]],
) -> None:
    """Records and bytes out, per partition from what the encoder counted (what goes in the response)."""
    assert ctx.metrics is not None
    for (_, topic), row in zip(resolved, results, strict=True):
        if not isinstance(topic, Topic):
            continue
        records = size = 0
        for r in row:
            if r.records:
                records += r.count
                size += len(r.records)
        if size:
            ctx.metrics.topic(ctx.tenant, topic.name).fetched(records, size)


def _aborted(mod: ModuleType, aborted: tuple[AbortedTransaction, ...]) -> tuple[Any, ...]:
    return tuple(
        make(mod.AbortedTransaction, producer_id=a.producer_id, first_offset=a.first_offset) for a in aborted
    )


async def _resolve(ctx: BrokerContext, fetch_topic: _FetchTopic, version: int) -> Topic | ErrorCode:
    if version >= 13:  # topics by id only
        return await resolve_topic(ctx, None, getattr(fetch_topic, "topic_id", None), op=AclOperation.READ)
    return await resolve_topic(ctx, getattr(fetch_topic, "topic", ""), op=AclOperation.READ)


async def _read_all(
    ctx: BrokerContext,
    resolved: list[tuple[_FetchTopic, Topic | ErrorCode]],
    max_bytes: int,
    committed: bool,
    partition_cap: int | None = None,
) -> tuple[list[list[_PartitionFetch]], int]:
    results = [[_PartitionFetch(p.partition) for p in fetch_topic.partitions] for fetch_topic, _ in resolved]
    # Every partition is read in one pipelined round trip (not one connection each: a Fetch may name
    # more partitions than the connection pool holds).
    planned: list[tuple[_PartitionFetch, Topic, _FetchPartition, int]] = []
    for (fetch_topic, topic), row in zip(resolved, results, strict=True):
        for request, result in zip(fetch_topic.partitions, row, strict=True):
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
        # Partitions read at their end since their last append notice are not read again.
        ends = ctx.partition_ends
        recent = ctx.recent_batches
        now = time.monotonic()
        sent: list[tuple[_PartitionFetch, Topic, _FetchPartition, int]] = []
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
                _fill(ctx, result, topic, request, known, budget)
                continue
            average = ctx.entry_sizes.get(TopicPartition(topic.name, request.partition))
            count = (
                FIRST_READ_COUNT if average is None else max(1, min(MAX_READ_COUNT, budget // average + 1))
            )
            sent.append(planned_one)
            marks.append(ends.mark(topic, request.partition))
            reads.append((topic, request.partition, offset, count))
        try:
            found = await ctx.store.read_many(reads, committed) if reads else []
        except STORAGE_ERRORS:
            for result, *_ in sent:
                result.error = LOG_UNAVAILABLE
        else:
            for (result, topic, request, budget), read, mark in zip(sent, found, marks, strict=True):
                _fill(ctx, result, topic, request, read, budget)
                if result.error == ErrorCode.none:
                    _keep_end(ends, topic, request, read, result.count, now, mark)
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


def _keep_end(
    ends: PartitionEnds,
    topic: Topic,
    request: _FetchPartition,
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
    end = topic.offsets.offset_of_id(read.entries[-1][0]) + 1
    if sent == len(read.entries) and end == read.high_watermark and read.last_stable_offset >= end:
        ends.put_end(
            topic, request.partition, end, now, mark, read.log_start_offset, read.first_valid_offset,
            read.last_stable_offset,
        )  # fmt: skip


def _fill_served(result: _PartitionFetch, offset: int, served: Served) -> None:
    """One partition's answer from batches this broker just appended (recent_batches.py)."""
    result.high_watermark = served.high_watermark
    result.log_start = served.log_start
    result.last_stable = served.high_watermark  # no transaction was open at the append
    result.records = b"".join(served.batches)
    result.count = served.next_offset - offset


def _fill(
    ctx: BrokerContext,
    result: _PartitionFetch,
    topic: Topic,
    request: _FetchPartition,
    read: PartitionRead,
    budget: int,
) -> None:
    """One partition's answer from its read: offsets, then the records as batches."""
    result.high_watermark = read.high_watermark
    result.log_start = read.log_start_offset
    result.last_stable = read.last_stable_offset
    result.aborted = read.aborted
    if request.fetch_offset > read.high_watermark or request.fetch_offset < read.first_valid_offset:
        result.error = ErrorCode.offset_out_of_range
        return
    if read.entries:
        records, n, payload = encode_entries(
            read.entries,
            topic.offsets,
            codec_for(topic.compression_type),
            topic.log_append_time,
            budget,
        )
        result.records = records
        result.count = n
        if n:
            ctx.entry_sizes[TopicPartition(topic.name, request.partition)] = max(1, payload // n)
