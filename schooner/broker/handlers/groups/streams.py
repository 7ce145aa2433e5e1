"""KIP-1071 streams group APIs: StreamsGroupHeartbeat and StreamsGroupDescribe.

The coordinator (coordinators/groups/streams/) does the work; this maps fields and errors, and creates
the internal topics (repartition and changelog) the coordinator says the topology still needs, as
Kafka's broker does, so a Streams application on group.protocol=streams never creates topics itself.
"""

from __future__ import annotations

import datetime
import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kio.schema.errors import ErrorCode
from kio.static.protocol import Entity

from ....coordinators.groups.consumer.group import MemberState
from ....coordinators.groups.coordinator import NotCoordinator
from ....coordinators.groups.modern.coordinator import HeartbeatAnswer, MemberTimeouts, Refusal
from ....coordinators.groups.modern.group import Assignment
from ....coordinators.groups.streams.coordinator import (
    ACCEPTABLE_RECOVERY_LAG,
    TASK_OFFSET_INTERVAL_MS,
    StreamsAnswer,
    StreamsHeartbeat,
)
from ....coordinators.groups.streams.group import StreamsGroup, StreamsMember
from ....coordinators.groups.streams.topology import InternalTopic, Subtopology, Topology
from ....protocol.messages import make, sibling
from ....protocol.request_types import StreamsGroupDescribeRequest, StreamsGroupHeartbeatRequest
from ....protocol.response_types import (
    StreamsGroupDescribeResponse,
    StreamsGroupHeartbeatResponse,
    response_for,
)
from ....security.acls import AclOperation as Op
from ....security.acls import ResourceType
from ....storage.topics.config import InvalidConfig
from ....storage.topics.metadata import TopicExists
from ...context import BrokerContext
from ...net.session import RequestScope
from ..common import GROUPS_UNAVAILABLE, NO_THROTTLE, STORAGE_ERRORS, may_create_topic
from ..topic_configs import check_config
from .describe import describe_refusal, undescribed
from .heartbeat import BrokerTopics

log = logging.getLogger(__name__)

# Kafka's defaults of group.streams.session.timeout.ms and group.streams.heartbeat.interval.ms.
STREAMS_SESSION_MS = 45_000
STREAMS_HEARTBEAT_MS = 5_000


def _topology(body: StreamsGroupHeartbeatRequest) -> Topology | None:
    if body.topology is None:
        return None

    def internal(topics: Iterable[Any]) -> tuple[InternalTopic, ...]:
        return tuple(
            InternalTopic(t.name, int(t.partitions), tuple((c.key, c.value) for c in t.topic_configs))
            for t in topics
        )

    subtopologies = []
    for s in body.topology.subtopologies:
        repartitions = internal(s.repartition_source_topics)
        groups = []
        for g in s.copartition_groups:
            names: list[str] = [s.source_topics[i] for i in g.source_topics if 0 <= i < len(s.source_topics)]
            names += [repartitions[i].name for i in g.repartition_source_topics if 0 <= i < len(repartitions)]
            groups.append(tuple(names))
        subtopologies.append(
            Subtopology(
                s.subtopology_id,
                tuple(s.source_topics),
                tuple(s.source_topic_regex),
                tuple(s.repartition_sink_topics),
                repartitions,
                internal(s.state_changelog_topics),
                tuple(groups),
            )
        )
    return Topology(int(body.topology.epoch), tuple(subtopologies))


def _tasks(tasks: Sequence[Any] | None) -> Assignment | None:
    if tasks is None:
        return None
    return {t.subtopology_id: {int(p) for p in t.partitions} for t in tasks if t.partitions}


def _ms(value: datetime.timedelta) -> int:
    return int(value.total_seconds() * 1000)


def _heartbeat(body: StreamsGroupHeartbeatRequest, scope: RequestScope) -> StreamsHeartbeat:
    endpoint = body.user_endpoint
    return StreamsHeartbeat(
        group_id=body.group_id,
        member_id=body.member_id,
        member_epoch=body.member_epoch,
        instance_id=body.instance_id,
        rack_id=body.rack_id,
        rebalance_ms=_ms(body.rebalance_timeout),
        subscribed=None,
        regex=None,
        assignor=None,
        owned=_tasks(body.active_tasks),
        client_id=scope.client_id,
        client_host=scope.client_host,
        version=9,  # its members commit offsets as KIP-848 members do (OffsetCommit v9+)
        topology=_topology(body),
        process_id=body.process_id,
        endpoint=(endpoint.host, int(endpoint.port)) if endpoint is not None else None,
        client_tags={t.key: t.value for t in body.client_tags} if body.client_tags is not None else None,
        endpoint_epoch=body.endpoint_information_epoch,
        shutdown_application=body.shutdown_application,
    )


