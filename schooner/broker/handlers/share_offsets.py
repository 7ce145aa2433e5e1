"""DescribeShareGroupOffsets, AlterShareGroupOffsets and DeleteShareGroupOffsets (KIP-932): a share
group's share-partition start offsets, read, set or dropped by an admin.

A share partition is the Redis consumer group named after the share group on the partition's stream
(storage/share/partition.py); a registry set lists the topics where the group has one. Altering starts
a share partition over at the offset (creating it if needed); deleting drops it, so the next fetch
starts again per share.auto.offset.reset. Both need a group without members, as in Kafka, and an id
that a classic or consumer group holds is GROUP_ID_NOT_FOUND to all three.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kio.schema.errors import ErrorCode

from ...coordinators.groups.classic.model import Group
from ...coordinators.groups.consumer.group import ConsumerGroup
from ...coordinators.groups.coordinator import NotCoordinator
from ...coordinators.groups.share.group import ShareGroup
from ...protocol.messages import make, sibling
from ...protocol.request_types import (
    AlterShareGroupOffsetsRequest,
    DeleteShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsRequest,
)
from ...protocol.response_types import (
    AlterShareGroupOffsetsResponse,
    DeleteShareGroupOffsetsResponse,
    DescribeShareGroupOffsetsResponse,
    response_for,
)
from ...security.acls import AclOperation, ResourceType
from ...storage.share.partition import NOT_THIS_TOPIC, ShareState
from ...storage.topics.metadata import Topic
from ..context import BrokerContext
from ..net.session import RequestScope
from .common import GROUPS_UNAVAILABLE, NO_THROTTLE, STORAGE_ERRORS, resolve_partition, resolve_topic

SHARE = "share"  # the `type` field of a share group's hash (as ListGroups shows it)
UNKNOWN = -1  # start offset and lag of a share partition not initialized; every leader epoch


async def _active_members(ctx: BrokerContext, group_id: str) -> int:
    """How many members the share group has now. Raises NotCoordinator when another broker
    coordinates the group."""
    found = await ctx.groups.share.find(group_id)
    return len(found.members) if isinstance(found, ShareGroup) else 0


async def _other_kind(ctx: BrokerContext, group_id: str) -> str | None:
    """The type of the classic or consumer group that holds the id, or None when it is free or a
    share group. A hash with no `type` is only a claim (a coordinator looked the id up), unless the
    id has committed offsets, which only classic and consumer groups have."""
    held = ctx.groups.loaded(group_id)
    if isinstance(held, ConsumerGroup):
        return held.KIND  # "consumer", or "streams" (a StreamsGroup is a ConsumerGroup)
    if isinstance(held, Group) and (held.members or held.generation):
        return "classic"
    kind = (await ctx.store.group_states([group_id]))[group_id].get("type")
    if kind:
        return None if kind == SHARE else kind
    return "classic" if await ctx.store.committed_offsets(group_id) else None


async def _refusal(
    ctx: BrokerContext, scope: RequestScope, group_id: str, changing: bool, op: AclOperation
) -> tuple[ErrorCode, str] | None:
    """Why the group's offsets may not be read (or, changing, altered or deleted), or None. `op` is
    what the principal needs on the group: DESCRIBE to read, READ to alter, DELETE to delete."""
    if not group_id:
        return ErrorCode.invalid_group_id, "The group id is empty"
    if not await ctx.access.authorizer.allowed(op, ResourceType.GROUP, group_id, scope):
        return ErrorCode.group_authorization_failed, f"The principal may not {op.name} group {group_id!r}"
    try:
        kind = await _other_kind(ctx, group_id)
        if kind is not None:
            return ErrorCode.group_id_not_found, f"Group {group_id} is a {kind} group, not a share group"
        if changing and await _active_members(ctx, group_id):
            return ErrorCode.non_empty_group, f"Share group {group_id} has active members"
    except NotCoordinator:
        return ErrorCode.not_coordinator, f"This broker does not coordinate group {group_id}"
    except STORAGE_ERRORS:
        return GROUPS_UNAVAILABLE, "Redis is unavailable"
    return None


# -- DescribeShareGroupOffsets ------------------------------------------------------------------------
async def handle_describe_share_group_offsets(
    ctx: BrokerContext, body: DescribeShareGroupOffsetsRequest, scope: RequestScope
) -> DescribeShareGroupOffsetsResponse:
    resp = response_for(body)
    groups = [await _describe_group(ctx, scope, resp, g.group_id, g.topics) for g in body.groups]
    return make(resp, throttle_time=NO_THROTTLE, groups=tuple(groups))


async def _describe_group(
    ctx: BrokerContext,
    scope: RequestScope,
    resp: type[DescribeShareGroupOffsetsResponse],
    group_id: str,
    topics: Any,
) -> Any:
    def group(error: ErrorCode, message: str | None, described: Sequence[Any] = ()) -> Any:
        return make(
            sibling(resp, "DescribeShareGroupOffsetsResponseGroup"),
            group_id=group_id,
            topics=tuple(described),
            error_code=error,
            error_message=message,
        )

    refusal = await _refusal(ctx, scope, group_id, changing=False, op=AclOperation.DESCRIBE)
    if refusal is not None:
        return group(*refusal)
    try:
        if topics is None:  # every topic where the group has share partitions, those initialized
            wanted = await _initialized(ctx, group_id)
            shown = await ctx.access.authorizer.allowed_names(
                AclOperation.DESCRIBE, ResourceType.TOPIC, [n for n, _ in wanted], scope
            )
            wanted = [(n, ps) for n, ps in wanted if n in shown]
        else:
            wanted = [(t.topic_name, list(t.partitions)) for t in topics]
        described = [
            await _describe_topic(ctx, scope, resp, group_id, name, ps, topics is None) for name, ps in wanted
        ]
    except STORAGE_ERRORS:
        return group(GROUPS_UNAVAILABLE, "Redis is unavailable")
    return group(ErrorCode.none, None, [t for t in described if t is not None])


async def _initialized(ctx: BrokerContext, group_id: str) -> list[tuple[str, list[int]]]:
    wanted = []
    for name in await ctx.store.share_topics(group_id):
        topic = await ctx.topics.load(name)
        if topic is not None:  # deleted since: its share partitions went with it
            wanted.append((name, list(range(topic.partitions))))
    return wanted


async def _describe_topic(
    ctx: BrokerContext,
    scope: RequestScope,
    resp: type[DescribeShareGroupOffsetsResponse],
    group_id: str,
    name: str,
    indexes: list[int],
    only_initialized: bool,
) -> Any:
    """The topic's part of the answer; None when only initialized partitions are wanted and it has none."""
    topic = await resolve_topic(ctx, scope, name, op=AclOperation.DESCRIBE)
    states: dict[int, ShareState | None] = {}
    if isinstance(topic, Topic):
        known = [i for i in indexes if 0 <= i < topic.partitions]
        if known:
            found = await ctx.store.share_states([(topic, i) for i in known], group_id)
            states = dict(zip(known, found, strict=True))
    missing = topic if isinstance(topic, ErrorCode) else ErrorCode.unknown_topic_or_partition
    partitions = []
    for index in indexes:
        state = states.get(index)
        if only_initialized and state is None:
            continue
        partitions.append(
            make(
                sibling(resp, "DescribeShareGroupOffsetsResponsePartition"),
                partition_index=index,
                start_offset=state.start_offset if state else UNKNOWN,
                leader_epoch=UNKNOWN,
                lag=state.lag if state else UNKNOWN,
                error_code=ErrorCode.none if index in states else missing,
                error_message=None,
            )
        )
    if only_initialized and not partitions:
        return None
    return make(
        sibling(resp, "DescribeShareGroupOffsetsResponseTopic"),
        topic_name=name,
        topic_id=topic.id if isinstance(topic, Topic) else None,
        partitions=tuple(partitions),
    )


