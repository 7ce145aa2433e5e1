"""OffsetCommit, OffsetFetch (single and multi-group forms) and OffsetDelete."""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Protocol

from kio.schema.errors import ErrorCode
from kio.static.protocol import Entity

from ....coordinators.groups.classic.group import GroupState
from ....coordinators.groups.consumer.group import ConsumerGroup
from ....coordinators.groups.coordinator import NotCoordinator
from ....coordinators.groups.share.group import ShareGroup
from ....protocol.messages import make, sibling
from ....protocol.request_types import OffsetCommitRequest, OffsetDeleteRequest, OffsetFetchRequest
from ....protocol.response_types import (
    OffsetCommitResponse,
    OffsetDeleteResponse,
    OffsetFetchResponse,
    response_for,
)
from ....security.acls import AclOperation as Op
from ....security.acls import ResourceType as Resource
from ....storage.topic_partition import TopicPartition
from ....storage.topics.metadata import Topic
from ...context import BrokerContext
from ...metadata.internal_topics import internal_topic
from ...net.session import RequestScope
from ...partitions.sequencer import group_offsets
from ..common import GROUPS_UNAVAILABLE, NO_THROTTLE, STORAGE_ERRORS

MAX_METADATA_BYTES = 4096


# The nested request entities the helpers read, as every served version has them.
class _CommitPartition(Protocol):
    @property
    def partition_index(self) -> int: ...
    @property
    def committed_offset(self) -> int: ...
    @property
    def committed_metadata(self) -> str | None: ...


class _CommitTopic(Protocol):
    @property
    def partitions(self) -> Sequence[_CommitPartition]: ...


class _FetchTopic(Protocol):
    """OffsetFetchRequestTopic (v1-7) or OffsetFetchRequestTopics (v8+)."""

    @property
    def partition_indexes(self) -> Sequence[int]: ...


class _Denied(Exception):
    """The principal may not use the group (GROUP_AUTHORIZATION_FAILED)."""


async def _topic_name(
    ctx: BrokerContext, scope: RequestScope, t: object, op: Op | None = None
) -> tuple[str | None, Topic | ErrorCode | None]:
    """(name, topic) for a request topic given by name or (v10) by id; with `op`, the topic is
    TOPIC_AUTHORIZATION_FAILED when the principal may not perform it (a name is checked before it is
    looked up)."""
    name: str | None = getattr(t, "name", None)
    topic_id = getattr(t, "topic_id", None)
    if name is None and topic_id is not None:
        found = await ctx.topics.by_id(topic_id)
        if (
            found is not None
            and op is not None
            and not await ctx.access.authorizer.allowed(op, Resource.TOPIC, found.name, scope)
        ):
            return found.name, ErrorCode.topic_authorization_failed
        return (found.name if found else None), found
    if name and op is not None and not await ctx.access.authorizer.allowed(op, Resource.TOPIC, name, scope):
        return name, ErrorCode.topic_authorization_failed
    if not name:
        return name, None
    # Committed offsets of an internal topic's partitions are kept like any others
    # (metadata/internal_topics.py).
    return name, internal_topic(name, ctx.topic_defaults) or await ctx.topics.load(name)


async def handle_offset_commit(
    ctx: BrokerContext, body: OffsetCommitRequest, scope: RequestScope
) -> OffsetCommitResponse:
    # Kafka applies a group's commits in the order received; pipelined commits would otherwise race
    # through the Redis pool and an older offset could land last.
    async with ctx.data.sequencer.claim(group_offsets(body.group_id)):
        return await _commit(ctx, scope, body)


