"""KIP-932 share group APIs: ShareGroupHeartbeat and ShareGroupDescribe.

The coordinator (coordinators/share_coordinator.py) does the work; these map fields and errors.
"""

from __future__ import annotations

import uuid
from types import ModuleType
from typing import Any

from kio.schema.errors import ErrorCode
from kio.static.protocol import Entity, ResponsePayload

from ....coordinators.consumer_coordinator import MemberTimeouts
from ....coordinators.group_coordinator import NotCoordinator
from ....coordinators.share_config import ShareGroupConfig, share_group_config
from ....coordinators.share_coordinator import Refusal, ShareHeartbeat
from ....coordinators.share_group import Assignment, ShareGroup
from ....protocol.messages import make, response_module_of
from ....protocol.request_types import ShareGroupDescribeRequest, ShareGroupHeartbeatRequest
from ....security.acls import OPERATIONS_OMITTED
from ...context import BrokerContext
from ...session import CLIENT
from ..common import GROUPS_UNAVAILABLE, NO_THROTTLE, STORAGE_ERRORS
from .consumer import BrokerTopics, answered, describe_refusal, heartbeat_refusal, heartbeat_response


async def group_config(ctx: BrokerContext, group_id: str) -> ShareGroupConfig:
    """The share group's settings: its share.* group configs over the broker's defaults (the
    defaults alone when Redis cannot say)."""
    try:
        return await ctx.group_configs.share(group_id)
    except STORAGE_ERRORS:
        return share_group_config({}, ctx.settings)


async def forget_share_state(ctx: BrokerContext, group_id: str) -> None:
    """After DeleteGroups deleted an empty share group: its share partitions go too (the Redis consumer
    groups on the partitions' streams, with their counters), and the list of its topics."""
    partitions = []
    for name in await ctx.store.share_topics(group_id):
        topic = await ctx.topics.load(name)
        if topic is not None:
            partitions += [(topic, p) for p in range(topic.partitions)]
    if partitions:
        await ctx.store.share_reset(partitions, group_id, [None] * len(partitions))
    await ctx.store.share_forget_group(group_id)


async def handle_share_group_heartbeat(
    ctx: BrokerContext, body: ShareGroupHeartbeatRequest
) -> ResponsePayload:
    mod = response_module_of(body)
    client_id, host = CLIENT.get()
    names = body.subscribed_topic_names
    hb = ShareHeartbeat(
        group_id=body.group_id,
        member_id=body.member_id,
        member_epoch=body.member_epoch,
        rack_id=body.rack_id,
        subscribed=tuple(names) if names is not None else None,
        client_id=client_id,
        client_host=host,
    )
    config = await group_config(ctx, body.group_id)
    timeouts = MemberTimeouts(config.session_timeout_ms, config.heartbeat_interval_ms)
    refusal = await heartbeat_refusal(ctx, body.group_id, names, body)
    heartbeat = answered(refusal) if refusal else ctx.groups.share.heartbeat(hb, BrokerTopics(ctx), timeouts)
    return await heartbeat_response(mod, mod.ShareGroupHeartbeatResponse, heartbeat, body, timeouts)


async def _describe_one(ctx: BrokerContext, group_id: str, mod: ModuleType, with_operations: bool) -> Entity:
    values: dict[str, Any] = dict(
        error_code=ErrorCode.none,
        error_message=None,
        group_id=group_id,
        group_state="Dead",
        group_epoch=-1,
        assignment_epoch=-1,
        assignor_name="",
        members=(),
        authorized_operations=OPERATIONS_OMITTED,
    )
    if not group_id.strip():
        values["error_code"] = ErrorCode.invalid_group_id
        return make(mod.DescribedGroup, **values)
    if await describe_refusal(ctx, group_id, values, with_operations):
        return make(mod.DescribedGroup, **values)
    try:
        found = await ctx.groups.share.find(group_id)
        if isinstance(found, Refusal):
            values.update(error_code=found.error, error_message=found.message)
            return make(mod.DescribedGroup, **values)
        async with found.lock:
            values.update(
                group_state=found.state.value,
                group_epoch=found.group_epoch,
                assignment_epoch=found.assignment_epoch,
                assignor_name=found.assignor,
                members=tuple(await _describe_members(ctx, found, mod)),
            )
    except NotCoordinator:
        values["error_code"] = ErrorCode.not_coordinator
    except STORAGE_ERRORS:
        values["error_code"] = GROUPS_UNAVAILABLE
    return make(mod.DescribedGroup, **values)


async def _describe_members(ctx: BrokerContext, group: ShareGroup, mod: ModuleType) -> list[Entity]:
    names = {info.id: name for name, info in group.topics.items()}

    async def assignment(parts: Assignment) -> Entity:
        rows = []
        for topic_id, partitions in sorted(parts.items()):
            name = names.get(topic_id)
            if name is None:  # a topic deleted since: look the id up, else leave the name empty
                found = await ctx.topics.by_id(uuid.UUID(topic_id))
                name = found.name if found else ""
            rows.append(
                make(
                    mod.TopicPartitions,
                    topic_id=uuid.UUID(topic_id),
                    topic_name=name,
                    partitions=tuple(sorted(partitions)),
                )
            )
        return make(mod.Assignment, topic_partitions=tuple(rows))

    return [
        make(
            mod.Member,
            member_id=m.member_id,
            rack_id=m.rack_id,
            member_epoch=m.epoch,
            client_id=m.client_id,
            client_host=m.client_host,
            subscribed_topic_names=m.subscribed,
            assignment=await assignment(m.assigned),
        )
        for m in group.members.values()
    ]


async def handle_share_group_describe(ctx: BrokerContext, body: ShareGroupDescribeRequest) -> ResponsePayload:
    mod = response_module_of(body)
    with_operations = bool(getattr(body, "include_authorized_operations", False))
    described = [await _describe_one(ctx, group_id, mod, with_operations) for group_id in body.group_ids]
    return make(mod.ShareGroupDescribeResponse, throttle_time=NO_THROTTLE, groups=tuple(described))