async def _refusal(ctx: BrokerContext, scope: RequestScope, hb: StreamsHeartbeat) -> HeartbeatAnswer | None:
    """READ on the group, then DESCRIBE on the topology's source topics (as Kafka checks)."""
    if not await ctx.access.authorizer.allowed(Op.READ, ResourceType.GROUP, hb.group_id, scope):
        message = f"The principal may not READ group {hb.group_id!r}."
        return HeartbeatAnswer(ErrorCode.group_authorization_failed, message, hb.member_id, hb.member_epoch)
    names = {n for s in (hb.topology.subtopologies if hb.topology else ()) for n in s.sources}
    denied = names - await ctx.access.authorizer.allowed_names(Op.DESCRIBE, ResourceType.TOPIC, names, scope)
    if denied:
        message = f"The principal may not DESCRIBE the source topics {sorted(denied)}."
        return HeartbeatAnswer(ErrorCode.topic_authorization_failed, message, hb.member_id, hb.member_epoch)
    return None


async def _create_internal(ctx: BrokerContext, scope: RequestScope, topics: Iterable[InternalTopic]) -> None:
    """The repartition and changelog topics the topology needs, made as CreateTopics would make them."""
    for t in topics:
        if not await may_create_topic(ctx, scope, t.name):
            log.warning("streams group: principal may not create internal topic %s", t.name)
            continue
        try:
            for name, value in t.configs:
                check_config(name, value)
            await ctx.topics.create(t.name, t.partitions, dict(t.configs))
            log.info("streams group: created internal topic %s (%d partitions)", t.name, t.partitions)
        except TopicExists:
            pass
        except InvalidConfig as exc:
            log.warning("streams group: internal topic %s not created: %s", t.name, exc)


async def handle_streams_group_heartbeat(
    ctx: BrokerContext, body: StreamsGroupHeartbeatRequest, scope: RequestScope
) -> StreamsGroupHeartbeatResponse:
    resp = response_for(body)
    hb = _heartbeat(body, scope)
    timeouts = MemberTimeouts(STREAMS_SESSION_MS, STREAMS_HEARTBEAT_MS)
    refusal = await _refusal(ctx, scope, hb)
    got = StreamsAnswer(refusal) if refusal is not None else None
    code = ErrorCode.none
    try:
        if got is None:
            got = await ctx.groups.streams.heartbeat(hb, BrokerTopics(ctx), timeouts)
        code = got.answer.error
        if got.to_create:
            await _create_internal(ctx, scope, got.to_create)
    except NotCoordinator:
        code = ErrorCode.not_coordinator
    except STORAGE_ERRORS:
        code = GROUPS_UNAVAILABLE
    answer = got.answer if got is not None else None
    tasks = None if answer is None or answer.assignment is None else _task_ids(resp, answer.assignment)
    return make(
        resp,
        throttle_time=NO_THROTTLE,
        error_code=code,
        error_message=answer.message if answer else None,
        member_id=(answer.member_id if answer else None) or body.member_id,
        member_epoch=answer.member_epoch if answer else body.member_epoch,
        heartbeat_interval=datetime.timedelta(milliseconds=timeouts.heartbeat_ms),
        acceptable_recovery_lag=ACCEPTABLE_RECOVERY_LAG,
        task_offset_interval=datetime.timedelta(milliseconds=TASK_OFFSET_INTERVAL_MS),
        status=tuple(
            make(sibling(resp, "Status"), status_code=int(s), status_detail=detail)
            for s, detail in (got.statuses if got is not None and code == ErrorCode.none else ())
        )
        or None,
        active_tasks=tasks,
        standby_tasks=() if tasks is not None else None,
        warmup_tasks=() if tasks is not None else None,
        endpoint_information_epoch=got.endpoint_epoch if got is not None else 0,
        partitions_by_user_endpoint=_endpoints(resp, got.endpoints)
        if got and got.endpoints is not None
        else None,
    )


def _task_ids(resp: type[Any], tasks: Assignment) -> tuple[Entity, ...]:
    return tuple(
        make(sibling(resp, "TaskIds"), subtopology_id=s, partitions=tuple(sorted(ps)))
        for s, ps in sorted(tasks.items())
        if ps
    )


