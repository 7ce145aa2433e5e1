"""Metadata: live brokers, topics and partition leaders; creates topics when auto-creation is on."""

from __future__ import annotations

import uuid
from typing import Any

from kio.schema.errors import ErrorCode
from kio.static.protocol import Entity

from ...protocol.messages import has_field, make, sibling
from ...protocol.request_types import MetadataRequest
from ...protocol.response_types import MetadataResponse, response_for
from ...security.acls import CLUSTER_NAME, OPERATIONS_OMITTED, ResourceType
from ...security.acls import AclOperation as Op
from ...storage.cluster import BrokerInfo
from ...storage.topics.config import valid_topic_name
from ...storage.topics.metadata import Topic
from ..context import BrokerContext
from ..metadata.internal_topics import internal_topic, internal_topic_by_id, internal_topics, is_internal
from ..net.endpoints import on_listener
from ..net.session import RequestScope
from .common import (
    LOG_UNAVAILABLE,
    NO_THROTTLE,
    STORAGE_ERRORS,
    all_topics,
    may_create_topic,
    refuse_illegal_name,
    topic_for_write,
)

ZERO_UUID = "00000000-0000-0000-0000-000000000000"


async def handle_metadata(ctx: BrokerContext, body: MetadataRequest, scope: RequestScope) -> MetadataResponse:
    resp = response_for(body)
    version = body.__version__
    try:
        live = await ctx.cluster.live_brokers()
    except STORAGE_ERRORS:
        live = [ctx.me]
    # Only brokers with the request's listener are named, and so only they lead partitions here.
    reachable = on_listener(live, scope) or on_listener([ctx.me], scope)
    brokers = [b for b, _, _ in reachable]
    broker_entries = tuple(
        make(sibling(resp, "MetadataResponseBroker"), node_id=b.broker_id, host=host, port=port, rack=b.rack)
        for b, host, port in reachable
    )
    allow_create = bool(getattr(body, "allow_auto_topic_creation", True))  # v4 made it a choice
    with_operations = bool(getattr(body, "include_topic_authorized_operations", False))
    results = []
    try:
        if body.topics is None or (version == 0 and not body.topics):
            # Kafka's internal topics are listed too (a stored topic of such a name, which older
            # versions could auto-create, is hidden behind them).
            stored = [t for t in await all_topics(ctx) if not is_internal(t.name)]
            every = stored + internal_topics(ctx.topic_defaults)
            # A listing leaves out the topics the principal may not describe.
            shown = await ctx.access.authorizer.allowed_names(
                Op.DESCRIBE, ResourceType.TOPIC, [t.name for t in every], scope
            )
            wanted: list[tuple[str | None, Topic | uuid.UUID | None]] = [
                (t.name, t) for t in every if t.name in shown
            ]
        else:
            wanted = []
            for requested in body.topics:
                name: str | None = requested.name
                topic_id = getattr(requested, "topic_id", None)
                if name is None and topic_id is not None and str(topic_id) != ZERO_UUID:
                    found = internal_topic_by_id(topic_id, ctx.topic_defaults)
                    found = found or await ctx.topics.by_id(topic_id)
                    wanted.append((None if found is None else found.name, found or topic_id))
                    continue
                wanted.append((name, None))
        for name, known in wanted:
            results.append(
                await _topic_entry(ctx, scope, resp, brokers, name, known, allow_create, with_operations)
            )
    except STORAGE_ERRORS:
        results = [
            make(
                sibling(resp, "MetadataResponseTopic"),
                error_code=LOG_UNAVAILABLE if version >= 0 else ErrorCode.leader_not_available,
                name=getattr(t, "name", None),
                topic_id=None,
                is_internal=False,
                partitions=(),
                topic_authorized_operations=OPERATIONS_OMITTED,
            )
            for t in (body.topics or ())
        ]
    return make(
        resp,
        throttle_time=NO_THROTTLE,
        brokers=broker_entries,
        cluster_id=ctx.cluster_id,
        controller_id=ctx.cluster.controller_id(brokers),
        topics=tuple(results),
        cluster_authorized_operations=await _cluster_operations(ctx, scope, body),
        error_code=ErrorCode.none,
    )


async def _cluster_operations(ctx: BrokerContext, scope: RequestScope, body: MetadataRequest) -> int:
    """v8-v10, when asked: the cluster's authorized operations, or none to a principal that may not
    describe the cluster (as Kafka answers)."""
    if not getattr(body, "include_cluster_authorized_operations", False):
        return OPERATIONS_OMITTED
    if not await ctx.access.authorizer.allowed_on_cluster(Op.DESCRIBE, scope):
        return 0
    return await ctx.access.authorizer.operations(ResourceType.CLUSTER, CLUSTER_NAME, scope)


async def _topic_entry(
    ctx: BrokerContext,
    scope: RequestScope,
    resp: type[MetadataResponse],
    brokers: list[BrokerInfo],
    name: str | None,
    found: Topic | uuid.UUID | None,
    allow_create: bool,
    with_operations: bool = False,
) -> Entity:
    """`found` is the topic when listing them all, or what a lookup by id gave (topic, or the id)."""

    def error(code: ErrorCode, topic_id: uuid.UUID | None = None) -> Entity:
        return make(
            sibling(resp, "MetadataResponseTopic"),
            error_code=code,
            name=name,
            topic_id=topic_id,
            is_internal=False,
            partitions=(),
            topic_authorized_operations=OPERATIONS_OMITTED,
        )

    if name is None:
        return error(ErrorCode.unknown_topic_id, found if isinstance(found, uuid.UUID) else None)
    if not await ctx.access.authorizer.allowed(Op.DESCRIBE, ResourceType.TOPIC, name, scope):
        if isinstance(found, Topic):  # asked by id (a listing shows only allowed topics): hide the name
            name = None
            return error(ErrorCode.topic_authorization_failed, found.id)
        return error(ErrorCode.topic_authorization_failed)
    topic = found if isinstance(found, Topic) else internal_topic(name, ctx.topic_defaults)
    if topic is None:
        if not valid_topic_name(name):
            if allow_create and ctx.settings.auto_create_topics:
                refuse_illegal_name(scope, name, "METADATA")
            return error(ErrorCode.invalid_topic_exception)
        topic = await (topic_for_write(ctx, scope, name) if allow_create else ctx.topics.load(name))
        if topic is None:
            if (
                allow_create
                and ctx.settings.auto_create_topics
                and not await may_create_topic(ctx, scope, name)
            ):
                return error(ErrorCode.topic_authorization_failed)
            return error(ErrorCode.unknown_topic_or_partition)
    partitions = []
    for p in range(topic.partitions):
        leader = ctx.cluster.leader_for(brokers, topic, p)
        partitions.append(
            make(
                sibling(resp, "MetadataResponsePartition"),
                error_code=ErrorCode.none,
                partition_index=p,
                leader_id=leader,
                leader_epoch=0,
                replica_nodes=(leader,),
                isr_nodes=(leader,),
                offline_replicas=(),
            )
        )
    values: dict[str, Any] = dict(
        error_code=ErrorCode.none,
        name=topic.name,
        is_internal=is_internal(topic.name),
        partitions=tuple(partitions),
        topic_authorized_operations=(
            await ctx.access.authorizer.operations(ResourceType.TOPIC, topic.name, scope)
            if with_operations
            else OPERATIONS_OMITTED
        ),
    )
    if has_field(sibling(resp, "MetadataResponseTopic"), "topic_id"):
        values["topic_id"] = topic.id
    return make(sibling(resp, "MetadataResponseTopic"), **values)
