"""Metadata: live brokers, topics and partition leaders; creates topics when auto-creation is on."""

from __future__ import annotations

import uuid
from types import ModuleType
from typing import Any

from kio.schema.errors import ErrorCode
from kio.static.protocol import Entity, ResponsePayload

from ...protocol.messages import has_field, make, response_module_of
from ...protocol.request_types import MetadataRequest
from ...storage.cluster import BrokerInfo
from ...storage.topics.config import valid_topic_name
from ...storage.topics.metadata import Topic
from ..context import BrokerContext
from .common import LOG_UNAVAILABLE, NO_THROTTLE, STORAGE_ERRORS, all_topics, topic_for_write
from .endpoints import on_listener

ZERO_UUID = "00000000-0000-0000-0000-000000000000"


async def handle_metadata(ctx: BrokerContext, body: MetadataRequest) -> ResponsePayload:
    mod = response_module_of(body)
    version = body.__version__
    try:
        live = await ctx.live_brokers()
    except STORAGE_ERRORS:
        live = [ctx.me]
    # Only brokers with the request's listener are named, and so only they lead partitions here.
    reachable = on_listener(live) or on_listener([ctx.me])
    brokers = [b for b, _, _ in reachable]
    broker_entries = tuple(
        make(mod.MetadataResponseBroker, node_id=b.broker_id, host=host, port=port, rack=b.rack)
        for b, host, port in reachable
    )
    allow_create = bool(getattr(body, "allow_auto_topic_creation", True))  # v4 made it a choice
    results = []
    try:
        if body.topics is None or (version == 0 and not body.topics):
            wanted: list[tuple[str | None, Topic | uuid.UUID | None]] = [
                (t.name, t) for t in await all_topics(ctx)
            ]
        else:
            wanted = []
            for requested in body.topics:
                name: str | None = requested.name
                topic_id = getattr(requested, "topic_id", None)
                if name is None and topic_id is not None and str(topic_id) != ZERO_UUID:
                    found = await ctx.topic_by_id(topic_id)
                    wanted.append((None if found is None else found.name, found or topic_id))
                    continue
                wanted.append((name, None))
        for name, known in wanted:
            results.append(await _topic_entry(ctx, mod, brokers, name, known, allow_create))
    except STORAGE_ERRORS:
        results = [
            make(
                mod.MetadataResponseTopic,
                error_code=LOG_UNAVAILABLE if version >= 0 else ErrorCode.leader_not_available,
                name=getattr(t, "name", None),
                topic_id=None,
                is_internal=False,
                partitions=(),
                topic_authorized_operations=-2147483648,
            )
            for t in (body.topics or ())
        ]
    return make(
        mod.MetadataResponse,
        throttle_time=NO_THROTTLE,
        brokers=broker_entries,
        cluster_id=ctx.cluster_id,
        controller_id=ctx.controller_id(brokers),
        topics=tuple(results),
        cluster_authorized_operations=-2147483648,
        error_code=ErrorCode.none,
    )


async def _topic_entry(
    ctx: BrokerContext,
    mod: ModuleType,
    brokers: list[BrokerInfo],
    name: str | None,
    found: Topic | uuid.UUID | None,
    allow_create: bool,
) -> Entity:
    """`found` is the topic when listing them all, or what a lookup by id gave (topic, or the id)."""

    def error(code: ErrorCode, topic_id: uuid.UUID | None = None) -> Entity:
        return make(
            mod.MetadataResponseTopic,
            error_code=code,
            name=name,
            topic_id=topic_id,
            is_internal=False,
            partitions=(),
            topic_authorized_operations=-2147483648,
        )

    if name is None:
        return error(ErrorCode.unknown_topic_id, found if isinstance(found, uuid.UUID) else None)
    topic = found if isinstance(found, Topic) else None
    if topic is None:
        if not valid_topic_name(name):
            return error(ErrorCode.invalid_topic_exception)
        topic = await (topic_for_write(ctx, name) if allow_create else ctx.topic(name))
        if topic is None:
            return error(ErrorCode.unknown_topic_or_partition)
    partitions = []
    for p in range(topic.partitions):
        leader = ctx.leader_for(brokers, topic, p)
        partitions.append(
            make(
                mod.MetadataResponsePartition,
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
        is_internal=False,
        partitions=tuple(partitions),
        topic_authorized_operations=-2147483648,
    )
    if has_field(mod.MetadataResponseTopic, "topic_id"):
        values["topic_id"] = topic.id
    return make(mod.MetadataResponseTopic, **values)