def _endpoints(
    resp: type[Any], endpoints: Mapping[tuple[str, int], Mapping[str, set[int]]]
) -> tuple[Entity, ...]:
    return tuple(
        make(
            sibling(resp, "EndpointToPartitions"),
            user_endpoint=make(sibling(resp, "Endpoint"), host=host, port=port),
            active_partitions=tuple(
                make(sibling(resp, "TopicPartition"), topic=t, partitions=tuple(sorted(ps)))
                for t, ps in sorted(held.items())
            ),
            standby_partitions=(),
        )
        for (host, port), held in sorted(endpoints.items())
    )


# -- StreamsGroupDescribe ----------------------------------------------------------------------------
async def handle_streams_group_describe(
    ctx: BrokerContext, body: StreamsGroupDescribeRequest, scope: RequestScope
) -> StreamsGroupDescribeResponse:
    resp = response_for(body)
    with_operations = bool(body.include_authorized_operations)
    groups = [await _describe(ctx, scope, resp, group_id, with_operations) for group_id in body.group_ids]
    return make(resp, throttle_time=NO_THROTTLE, groups=tuple(groups))


async def _describe(
    ctx: BrokerContext,
    scope: RequestScope,
    resp: type[StreamsGroupDescribeResponse],
    group_id: str,
    with_operations: bool,
) -> Entity:
    values = undescribed(group_id, topology=None)
    del values["assignor_name"]  # the one field a streams group's description lacks
    if await describe_refusal(ctx, scope, group_id, values, with_operations):
        return make(sibling(resp, "DescribedGroup"), **values)
    try:
        found = await ctx.groups.streams.find(group_id)
        if isinstance(found, Refusal):
            values.update(error_code=found.error, error_message=found.message)
        else:
            assert isinstance(found, StreamsGroup)
            async with found.lock:
                values.update(
                    group_state=found.state.value,
                    group_epoch=found.group_epoch,
                    assignment_epoch=found.assignment_epoch,
                    topology=_described_topology(resp, found),
                    members=tuple(_member(resp, m) for m in found.members.values()),
                )
    except NotCoordinator:
        values["error_code"] = ErrorCode.not_coordinator
    except STORAGE_ERRORS:
        values["error_code"] = GROUPS_UNAVAILABLE
    return make(sibling(resp, "DescribedGroup"), **values)


def _described_topology(resp: type[Any], group: StreamsGroup) -> Entity | None:
    if group.topology is None:
        return None
    configured = group.configured

    def infos(topics: Iterable[InternalTopic], default: int) -> tuple[Entity, ...]:
        return tuple(
            make(
                sibling(resp, "TopicInfo"),
                name=t.name,
                partitions=t.partitions or default,
                replication_factor=0,
                topic_configs=tuple(make(sibling(resp, "KeyValue"), key=k, value=v) for k, v in t.configs),
            )
            for t in topics
        )

    return make(
        sibling(resp, "Topology"),
        epoch=group.topology.epoch,
        subtopologies=tuple(
            make(
                sibling(resp, "Subtopology"),
                subtopology_id=s.id,
                source_topics=s.sources,
                repartition_sink_topics=s.repartition_sinks,
                state_changelog_topics=infos(s.changelogs, configured.tasks.get(s.id, 0)),
                repartition_source_topics=infos(s.repartition_sources, 0),
            )
            for s in group.topology.subtopologies
        ),
    )


def _member(resp: type[Any], m: Any) -> Entity:
    assert isinstance(m, StreamsMember)

    def assignment(active: Assignment) -> Entity:
        return make(
            sibling(resp, "Assignment"),
            active_tasks=_task_ids(resp, active),
            standby_tasks=(),
            warmup_tasks=(),
        )

    endpoint = m.endpoint
    return make(
        sibling(resp, "Member"),
        member_id=m.member_id,
        member_epoch=m.epoch,
        instance_id=m.instance_id,
        rack_id=m.rack_id,
        client_id=m.client_id,
        client_host=m.client_host,
        topology_epoch=m.topology_epoch,
        process_id=m.process_id,
        user_endpoint=make(sibling(resp, "Endpoint"), host=endpoint[0], port=endpoint[1])
        if endpoint
        else None,
        client_tags=tuple(
            make(sibling(resp, "KeyValue"), key=k, value=v) for k, v in sorted(m.client_tags.items())
        ),
        task_offsets=(),
        task_end_offsets=(),
        assignment=assignment(
            {**m.assigned, **{s: m.assigned.get(s, set()) | ps for s, ps in m.revoking.items()}}
            if m.state == MemberState.UNREVOKED
            else m.assigned
        ),
        target_assignment=assignment(m.target),
        is_classic=False,
    )