async def _commit(ctx: BrokerContext, scope: RequestScope, body: OffsetCommitRequest) -> OffsetCommitResponse:
    resp = response_for(body)
    generation = body.generation_id_or_member_epoch
    try:
        if not await ctx.access.authorizer.allowed(Op.READ, Resource.GROUP, body.group_id, scope):
            raise _Denied
        group_error = await ctx.groups.check_commit(
            body.group_id,
            generation,
            body.member_id,
            getattr(body, "group_instance_id", None),
            body.__version__,
            scope.received_at,
        )
    except _Denied:
        group_error = ErrorCode.group_authorization_failed
    except NotCoordinator:
        group_error = ErrorCode.not_coordinator
    except STORAGE_ERRORS:
        group_error = GROUPS_UNAVAILABLE
    results: list[tuple[_CommitTopic, list[tuple[int, ErrorCode]]]] = []
    to_store: dict[TopicPartition, tuple[int, int, str | None]] = {}
    for t in body.topics:
        try:
            name, topic = await _topic_name(ctx, scope, t, Op.READ)
        except STORAGE_ERRORS:
            name, topic = None, None
        row: list[tuple[int, ErrorCode]] = []
        for p in t.partitions:
            # Kafka's order: the group's authorization, then the topic's (and whether the partition
            # exists), then the member and generation, then the metadata's size.
            code = group_error
            if code == ErrorCode.group_authorization_failed:
                pass
            elif isinstance(topic, ErrorCode):
                code = topic
            elif topic is None or not 0 <= p.partition_index < topic.partitions:
                code = ErrorCode.unknown_topic_id if name is None else ErrorCode.unknown_topic_or_partition
            if code == ErrorCode.none:
                if (
                    p.committed_metadata is not None
                    and len(p.committed_metadata.encode()) > MAX_METADATA_BYTES
                ):
                    code = ErrorCode.offset_metadata_too_large
                else:
                    assert name is not None
                    to_store[TopicPartition(name, p.partition_index)] = (
                        p.committed_offset,
                        getattr(p, "committed_leader_epoch", -1),
                        p.committed_metadata or "",  # Kafka keeps a null metadata as ""
                    )
            row.append((p.partition_index, code))
        results.append((t, row))
    if to_store:
        try:
            owner = await ctx.groups.owner(body.group_id, scope.received_at)
            if not await ctx.store.commit_offsets(body.group_id, owner, to_store):
                # Another broker claimed the group since the check: its coordinator takes the commit.
                ctx.groups.unload(body.group_id)
                results = [(t, [(i, ErrorCode.not_coordinator) for i, _ in row]) for t, row in results]
        except NotCoordinator:
            results = [(t, [(i, ErrorCode.not_coordinator) for i, _ in row]) for t, row in results]
        except STORAGE_ERRORS:
            results = [(t, [(i, GROUPS_UNAVAILABLE) for i, _ in row]) for t, row in results]
    return make(
        resp,
        throttle_time=NO_THROTTLE,
        topics=tuple(
            make(
                sibling(resp, "OffsetCommitResponseTopic"),
                name=getattr(t, "name", None),
                topic_id=getattr(t, "topic_id", None),
                partitions=tuple(
                    make(sibling(resp, "OffsetCommitResponsePartition"), partition_index=i, error_code=c)
                    for i, c in row
                ),
            )
            for t, row in results
        ),
    )


async def _fetch_group(
    ctx: BrokerContext,
    scope: RequestScope,
    group_id: str,
    topics: Sequence[_FetchTopic] | None,
    resp: type[OffsetFetchResponse],
    multi: bool,
    member: tuple[str | None, int],
    require_stable: bool,
) -> tuple[ErrorCode, list[Entity]]:
    """(group error, response topics) for one group of an OffsetFetch; `member` is (member id, epoch)
    from v9, checked against a consumer group. require_stable (v7+, KIP-447): a partition whose offset
    an open transaction holds answers UNSTABLE_OFFSET_COMMIT, which clients retry."""
    partition_cls = (
        sibling(resp, "OffsetFetchResponsePartitions")
        if multi
        else sibling(resp, "OffsetFetchResponsePartition")
    )
    topic_cls = (
        sibling(resp, "OffsetFetchResponseTopics") if multi else sibling(resp, "OffsetFetchResponseTopic")
    )
    if not await ctx.access.authorizer.allowed(Op.DESCRIBE, Resource.GROUP, group_id, scope):
        return ErrorCode.group_authorization_failed, []
    denied: set[str] = set()  # named topics the principal may not describe
    try:
        coordinator = await ctx.groups.coordinator_for(group_id)
        if coordinator.broker_id != ctx.me.broker_id:
            return ErrorCode.not_coordinator, []
        member_error = await ctx.groups.check_fetch(group_id, *member)
        if member_error != ErrorCode.none:
            return member_error, []
        if topics is None:
            committed = await ctx.store.committed_offsets(group_id)
            # Every topic: those the principal may not describe are left out.
            shown = await ctx.access.authorizer.allowed_names(
                Op.DESCRIBE, Resource.TOPIC, {n for n, _ in committed}, scope
            )
            by_topic: dict[str, list[int]] = {}
            for topic_name, partition in sorted(committed):
                if topic_name in shown:
                    by_topic.setdefault(topic_name, []).append(partition)
            wanted: list[tuple[_FetchTopic | None, str | None, list[int]]] = [
                (None, n, ps) for n, ps in by_topic.items()
            ]
        else:
            wanted = []
            for t in topics:
                found_name, found = await _topic_name(ctx, scope, t, Op.DESCRIBE)
                if isinstance(found, ErrorCode) and found_name is not None:
                    denied.add(found_name)
                wanted.append((t, found_name or getattr(t, "name", None), list(t.partition_indexes)))
            pairs = [TopicPartition(n, p) for _, n, ps in wanted if n is not None for p in ps]
            committed = await ctx.store.committed_offsets(group_id, pairs)
        unstable = await ctx.store.pending_txn_offsets(group_id, None) if require_stable else set()
    except NotCoordinator:
        return ErrorCode.not_coordinator, []
    except STORAGE_ERRORS:
        return GROUPS_UNAVAILABLE, []
    out = []
    for requested, name, partitions in wanted:
        rows = []
        for p in partitions:
            c = committed.get(TopicPartition(name, p)) if name is not None else None
            if name is not None and name in denied:
                c, code = None, ErrorCode.topic_authorization_failed
            elif name is not None and TopicPartition(name, p) in unstable:
                c, code = None, ErrorCode.unstable_offset_commit
            else:
                code = ErrorCode.none
            rows.append(
                make(
                    partition_cls,
                    partition_index=p,
                    committed_offset=c.offset if c else -1,
                    committed_leader_epoch=c.leader_epoch if c else -1,
                    metadata=c.metadata if c else "",
                    error_code=code,
                )
            )
        topic_id = getattr(requested, "topic_id", None) if requested is not None else None
        if topic_id is None and name is not None and multi:
            found = await ctx.topics.load(name)
            topic_id = found.id if found else None
        by_id = {"topic_id": topic_id} if multi else {}  # only the groups form (v8+) has topic ids
        out.append(make(topic_cls, name=name, partitions=tuple(rows), **by_id))
    return ErrorCode.none, out


