"""ConsumerGroupHeartbeat and ShareGroupHeartbeat: one way to check and answer a heartbeat of either kind.

consumer.py and share.py map their request to the kind's heartbeat and read the member timeouts; the
rest is here: Kafka's authorization checks, running the coordinator's heartbeat, and the response
(both kinds answer an error, member id and epoch, and an assignment of topic id -> partitions).
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Awaitable, Callable
from typing import TypeVar

from kio.schema.errors import ErrorCode

from ....coordinators.groups.coordinator import NotCoordinator
from ....coordinators.groups.modern.coordinator import HeartbeatAnswer, MemberTimeouts
from ....protocol.messages import make, sibling
from ....protocol.request_types import ConsumerGroupHeartbeatRequest, ShareGroupHeartbeatRequest
from ....protocol.response_types import ConsumerGroupHeartbeatResponse, ShareGroupHeartbeatResponse
from ....security.acls import AclOperation as Op
from ....security.acls import ResourceType
from ....storage.topics.metadata import Topic
from ...context import BrokerContext
from ...net.session import RequestScope
from ..common import GROUPS_UNAVAILABLE, NO_THROTTLE, STORAGE_ERRORS

HeartbeatRequest = ConsumerGroupHeartbeatRequest | ShareGroupHeartbeatRequest
R = TypeVar("R", ConsumerGroupHeartbeatResponse, ShareGroupHeartbeatResponse)


class BrokerTopics:
    """The broker's cached view of topics, as the coordinator reads it."""

    def __init__(self, ctx: BrokerContext) -> None:
        self.ctx = ctx

    async def topic(self, name: str) -> Topic | None:
        return await self.ctx.topics.load(name)

    async def names(self) -> list[str]:
        # One pipelined read of every topic; it refreshes the cache the topic lookups use next.
        return [topic.name for topic in await self.ctx.topics.all()]


async def _refusal(ctx: BrokerContext, scope: RequestScope, body: HeartbeatRequest) -> HeartbeatAnswer | None:
    """Kafka's checks of a KIP-848 or share group heartbeat: READ on the group, then DESCRIBE on each
    subscribed topic (named ones; a regex only ever matches topics, it names none)."""
    group_id = body.group_id
    if not await ctx.access.authorizer.allowed(Op.READ, ResourceType.GROUP, group_id, scope):
        message = f"The principal may not READ group {group_id!r}."
        return HeartbeatAnswer(
            ErrorCode.group_authorization_failed, message, body.member_id, body.member_epoch
        )
    names = set(body.subscribed_topic_names or ())
    denied = names - await ctx.access.authorizer.allowed_names(Op.DESCRIBE, ResourceType.TOPIC, names, scope)
    if denied:
        message = f"The principal may not DESCRIBE the subscribed topics {sorted(denied)}."
        return HeartbeatAnswer(
            ErrorCode.topic_authorization_failed, message, body.member_id, body.member_epoch
        )
    return None


async def answer_heartbeat(
    ctx: BrokerContext,
    scope: RequestScope,
    body: HeartbeatRequest,
    resp: type[R],
    timeouts: MemberTimeouts,
    beat: Callable[[], Awaitable[HeartbeatAnswer]],
) -> R:
    """Runs the coordinator's heartbeat (`beat`) unless the principal may not, and builds the
    response (`resp`, its class in the request's version)."""
    refusal = await _refusal(ctx, scope, body)
    answer: HeartbeatAnswer | None = None
    try:
        answer = refusal if refusal is not None else await beat()
        code = answer.error
    except NotCoordinator:
        code = ErrorCode.not_coordinator
    except STORAGE_ERRORS:
        code = GROUPS_UNAVAILABLE
    assignment = None
    if answer is not None and answer.assignment is not None:
        assignment = make(
            sibling(resp, "Assignment"),
            topic_partitions=tuple(
                make(sibling(resp, "TopicPartitions"), topic_id=uuid.UUID(t), partitions=tuple(sorted(ps)))
                for t, ps in sorted(answer.assignment.items())
            ),
        )
    return make(
        resp,
        throttle_time=NO_THROTTLE,
        error_code=code,
        error_message=answer.message if answer else None,
        member_id=answer.member_id if answer else (body.member_id or None),
        member_epoch=answer.member_epoch if answer else body.member_epoch,
        heartbeat_interval=datetime.timedelta(milliseconds=timeouts.heartbeat_ms),
        assignment=assignment,
    )