# -- AlterShareGroupOffsets ---------------------------------------------------------------------------
async def handle_alter_share_group_offsets(
    ctx: BrokerContext, body: AlterShareGroupOffsetsRequest, scope: RequestScope
) -> AlterShareGroupOffsetsResponse:
    resp = response_for(body)

    def answer(
        error: ErrorCode, message: str | None, responses: Sequence[Any] = ()
    ) -> AlterShareGroupOffsetsResponse:
        return make(
            resp,
            throttle_time=NO_THROTTLE,
            error_code=error,
            error_message=message,
            responses=tuple(responses),
        )

    refusal = await _refusal(ctx, scope, body.group_id, changing=True, op=AclOperation.READ)
    if refusal is not None:
        return answer(*refusal)
    rows = [
        _AlterRow(
            t.topic_name,
            p.partition_index,
            p.start_offset,
            await resolve_partition(ctx, scope, t.topic_name, p.partition_index, op=AclOperation.READ),
        )
        for t in body.topics
        for p in t.partitions
    ]
    try:
        await _alter(ctx, body.group_id, rows)
    except STORAGE_ERRORS:
        return answer(GROUPS_UNAVAILABLE, "Redis is unavailable")
    by_topic: dict[str, list[Any]] = {}
    ids: dict[str, uuid.UUID] = {}
    partition_cls = sibling(resp, "AlterShareGroupOffsetsResponsePartition")
    for row in rows:
        if isinstance(row.topic, Topic):
            ids[row.name] = row.topic.id
        by_topic.setdefault(row.name, []).append(
            make(partition_cls, partition_index=row.index, error_code=row.error, error_message=None)
        )
    topics = [
        make(
            sibling(resp, "AlterShareGroupOffsetsResponseTopic"),
            topic_name=n,
            topic_id=ids.get(n),
            partitions=tuple(ps),
        )
        for n, ps in by_topic.items()
    ]
    return answer(ErrorCode.none, None, topics)