async def handle_offset_fetch(
    ctx: BrokerContext, body: OffsetFetchRequest, scope: RequestScope
) -> OffsetFetchResponse:
    resp = response_for(body)
    stable = getattr(body, "require_stable", False)  # v7+
    if hasattr(body, "groups"):
        groups = []
        for g in body.groups:
            member = (getattr(g, "member_id", None), getattr(g, "member_epoch", -1))
            code, topics = await _fetch_group(ctx, scope, g.group_id, g.topics, resp, True, member, stable)
            groups.append(
                make(
                    sibling(resp, "OffsetFetchResponseGroup"),
                    group_id=g.group_id,
                    topics=tuple(topics),
                    error_code=code,
                )
            )
        return make(resp, throttle_time=NO_THROTTLE, groups=tuple(groups))
    code, topics = await _fetch_group(ctx, scope, body.group_id, body.topics, resp, False, (None, -1), stable)
    return make(resp, throttle_time=NO_THROTTLE, topics=tuple(topics), error_code=code)


def subscribed_topics(metadata: bytes) -> set[str]:
    """Topics in a consumer protocol subscription (version, then an int32-counted string array)."""
    try:
        (count,) = struct.unpack_from(">i", metadata, 2)
        pos, topics = 6, set()
        for _ in range(max(count, 0)):
            (length,) = struct.unpack_from(">h", metadata, pos)
            topics.add(metadata[pos + 2 : pos + 2 + length].decode())
            pos += 2 + length
        return topics
    except (struct.error, UnicodeDecodeError):
        return set()


async def handle_offset_delete(
    ctx: BrokerContext, body: OffsetDeleteRequest, scope: RequestScope
) -> OffsetDeleteResponse:
    async with ctx.data.sequencer.claim(group_offsets(body.group_id)):  # after the commits received before it
        return await _delete(ctx, scope, body)


async def _delete(ctx: BrokerContext, scope: RequestScope, body: OffsetDeleteRequest) -> OffsetDeleteResponse:
    resp = response_for(body)
    code = ErrorCode.none
    subscribed: set[str] = set()
    try:
        if not await ctx.access.authorizer.allowed(Op.DELETE, Resource.GROUP, body.group_id, scope):
            raise _Denied
        group = await ctx.groups.group(body.group_id)
        if isinstance(group, ShareGroup):
            code = ErrorCode.group_id_not_found  # a share group has no committed offsets, as in Kafka
        elif isinstance(group, ConsumerGroup):
            subscribed = group.subscribed_topics()
        elif group.state == GroupState.DEAD:
            code = ErrorCode.group_id_not_found
        elif group.protocol_type == "consumer" and group.state != GroupState.EMPTY:
            for m in group.members.values():
                subscribed |= subscribed_topics(m.metadata_for(group.protocol or ""))
    except _Denied:
        code = ErrorCode.group_authorization_failed
    except NotCoordinator:
        code = ErrorCode.not_coordinator
    except STORAGE_ERRORS:
        code = GROUPS_UNAVAILABLE
    readable = await ctx.access.authorizer.allowed_names(
        Op.READ, Resource.TOPIC, {t.name for t in body.topics}, scope
    )
    topics = []
    doomed: list[TopicPartition] = []
    for t in body.topics:
        rows = []
        for p in t.partitions:
            part_code = ErrorCode.group_subscribed_to_topic if t.name in subscribed else ErrorCode.none
            if t.name not in readable:
                part_code = ErrorCode.topic_authorization_failed
            if code == ErrorCode.none and part_code == ErrorCode.none:
                doomed.append(TopicPartition(t.name, p.partition_index))
            rows.append(
                make(
                    sibling(resp, "OffsetDeleteResponsePartition"),
                    partition_index=p.partition_index,
                    error_code=part_code,
                )
            )
        topics.append(make(sibling(resp, "OffsetDeleteResponseTopic"), name=t.name, partitions=tuple(rows)))
    if code == ErrorCode.none and doomed:
        try:
            await ctx.store.delete_offsets(body.group_id, doomed)
        except STORAGE_ERRORS:
            code = GROUPS_UNAVAILABLE
    return make(
        resp,
        error_code=code,
        throttle_time=NO_THROTTLE,
        topics=tuple(topics) if code == ErrorCode.none else (),
    )
