"""ShareFetch and ShareAcknowledge (KIP-932): a share group member's records, acquired for it alone until it
accepts, releases, rejects or renews them, or its lock runs out. The share partitions themselves are
storage/share/partition.py; the member's share session is broker/partitions/share_sessions.py.
"""

from __future__ import annotations

import contextlib
import datetime
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from kio.schema.errors import ErrorCode

from ...coordinators.groups.config_defs import by_duration_ms
from ...coordinators.groups.share.config import EARLIEST, ShareGroupConfig, share_group_config
from ...protocol.messages import make, sibling
from ...protocol.request_types import ShareAcknowledgeRequest, ShareFetchRequest
from ...protocol.response_types import ShareAcknowledgeResponse, ShareFetchResponse, response_for
from ...security.acls import AclOperation, ResourceType
from ...storage.share.partition import ACK_TYPES, RENEW, AckBatch, Acquired, Limits
from ...storage.topic_partition import TopicPartition
from ...storage.topics.metadata import Topic
from ..context import BrokerContext
from ..net.session import RequestScope
from ..partitions.fetch_codec import codec_for, encode_entries
from ..partitions.share_sessions import FINAL_EPOCH, INITIAL_EPOCH, SessionPartition, ShareSession
from .common import LOG_UNAVAILABLE, NO_THROTTLE, STORAGE_ERRORS, long_poll_deadline, resolve_partition
from .share_dead_letters import copy_to_topic

DEFAULT_MAX_RECORDS = 500
# Released records and lapsed locks publish no append notice: a waiting share fetch looks again this
# often (a Fetch does not poll: see partitions/waiters.py).
POLL_SECONDS = 0.25
NO_LIMIT_BYTES = 1 << 62  # acquired records are all sent: a record cut off would stay locked unseen


class _Batch(Protocol):
    @property
    def first_offset(self) -> int: ...
    @property
    def last_offset(self) -> int: ...
    @property
    def acknowledge_types(self) -> Sequence[int]: ...


@dataclass(slots=True)
class _Result:
    """One partition's part of the response."""

    index: int
    error: ErrorCode = ErrorCode.none
    ack_error: ErrorCode | None = None  # None: no acknowledgement for it in this request
    records: bytes = b""
    acquired: list[tuple[int, int, int]] = field(default_factory=list)  # (first, last, delivery count)
    listed: bool = False  # answered even when empty (the request that opened the session)

    @property
    def worth_sending(self) -> bool:
        return bool(self.listed or self.error or self.ack_error is not None or self.acquired)


async def group_config(ctx: BrokerContext, group: str) -> ShareGroupConfig:
    """The group's share.* configs, from each broker's one-second cache of them; the broker's defaults
    when Redis cannot say (the acquire that follows then fails with a retriable error)."""
    try:
        return await ctx.group_configs.share(group)
    except STORAGE_ERRORS:
        return share_group_config({}, ctx.settings)


def limits_of(config: ShareGroupConfig) -> Limits:
    return Limits(
        lock_ms=config.record_lock_duration_ms,
        delivery_limit=config.delivery_count_limit,
        max_locks=config.partition_max_record_locks,
        read_committed=config.read_committed,
        dead_letters=bool(config.dlq_topic),
    )


