"""KIP-932 share group APIs: ShareGroupHeartbeat and ShareGroupDescribe.

The coordinator (coordinators/groups/share/coordinator.py) does the work; these map fields and errors.
heartbeat.py checks and answers the heartbeats of both kinds, and describe.py describes both.
"""

from __future__ import annotations

from kio.schema.errors import ErrorCode
from kio.static.protocol import Entity

from ....coordinators.groups.modern.coordinator import MemberTimeouts
from ....coordinators.groups.share.config import ShareGroupConfig, share_group_config
from ....coordinators.groups.share.coordinator import ShareHeartbeat
from ....protocol.messages import make, sibling
from ....protocol.request_types import ShareGroupDescribeRequest, ShareGroupHeartbeatRequest
from ....protocol.response_types import ShareGroupDescribeResponse, ShareGroupHeartbeatResponse, response_for
from ...context import BrokerContext
from ...net.session import RequestScope
from ..common import NO_THROTTLE, STORAGE_ERRORS
from .describe import describe_group, undescribed
from .heartbeat import BrokerTopics, answer_heartbeat


async def group_config(ctx: BrokerContext, group_id: str) -> ShareGroupConfig:
    """The share group's settings: its share.* group configs over the broker's defaults (the
    defaults alone when Redis cannot say)."""
    try:
        return await ctx.group_configs.share(group_id)
    except STORAGE_ERRORS:
        return share_group_config({}, ctx.settings)


async def handle_share_group_heartbeat(
    ctx: BrokerContext, body: ShareGroupHeartbeatRequest, scope: RequestScope
) -> ShareGroupHeartbeatResponse:
    client_id, host = scope.client_id, scope.client_host
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
    return await answer_heartbeat(
        ctx,
        scope,
        body,
        response_for(body),
        timeouts,
        lambda: ctx.groups.share.heartbeat(hb, BrokerTopics(ctx), timeouts),
    )


async def _describe_one(
    ctx: BrokerContext,
    scope: RequestScope,
    group_id: str,
    resp: type[ShareGroupDescribeResponse],
    with_operations: bool,
) -> Entity:
    if not group_id.strip():
        return make(
            sibling(resp, "DescribedGroup"), **undescribed(group_id, error_code=ErrorCode.invalid_group_id)
        )
    return await describe_group(ctx, scope, group_id, resp, with_operations, ctx.groups.share.find)


async def handle_share_group_describe(
    ctx: BrokerContext, body: ShareGroupDescribeRequest, scope: RequestScope
) -> ShareGroupDescribeResponse:
    resp = response_for(body)
    with_operations = bool(body.include_authorized_operations)
    described = [
        await _describe_one(ctx, scope, group_id, resp, with_operations) for group_id in body.group_ids
    ]
    return make(resp, throttle_time=NO_THROTTLE, groups=tuple(described))
