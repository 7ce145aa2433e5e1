"""Fetch: the request's session (KIP-227, broker/partitions/fetch_sessions.py), its topics authorized,
its partitions read and long-polled by the partition reader (broker/partitions/reader.py), and the
response."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from kio.schema.errors import ErrorCode

from ...protocol.messages import make, sibling
from ...protocol.request_types import FetchRequest
from ...protocol.response_types import FetchResponse, response_for
from ...security.acls import AclOperation
from ...storage.log.transactions import AbortedTransaction
from ...storage.topic_partition import TopicPartition
from ...storage.topics.metadata import Topic
from ..access.quotas import fetch_byte_cap
from ..context import BrokerContext
from ..net.session import RequestScope
from ..partitions.fetch_sessions import FINAL_EPOCH, FetchPlan, TopicRef, WantedPartition, WantedTopic
from ..partitions.reader import PartitionAnswer, PartitionReader
from ..partitions.reader import WantedTopic as _FetchTopic
from .common import NO_THROTTLE, long_poll_deadline, resolve_topic


async def handle_fetch(ctx: BrokerContext, body: FetchRequest, scope: RequestScope) -> FetchResponse:
    resp = response_for(body)
    version = body.__version__
    plan = ctx.fetch_sessions.begin(
        getattr(body, "session_id", 0),
        getattr(body, "session_epoch", FINAL_EPOCH),
        _wanted(body),
        _forgotten(body),
    )
    if isinstance(plan, ErrorCode):  # the session is unknown or out of step: the client starts a new one
        return make(resp, throttle_time=NO_THROTTLE, error_code=plan, session_id=0, responses=())
    deadline = long_poll_deadline(ctx, body.max_wait)
    committed = body.isolation_level == 1
    # A consumer_byte_rate quota caps the response (and so min_bytes) at what the window allows.
    max_bytes = fetch_byte_cap(body.max_bytes, scope.limits)
    min_bytes = min(body.min_bytes, max_bytes)
    partition_cap = max_bytes if max_bytes < body.max_bytes else None
    requested: Sequence[_FetchTopic] = plan.topics
    resolved: list[tuple[_FetchTopic, Topic | ErrorCode]] = []
    for fetch_topic in requested:
        resolved.append((fetch_topic, await _resolve(ctx, scope, fetch_topic, version)))
    waits = [
        TopicPartition(t.name, p.partition)
        for ft, t in resolved
        if isinstance(t, Topic)
        for p in ft.partitions
    ]
    reader = ctx.data.reader
    reading: list[tuple[_FetchTopic, Topic | ErrorCode]] = resolved
    results: list[list[PartitionAnswer]] = []

    async def read() -> bool:  # enough to answer with: min_bytes, or an error
        nonlocal reading, results
        reading = _unsettled(reader, plan, resolved) if plan.incremental else resolved
        results, total = await reader.read(reading, max_bytes, committed, partition_cap)
        return total >= min_bytes or any(r.error != ErrorCode.none for rs in results for r in rs)

    await reader.long_poll(waits, deadline, read)  # woken by appends from any writer (waiters.py)
    reader.count_out(reading, results)
    if plan.session is not None:
        changed = _changed(plan, reading, results)  # remembers what this response sends
        if plan.incremental:
            results = changed
    topics = []
    partition_cls, topic_cls = sibling(resp, "PartitionData"), sibling(resp, "FetchableTopicResponse")
    for (fetch_topic, _), partition_results in zip(reading, results, strict=True):
        if plan.incremental and not partition_results:
            continue
        partitions = tuple(
            make(
                partition_cls,
                partition_index=r.index,
                error_code=r.error,
                high_watermark=r.high_watermark,
                last_stable_offset=r.last_stable,
                log_start_offset=r.log_start,
                aborted_transactions=_aborted(resp, r.aborted) if committed else None,
                preferred_read_replica=-1,
                records=r.records,
            )
            for r in partition_results
        )
        topics.append(
            make(
                topic_cls,
                topic=getattr(fetch_topic, "topic", None),
                topic_id=getattr(fetch_topic, "topic_id", None),
                partitions=partitions,
            )
        )
    return make(
        resp,
        throttle_time=NO_THROTTLE,
        error_code=ErrorCode.none,
        session_id=plan.session.id if plan.session is not None else 0,
        responses=tuple(topics),
    )


def _unsettled(
    reader: PartitionReader, plan: FetchPlan, resolved: list[tuple[_FetchTopic, Topic | ErrorCode]]
) -> list[tuple[_FetchTopic, Topic | ErrorCode]]:
    """An incremental fetch's partitions less those whose answer can only be "unchanged": the kept
    read at their end (partition_ends.py) still holds for their fetch offset, and its offsets are those
    the session last sent. A consumer of many partitions finds most of them so on every fetch, and
    the fetch then costs the partitions that moved, not all of the session's."""
    session = plan.session
    assert session is not None
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
                reader.kept_end(topic, p.partition, offset, now)
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
    results: list[list[PartitionAnswer]],
) -> list[list[PartitionAnswer]]:
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


def _aborted(resp: type[FetchResponse], aborted: tuple[AbortedTransaction, ...]) -> tuple[Any, ...]:
    return tuple(
        make(sibling(resp, "AbortedTransaction"), producer_id=a.producer_id, first_offset=a.first_offset)
        for a in aborted
    )


async def _resolve(
    ctx: BrokerContext, scope: RequestScope, fetch_topic: _FetchTopic, version: int
) -> Topic | ErrorCode:
    if version >= 13:  # topics by id only
        return await resolve_topic(
            ctx, scope, None, getattr(fetch_topic, "topic_id", None), op=AclOperation.READ
        )
    return await resolve_topic(ctx, scope, getattr(fetch_topic, "topic", ""), op=AclOperation.READ)
