"""KIP-848 consumer group APIs: ConsumerGroupHeartbeat and ConsumerGroupDescribe.

The coordinator (coordinators/consumer_coordinator.py) does the work; these map fields and errors.
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Protocol

from kio.schema.errors import ErrorCode
from kio.static.protocol import Entity, ResponsePayload

from ....coordinators.consumer_coordinator import Heartbeat, MemberTimeouts
from ....coordinators.consumer_group import Assignment, ConsumerGroup
from ....coordinators.group_coordinator import NotCoordinator
from ....protocol.messages import make, response_module_of
from ....protocol.request_types import ConsumerGroupDescribeRequest, ConsumerGroupHeartbeatRequest
from ....security.acls import OPERATIONS_OMITTED, ResourceType
from ....security.acls import AclOperation as Op
from ....storage.topics.metadata import Topic
from ...context import BrokerContext
from ...session import CLIENT
from ..common import GROUPS_UNAVAILABLE, NO_THROTTLE, STORAGE_ERRORS

MEMBER_TYPE_CONSUMER = 1  # ConsumerGroupDescribe v1: the member uses the consumer protocol


class BrokerTopics:
    """The broker's cached view of topics, as the coordinator reads it."""

    def __init__(self, ctx: BrokerContext) -> None:
        self.ctx = ctx

    async def topic(self, name: str) -> Topic | None:
        return await self.ctx.topics.load(name)

    async def names(self) -> list[str]:
        # One pipelined read of every topic; it refreshes the cache the topic lookups use next.
        return [topic.name for topic in await self.ctx.topics.all()]


@dataclass(frozen=True, slots=True)
class _Refused:
    """A heartbeat answered before the coordinator sees it: an authorization failure."""

    error: ErrorCode
    message: str
    member_id: str | None
    member_epoch: int
    assignment: None = None


async def heartbeat_refusal(
    ctx: BrokerContext, group_id: str, subscribed: Sequence[str] | None, body: _HeartbeatRequest
) -> _Refused | None:
    """Kafka's checks of a KIP-848 or share group heartbeat: READ on the group, then DESCRIBE on each
    subscribed topic (named ones; a regex only ever matches topics, it names none)."""
    if not await ctx.access.authorizer.allowed(Op.READ, ResourceType.GROUP, group_id):
        message = f"The principal may not READ group {group_id!r}."
        return _Refused(ErrorCode.group_authorization_failed, message, body.member_id, body.member_epoch)
    names = set(subscribed or ())
    denied = names - await ctx.access.authorizer.allowed_names(Op.DESCRIBE, ResourceType.TOPIC, names)
    if denied:
        message = f"The principal may not DESCRIBE the subscribed topics {sorted(denied)}."
        return _Refused(ErrorCode.topic_authorization_failed, message, body.member_id, body.member_epoch)
    return None


async def answered(refusal: _Refused) -> _Refused:
    return refusal


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
    ctx: BrokerContext, body: ConsumerGroupHeartbeatRequest
) -> ResponsePayload:
    mod = response_module_of(body)
    client_id, host = CLIENT.get()
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
    refusal = await heartbeat_refusal(ctx, body.group_id, names, body)
    heartbeat = (
        answered(refusal) if refusal else ctx.groups.consumer.heartbeat(hb, BrokerTopics(ctx), timeouts)
    )
    return await heartbeat_response(mod, mod.ConsumerGroupHeartbeatResponse, heartbeat, body, timeouts)


class _HeartbeatRequest(Protocol):
    @property
    def member_id(self) -> str | None: ...
    @property
    def member_epoch(self) -> int: ...