async def handle_share_fetch(
    ctx: BrokerContext, body: ShareFetchRequest, scope: RequestScope
) -> ShareFetchResponse:
    resp = response_for(body)
    group, member, epoch = body.group_id or "", body.member_id or "", body.share_session_epoch
    config = await group_config(ctx, group)
    lock = datetime.timedelta(milliseconds=config.record_lock_duration_ms)
    if not group or not member:
        return _fetch_error(resp, ErrorCode.invalid_request, "A share fetch needs a group id and a member id")
    if not await ctx.access.authorizer.allowed(AclOperation.READ, ResourceType.GROUP, group, scope):
        return _fetch_error(
            resp, ErrorCode.group_authorization_failed, f"The principal may not READ group {group!r}"
        )
    acks = _acks_of(body)
    if epoch == INITIAL_EPOCH:
        if any(batches for _, _, batches in acks):
            return _fetch_error(
                resp, ErrorCode.invalid_request, "Acknowledgements in a request opening a session"
            )
        opened = ctx.share_sessions.open(group, member)
        if isinstance(opened, ErrorCode):
            return _fetch_error(resp, opened, "Too many share sessions on this broker")
        session = opened
    else:
        found = ctx.share_sessions.find(group, member, epoch)
        if isinstance(found, ErrorCode):
            return _fetch_error(resp, found, f"No share session at epoch {epoch} for this member")
        session = found
    renew = getattr(body, "is_renew_ack", False)  # v2+ (KIP-1222)
    results: dict[SessionPartition, _Result] = {}
    await _acknowledge(ctx, scope, group, member, config, [a for a in acks if a[2]], results, renew)
    if epoch == FINAL_EPOCH:
        await _close(ctx, scope, session)
    else:
        session.add(
            [(t.topic_id, p.partition_index) for t in body.topics for p in t.partitions if t.topic_id]
        )
        session.forget(
            [(t.topic_id, p) for t in body.forgotten_topics_data if t.topic_id for p in t.partitions]
        )
        max_records = body.max_records if body.max_records > 0 else DEFAULT_MAX_RECORDS
        deadline = long_poll_deadline(ctx, body.max_wait)
        if renew:
            deadline = 0.0  # a renewing request only renews
        await _fetch(ctx, scope, session, config, max_records, deadline, results)
        session.advance()
    if epoch == INITIAL_EPOCH:
        for key in session.partitions:
            results.setdefault(key, _Result(key[1])).listed = True
    return make(
        resp,
        throttle_time=NO_THROTTLE,
        error_code=ErrorCode.none,
        error_message=None,
        acquisition_lock_timeout=lock,
        responses=_topics(resp, results),
        node_endpoints=(),
    )


async def handle_share_acknowledge(
    ctx: BrokerContext, body: ShareAcknowledgeRequest, scope: RequestScope
) -> ShareAcknowledgeResponse:
    resp = response_for(body)
    group, member, epoch = body.group_id or "", body.member_id or "", body.share_session_epoch
    config = await group_config(ctx, group)
    lock = datetime.timedelta(milliseconds=config.record_lock_duration_ms)

    def answer(
        error: ErrorCode, message: str | None, responses: tuple[Any, ...] = ()
    ) -> ShareAcknowledgeResponse:
        return make(
            resp,
            throttle_time=NO_THROTTLE,
            error_code=error,
            error_message=message,
            acquisition_lock_timeout=lock,
            responses=responses,
            node_endpoints=(),
        )

    if not group or not member:
        return answer(ErrorCode.invalid_request, "A share acknowledge needs a group id and a member id")
    if not await ctx.access.authorizer.allowed(AclOperation.READ, ResourceType.GROUP, group, scope):
        return answer(ErrorCode.group_authorization_failed, f"The principal may not READ group {group!r}")
    if epoch == INITIAL_EPOCH:
        return answer(ErrorCode.invalid_share_session_epoch, "Acknowledgements cannot open a share session")
    found = ctx.share_sessions.find(group, member, epoch)
    if isinstance(found, ErrorCode):
        return answer(found, f"No share session at epoch {epoch} for this member")
    acks = _acks_of(body)
    results: dict[SessionPartition, _Result] = {}
    await _acknowledge(ctx, scope, group, member, config, acks, results, getattr(body, "is_renew_ack", False))
    if epoch == FINAL_EPOCH:
        await _close(ctx, scope, found)
    else:
        found.advance()
    by_topic: dict[uuid.UUID, list[Any]] = {}
    for (topic_id, _), r in results.items():
        by_topic.setdefault(topic_id, []).append(
            make(
                sibling(resp, "PartitionData"),
                partition_index=r.index,
                error_code=r.ack_error if r.ack_error is not None else r.error,
                error_message=None,
                current_leader=make(sibling(resp, "LeaderIdAndEpoch"), leader_id=-1, leader_epoch=-1),
            )
        )
    topics = tuple(
        make(sibling(resp, "ShareAcknowledgeTopicResponse"), topic_id=t, partitions=tuple(ps))
        for t, ps in by_topic.items()
    )
    return answer(ErrorCode.none, None, topics)


# -- acknowledgements -----------------------------------------------------------------------------
def _acks_of(
    body: ShareFetchRequest | ShareAcknowledgeRequest,
) -> list[tuple[uuid.UUID | None, int, Sequence[_Batch]]]:
    """(topic id, partition, acknowledgement batches) of every partition the request names."""
    return [
        (t.topic_id, p.partition_index, p.acknowledgement_batches) for t in body.topics for p in t.partitions
    ]


