"""KIP-848 consumer group APIs: ConsumerGroupHeartbeat and ConsumerGroupDescribe.

The coordinator (coordinators/groups/consumer/coordinator.py) does the work; these map fields and errors.
heartbeat.py checks and answers the heartbeats of both kinds, and describe.py describes both.
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Sequence
from typing import Any, Protocol

from ....coordinators.groups.consumer.coordinator import Heartbeat
from ....coordinators.groups.consumer.group import ConsumerMember
from ....coordinators.groups.modern.coordinator import MemberTimeouts
from ....coordinators.groups.modern.group import Assignment
from ....protocol.messages import make
from ....protocol.request_types import ConsumerGroupDescribeRequest, ConsumerGroupHeartbeatRequest
from ....protocol.response_types import (
    ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatResponse,
    response_for,
)
from ...context import BrokerContext
from ...net.session import RequestScope
from ..common import NO_THROTTLE, STORAGE_ERRORS
from .describe import Described, describe_group
from .heartbeat import BrokerTopics, answer_heartbeat

MEMBER_TYPE_CONSUMER = 1  # ConsumerGroupDescribe v1: the member uses the consumer protocol


def _ms(value: datetime.timedelta | int) -> int:
    return int(value.total_seconds() * 1000) if hasattr(value, "total_seconds") else int(value)


class _OwnedPartitions(Protocol):
    """ConsumerGroupHeartbeatRequest's TopicPartitions, as every served version has it."""

    @property
    def topic_id(self) -> uuid.UUID | None: ...
    @property
    def partitions(self) -> Sequence[int]: ...


def _owned(topic_partitions: Sequence[_OwnedPartitions] | None) -> Assignment | None:
    if topic_partitions is None:
        return None
    owned: Assignment = {}
    for tp in topic_partitions:
        if tp.topic_id is not None:
            owned.setdefault(str(tp.topic_id), set()).update(int(p) for p in tp.partitions)
    return owned


async def handle_consumer_group_heartbeat(
    ctx: BrokerContext, body: ConsumerGroupHeartbeatRequest, scope: RequestScope
) -> ConsumerGroupHeartbeatResponse:
    client_id, host = scope.client_id, scope.client_host
    names = body.subscribed_topic_names
    hb = Heartbeat(
        group_id=body.group_id,
        member_id=body.member_id,
        member_epoch=body.member_epoch,
        instance_id=body.instance_id,
        rack_id=body.rack_id,
        rebalance_ms=_ms(body.rebalance_timeout),
        subscribed=tuple(names) if names is not None else None,
        regex=getattr(body, "subscribed_topic_regex", None),
        assignor=body.server_assignor,
        owned=_owned(body.topic_partitions),
        client_id=client_id,
        client_host=host,
        version=body.__version__,
    )
    try:  # the group's consumer.* configs over the broker's defaults
        timeouts = MemberTimeouts(*await ctx.group_configs.consumer_timeouts(body.group_id))
    except STORAGE_ERRORS:
        timeouts = MemberTimeouts(
            ctx.settings.consumer_group_session_ms, ctx.settings.consumer_group_heartbeat_ms
        )
    return await answer_heartbeat(
        ctx,
        scope,
        body,
        response_for(body),
        timeouts,
        lambda: ctx.groups.consumer.heartbeat(hb, BrokerTopics(ctx), timeouts),
    )


async def _consumer_fields(m: ConsumerMember, assignment: Described) -> dict[str, Any]:
    return dict(
        instance_id=m.instance_id,
        subscribed_topic_regex=m.regex,
        target_assignment=await assignment(m.target),
        member_type=MEMBER_TYPE_CONSUMER,
    )


async def handle_consumer_group_describe(
    ctx: BrokerContext, body: ConsumerGroupDescribeRequest, scope: RequestScope
) -> ConsumerGroupDescribeResponse:
    resp = response_for(body)
    with_operations = bool(body.include_authorized_operations)
    find, fields = ctx.groups.consumer.find, _consumer_fields
    described = [
        await describe_group(ctx, scope, group_id, resp, with_operations, find, fields)
        for group_id in body.group_ids
    ]
    return make(resp, throttle_time=NO_THROTTLE, groups=tuple(described))