@dataclass(slots=True)
class _AlterRow:
    name: str
    index: int
    offset: int
    topic: Topic | ErrorCode
    error: ErrorCode = ErrorCode.none


async def _alter(ctx: BrokerContext, group_id: str, rows: list[_AlterRow]) -> None:
    """Starts every valid row's share partition over at its offset; sets each row's error."""
    todo: list[tuple[_AlterRow, Topic]] = []
    for row in rows:
        if isinstance(row.topic, ErrorCode):
            row.error = row.topic
        elif row.offset < 0:
            row.error = ErrorCode.invalid_request
        else:
            todo.append((row, row.topic))
    if not todo:
        return
    done = await ctx.store.share_reset([(t, r.index) for r, t in todo], group_id, [r.offset for r, _ in todo])
    for (row, _), result in zip(todo, done, strict=True):
        if result == NOT_THIS_TOPIC:  # deleted and made again meanwhile
            row.error = ErrorCode.unknown_topic_or_partition
    altered = sorted({t.name for r, t in todo if r.error == ErrorCode.none})
    if altered:
        await ctx.store.share_register_topics(group_id, altered)


# -- DeleteShareGroupOffsets --------------------------------------------------------------------------
async def handle_delete_share_group_offsets(
    ctx: BrokerContext, body: DeleteShareGroupOffsetsRequest, scope: RequestScope
) -> DeleteShareGroupOffsetsResponse:
    resp = response_for(body)

    def answer(
        error: ErrorCode, message: str | None, responses: Sequence[Any] = ()
    ) -> DeleteShareGroupOffsetsResponse:
        return make(
            resp,
            throttle_time=NO_THROTTLE,
            error_code=error,
            error_message=message,
            responses=tuple(responses),
        )

    refusal = await _refusal(ctx, scope, body.group_id, changing=True, op=AclOperation.DELETE)
    if refusal is not None:
        return answer(*refusal)
    results = []
    try:
        for t in body.topics:
            topic = await resolve_topic(ctx, scope, t.topic_name, op=AclOperation.READ)
            error = topic if isinstance(topic, ErrorCode) else await _delete_topic(ctx, body.group_id, topic)
            results.append(
                make(
                    sibling(resp, "DeleteShareGroupOffsetsResponseTopic"),
                    topic_name=t.topic_name,
                    topic_id=topic.id if isinstance(topic, Topic) else None,
                    error_code=error,
                    error_message=None,
                )
            )
    except STORAGE_ERRORS:
        return answer(GROUPS_UNAVAILABLE, "Redis is unavailable")
    return answer(ErrorCode.none, None, results)


async def _delete_topic(ctx: BrokerContext, group_id: str, topic: Topic) -> ErrorCode:
    """Drops the group's share partitions on every partition of the topic, then forgets the topic."""
    partitions = [(topic, p) for p in range(topic.partitions)]
    done = await ctx.store.share_reset(partitions, group_id, [None] * len(partitions))
    if NOT_THIS_TOPIC in done:  # deleted and made again meanwhile
        return ErrorCode.unknown_topic_or_partition
    await ctx.store.share_unregister_topics(group_id, [topic.name])
    return ErrorCode.none