async def _acknowledge(
    ctx: BrokerContext,
    scope: RequestScope,
    group: str,
    member: str,
    config: ShareGroupConfig,
    acks: Sequence[tuple[uuid.UUID | None, int, Sequence[_Batch]]],
    results: dict[SessionPartition, _Result],
    renew_allowed: bool,
) -> None:
    items: list[tuple[Topic, int, list[AckBatch]]] = []
    keys: list[SessionPartition] = []
    for topic_id, index, batches in acks:
        if topic_id is None:
            continue
        result = results.setdefault((topic_id, index), _Result(index))
        topic = await resolve_partition(ctx, scope, None, index, topic_id, op=AclOperation.READ)
        if isinstance(topic, ErrorCode):
            result.ack_error = topic
            continue
        parsed = _ack_batches(batches, renew_allowed)
        if parsed is None:
            result.ack_error = ErrorCode.invalid_request
            continue
        items.append((topic, index, parsed))
        keys.append((topic_id, index))
    if not items:
        return
    try:
        done = await ctx.store.share_acknowledge(items, group, member, limits_of(config))
    except STORAGE_ERRORS:
        for key in keys:
            results[key].ack_error = LOG_UNAVAILABLE
        return
    for key, (topic, index, _), outcome in zip(keys, items, done, strict=True):
        results[key].ack_error = ErrorCode.none if outcome.ok else ErrorCode.invalid_record_state
        if outcome.settled:
            # Room in the window, or released records: members waiting here on this broker look again
            # now, before this member's own acquire in the same request takes it all.
            ctx.data.waiters.notify(topic.name, index)
        await copy_to_topic(ctx, scope, group, config, topic, index, outcome.dead_lettered)


def _ack_batches(batches: Sequence[_Batch], renew_allowed: bool) -> list[AckBatch] | None:
    """The request's batches, or None when one is malformed (INVALID_REQUEST)."""
    out = []
    for b in batches:
        types = tuple(int(t) for t in b.acknowledge_types)
        width = b.last_offset - b.first_offset + 1
        if b.first_offset < 0 or width < 1 or not types or len(types) not in (1, width):
            return None
        if not set(types) <= ACK_TYPES or (RENEW in types and not renew_allowed):
            return None
        out.append(AckBatch(b.first_offset, b.last_offset, types))
    return out


async def _close(ctx: BrokerContext, scope: RequestScope, session: ShareSession) -> None:
    """Ends the session and hands back every record the member still holds in it."""
    ctx.share_sessions.close(session)
    partitions = []
    for topic_id, index in session.partitions:
        topic = await resolve_partition(ctx, scope, None, index, topic_id)
        if isinstance(topic, Topic):
            partitions.append((topic, index))
    if partitions:
        with contextlib.suppress(*STORAGE_ERRORS):  # else the locks lapse by themselves
            await ctx.store.share_release_member(partitions, session.group, session.member)
            for topic, index in partitions:
                ctx.data.waiters.notify(topic.name, index)


# -- acquisition ----------------------------------------------------------------------------------
async def _fetch(
    ctx: BrokerContext,
    scope: RequestScope,
    session: ShareSession,
    config: ShareGroupConfig,
    max_records: int,
    deadline: float,
    results: dict[SessionPartition, _Result],
) -> None:
    targets: list[tuple[SessionPartition, Topic]] = []
    for key in session.fetch_order():
        topic = await resolve_partition(ctx, scope, None, key[1], key[0], op=AclOperation.READ)
        if isinstance(topic, ErrorCode):
            results.setdefault(key, _Result(key[1])).error = topic
        else:
            targets.append((key, topic))
    if not targets:
        return
    waits = [TopicPartition(t.name, key[1]) for key, t in targets]
    starts = await _starts(ctx, session, targets, config)

    async def acquire() -> bool:
        return await _acquire(ctx, scope, session, targets, config, starts, max_records, results) > 0

    await ctx.data.reader.long_poll(waits, deadline, acquire, POLL_SECONDS)


async def _starts(
    ctx: BrokerContext, session: ShareSession, targets: list[tuple[SessionPartition, Topic]],
    config: ShareGroupConfig,
) -> list[str | int]:  # fmt: skip
    """Where each share partition begins if this fetch makes it (share.auto.offset.reset): latest,
    earliest, or by_duration:<ISO 8601>, the first record no older than that (latest when none is)."""
    back = by_duration_ms(config.auto_offset_reset)
    if back is None:
        return ["0" if config.auto_offset_reset == EARLIEST else "$"] * len(targets)
    since = int(time.time() * 1000) - back
    starts: list[str | int] = []
    for (_, index), topic in targets:
        found = None
        if topic.name not in session.registered:  # else the share partition exists: no start is used
            with contextlib.suppress(*STORAGE_ERRORS):
                found = await ctx.store.offset_for_timestamp(topic, index, since)
        starts.append("$" if found is None else found[0])
    return starts