async def heartbeat_response(
    mod: ModuleType,
    response: type[ResponsePayload],
    heartbeat: Awaitable[Any],
    body: _HeartbeatRequest,
    timeouts: MemberTimeouts,
) -> ResponsePayload:
    """Runs a coordinator's heartbeat (KIP-848's or a share group's: both answer error, message,
    member id and epoch, and an assignment of topic id -> partitions) and builds its response."""
    try:
        answer = await heartbeat
        code, message = answer.error, answer.message
    except NotCoordinator:
        answer, code, message = None, ErrorCode.not_coordinator, None
    except STORAGE_ERRORS:
        answer, code, message = None, GROUPS_UNAVAILABLE, None
    assignment = None
    if answer is not None and answer.assignment is not None:
        assignment = make(
            mod.Assignment,
            topic_partitions=tuple(
                make(mod.TopicPartitions, topic_id=uuid.UUID(t), partitions=tuple(sorted(ps)))
                for t, ps in sorted(answer.assignment.items())
            ),
        )
    return make(
        response,
        throttle_time=NO_THROTTLE,
        error_code=code,
        error_message=message,
        member_id=answer.member_id if answer else (body.member_id or None),
        member_epoch=answer.member_epoch if answer else body.member_epoch,
        heartbeat_interval=datetime.timedelta(milliseconds=timeouts.heartbeat_ms),
        assignment=assignment,
    )


async def describe_refusal(
    ctx: BrokerContext, group_id: str, values: dict[str, Any], with_operations: bool
) -> bool:
    """Kafka's check of a KIP-848 or share group describe: DESCRIBE on the group. Fills `values` (the
    DescribedGroup's) with the error, or with the authorized operations when they are asked for."""
    if not await ctx.access.authorizer.allowed(Op.DESCRIBE, ResourceType.GROUP, group_id):
        values.update(
            error_code=ErrorCode.group_authorization_failed,
            error_message=f"The principal may not DESCRIBE group {group_id!r}.",
        )
        return True
    if with_operations:
        values["authorized_operations"] = await ctx.access.authorizer.operations(ResourceType.GROUP, group_id)
    return False


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
    if await describe_refusal(ctx, group_id, values, with_operations):
        return make(mod.DescribedGroup, **values)
    try:
        group = await ctx.groups.find(group_id)
        if group is None:
            values.update(
                error_code=ErrorCode.group_id_not_found, error_message=f"Group {group_id} not found."
            )
            return make(mod.DescribedGroup, **values)
        if not isinstance(group, ConsumerGroup):
            message = f"Group {group_id} is not a consumer group."
            values.update(error_code=ErrorCode.group_id_not_found, error_message=message)
            return make(mod.DescribedGroup, **values)
        async with group.lock:
            values.update(
                group_state=group.state.value,
                group_epoch=group.group_epoch,
                assignment_epoch=group.assignment_epoch,
                assignor_name=group.assignor,
                members=tuple(await _describe_members(ctx, group, mod)),
            )
    except NotCoordinator:
        values["error_code"] = ErrorCode.not_coordinator
    except STORAGE_ERRORS:
        values["error_code"] = GROUPS_UNAVAILABLE
    return make(mod.DescribedGroup, **values)


async def _describe_members(ctx: BrokerContext, group: ConsumerGroup, mod: ModuleType) -> list[Entity]:
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

    out = []
    for m in group.members.values():
        out.append(
            make(
                mod.Member,
                member_id=m.member_id,
                instance_id=m.instance_id,
                rack_id=m.rack_id,
                member_epoch=m.epoch,
                client_id=m.client_id,
                client_host=m.client_host,
                subscribed_topic_names=m.subscribed,
                subscribed_topic_regex=m.regex,
                assignment=await assignment(m.assigned),
                target_assignment=await assignment(m.target),
                member_type=MEMBER_TYPE_CONSUMER,
            )
        )
    return out


async def handle_consumer_group_describe(
    ctx: BrokerContext, body: ConsumerGroupDescribeRequest
) -> ResponsePayload:
    mod = response_module_of(body)
    with_operations = bool(body.include_authorized_operations)
    described = [await _describe_one(ctx, group_id, mod, with_operations) for group_id in body.group_ids]
    return make(mod.ConsumerGroupDescribeResponse, throttle_time=NO_THROTTLE, groups=tuple(described))