async def _acquire(
    ctx: BrokerContext,
    scope: RequestScope,
    session: ShareSession,
    targets: list[tuple[SessionPartition, Topic]],
    config: ShareGroupConfig,
    starts: list[str | int],
    max_records: int,
    results: dict[SessionPartition, _Result],
) -> int:
    """One pipelined acquire over the session's partitions; returns how many records were acquired.
    Every partition is asked for up to max_records; the first ones in the rotation get them first."""
    partitions = [(t, key[1]) for key, t in targets]
    try:
        replies = await ctx.store.share_acquire(
            partitions,
            session.group,
            session.member,
            max_records,
            limits_of(config),
            starts,
        )
    except STORAGE_ERRORS:
        for key, _ in targets:
            results.setdefault(key, _Result(key[1])).error = LOG_UNAVAILABLE
        return 0
    total = 0
    created = []
    for (key, topic), reply in zip(targets, replies, strict=True):
        result = results.setdefault(key, _Result(key[1]))
        if reply.status != 0:
            result.error = ErrorCode.unknown_topic_id
            continue
        if reply.created or topic.name not in session.registered:
            # Registered once per session (SADD is idempotent): an MQ group may have made the Redis group.
            created.append(topic.name)
        await copy_to_topic(ctx, scope, session.group, config, topic, key[1], reply.dead_lettered)
        if reply.entries:
            count, size = _encode(topic, reply, result)
            total += len(reply.entries)
            if ctx.metrics is not None:
                ctx.metrics.topic(ctx.tenant, topic.name).fetched(count, size)
    if created:
        await ctx.store.share_register_topics(session.group, created)
        session.registered.update(created)
    return total


def _encode(topic: Topic, reply: Acquired, result: _Result) -> tuple[int, int]:
    """Adds the acquired records to the result; returns how many records and bytes that was."""
    records, encoded, _ = encode_entries(
        reply.entries, topic.offsets, codec_for(topic.compression_type), topic.log_append_time, NO_LIMIT_BYTES
    )
    result.records += records
    offsets = topic.offsets
    ranges = result.acquired
    for (entry_id, _), count in zip(reply.entries, reply.deliveries, strict=True):
        offset = offsets.offset_of_id(entry_id)
        if ranges and ranges[-1][1] == offset - 1 and ranges[-1][2] == count:
            ranges[-1] = (ranges[-1][0], offset, count)
        else:
            ranges.append((offset, offset, count))
    return encoded, len(records)


# -- the response ---------------------------------------------------------------------------------
def _topics(resp: type[ShareFetchResponse], results: dict[SessionPartition, _Result]) -> tuple[Any, ...]:
    by_topic: dict[uuid.UUID, list[Any]] = {}
    for (topic_id, _), r in results.items():
        if not r.worth_sending:
            continue
        by_topic.setdefault(topic_id, []).append(
            make(
                sibling(resp, "PartitionData"),
                partition_index=r.index,
                error_code=r.error,
                error_message=None,
                acknowledge_error_code=r.ack_error if r.ack_error is not None else ErrorCode.none,
                acknowledge_error_message=None,
                current_leader=make(sibling(resp, "LeaderIdAndEpoch"), leader_id=-1, leader_epoch=-1),
                records=r.records,
                acquired_records=tuple(
                    make(sibling(resp, "AcquiredRecords"), first_offset=a, last_offset=b, delivery_count=n)
                    for a, b, n in r.acquired
                ),
            )
        )
    return tuple(
        make(sibling(resp, "ShareFetchableTopicResponse"), topic_id=t, partitions=tuple(ps))
        for t, ps in by_topic.items()
    )


def _fetch_error(resp: type[ShareFetchResponse], error: ErrorCode, message: str) -> ShareFetchResponse:
    return make(
        resp,
        throttle_time=NO_THROTTLE,
        error_code=error,
        error_message=message,
        acquisition_lock_timeout=datetime.timedelta(0),
        responses=(),
        node_endpoints=(),
    )
