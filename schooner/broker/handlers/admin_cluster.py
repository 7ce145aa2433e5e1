"""DescribeLogDirs, AlterReplicaLogDirs, ElectLeaders, Alter/ListPartitionReassignments and UpdateFeatures,
answered as Kafka answers them for a cluster where every partition has one replica.

That replica is on the broker Metadata names as the partition's leader (ctx.cluster.leader_for), and Redis
holds its data. So each broker has one log dir, log_dir() = /redis/<keyspace>, holding the partitions
it leads; no leader election is ever needed; a reassignment to one live broker takes effect at once
(the topic hash records it and Metadata follows), so none is ever in progress; and there are no
features to finalize.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Protocol

from kio.schema.errors import ErrorCode
from kio.static.protocol import Entity

from ...protocol.messages import make, optional_sibling, sibling
from ...protocol.request_types import (
    AlterPartitionReassignmentsRequest,
    AlterReplicaLogDirsRequest,
    DescribeLogDirsRequest,
    ElectLeadersRequest,
    ListPartitionReassignmentsRequest,
    UpdateFeaturesRequest,
)
from ...protocol.response_types import (
    AlterPartitionReassignmentsResponse,
    AlterReplicaLogDirsResponse,
    DescribeLogDirsResponse,
    ElectLeadersResponse,
    ListPartitionReassignmentsResponse,
    UpdateFeaturesResponse,
    response_for,
)
from ...security.acls import AclOperation
from ...storage.cluster import BrokerInfo
from ...storage.topic_partition import TopicPartition
from ...storage.topics.config import valid_topic_name
from ...storage.topics.metadata import Topic, UnknownTopic
from ..context import BrokerContext
from ..net.session import RequestScope
from .common import ADMIN_UNAVAILABLE, LOG_UNAVAILABLE, NO_THROTTLE, STORAGE_ERRORS, all_topics

# The one log dir of every broker: Redis, under the deployment's keyspace. A fixed name rather than
# the Redis URL, which may carry a password and changes when Redis moves.
LOG_DIR_ROOT = "/redis/"

PREFERRED, UNCLEAN = 0, 1  # ElectLeaders election types
CLUSTER_DENIED = ErrorCode.cluster_authorization_failed  # every API here needs the cluster

Outcome = tuple[ErrorCode, str | None]
OK: Outcome = (ErrorCode.none, None)


def log_dir(ctx: BrokerContext) -> str:
    return LOG_DIR_ROOT + ctx.ks.prefix


class _NamedPartitions(Protocol):
    """A request's topic and partition indexes (DescribeLogDirs, ElectLeaders)."""

    @property
    def topic(self) -> str: ...
    @property
    def partitions(self) -> Sequence[int]: ...


async def _topic(ctx: BrokerContext, name: str) -> Topic | None:
    return await ctx.topics.load(name) if valid_topic_name(name) else None


def _grouped(named: Iterable[_NamedPartitions]) -> dict[str, list[int]]:
    """Partitions by topic, in request order, each once (Kafka reads them into a set)."""
    wanted: dict[str, list[int]] = {}
    for entry in named:
        indexes = wanted.setdefault(entry.topic, [])
        indexes.extend(p for p in entry.partitions if p not in indexes)
    return wanted


# -- DescribeLogDirs ------------------------------------------------------------------------------


async def handle_describe_log_dirs(
    ctx: BrokerContext, body: DescribeLogDirsRequest, scope: RequestScope
) -> DescribeLogDirsResponse:
    resp = response_for(body)
    if not await ctx.access.authorizer.allowed_on_cluster(AclOperation.DESCRIBE, scope):
        # Kafka answers no log dirs; v3+ says why
        return make(resp, throttle_time=NO_THROTTLE, error_code=CLUSTER_DENIED, results=())
    try:
        result = await _describe_log_dir(ctx, resp, body.topics)
    except STORAGE_ERRORS:  # Redis down: the log dir is offline, which Kafka reports this way
        result = make(
            sibling(resp, "DescribeLogDirsResult"),
            error_code=LOG_UNAVAILABLE,
            log_dir=log_dir(ctx),
            topics=(),
            total_bytes=-1,
            usable_bytes=-1,
            is_cordoned=False,
        )
    return make(resp, throttle_time=NO_THROTTLE, error_code=ErrorCode.none, results=(result,))


async def _describe_log_dir(
    ctx: BrokerContext, resp: type[DescribeLogDirsResponse], requested: Sequence[_NamedPartitions] | None
) -> Entity:
    """The partitions this broker leads, of those requested (null: all); unknown ones are left out."""
    brokers = await ctx.cluster.live_brokers()
    wanted: list[tuple[Topic, Iterable[int]]] = []
    if requested is None:
        wanted = [(t, range(t.partitions)) for t in await all_topics(ctx)]
    else:
        for name, indexes in _grouped(requested).items():
            topic = await _topic(ctx, name)
            if topic is not None:
                wanted.append((topic, sorted(p for p in indexes if 0 <= p < topic.partitions)))
    me = ctx.me.broker_id
    mine = [
        TopicPartition(t.name, p)
        for t, indexes in wanted
        for p in indexes
        if ctx.cluster.leader_for(brokers, t, p) == me
    ]
    sizes = await ctx.store.partition_sizes(mine)
    memory = await ctx.store.memory()
    by_topic: dict[str, list[Entity]] = {}
    for tp in mine:
        entry = make(
            sibling(resp, "DescribeLogDirsPartition"),
            partition_index=tp.partition,
            partition_size=sizes[tp],
            offset_lag=0,
            is_future_key=False,
        )
        by_topic.setdefault(tp.topic, []).append(entry)
    return make(
        sibling(resp, "DescribeLogDirsResult"),
        error_code=ErrorCode.none,
        log_dir=log_dir(ctx),
        topics=tuple(
            make(sibling(resp, "DescribeLogDirsTopic"), name=name, partitions=tuple(entries))
            for name, entries in by_topic.items()
        ),
        total_bytes=memory.total,
        usable_bytes=memory.usable,
        is_cordoned=False,
    )


# -- AlterReplicaLogDirs --------------------------------------------------------------------------


async def handle_alter_replica_log_dirs(
    ctx: BrokerContext, body: AlterReplicaLogDirsRequest, scope: RequestScope
) -> AlterReplicaLogDirsResponse:
    """Moving a replica into the one log dir it is already in does nothing, and succeeds."""
    resp = response_for(body)
    allowed = await ctx.access.authorizer.allowed_on_cluster(AclOperation.ALTER, scope)
    results: dict[str, list[Entity]] = {}
    for target in body.dirs:
        for requested in target.topics:
            codes = (
                await _log_dir_moves(ctx, target.path, requested.name, requested.partitions)
                if allowed
                else [CLUSTER_DENIED] * len(requested.partitions)
            )
            results.setdefault(requested.name, []).extend(
                make(sibling(resp, "AlterReplicaLogDirPartitionResult"), partition_index=p, error_code=code)
                for p, code in zip(requested.partitions, codes, strict=True)
            )
    return make(
        resp,
        throttle_time=NO_THROTTLE,
        results=tuple(
            make(
                sibling(resp, "AlterReplicaLogDirTopicResult"), topic_name=name, partitions=tuple(partitions)
            )
            for name, partitions in results.items()
        ),
    )


async def _log_dir_moves(
    ctx: BrokerContext, path: str, name: str, partitions: Sequence[int]
) -> list[ErrorCode]:
    if path != log_dir(ctx):  # Kafka checks the directory first
        return [ErrorCode.log_dir_not_found] * len(partitions)
    try:
        topic = await _topic(ctx, name)
        brokers = await ctx.cluster.live_brokers()
    except STORAGE_ERRORS:
        return [LOG_UNAVAILABLE] * len(partitions)
    codes = []
    for p in partitions:
        if topic is None or not 0 <= p < topic.partitions:
            codes.append(ErrorCode.unknown_topic_or_partition)
        elif ctx.cluster.leader_for(brokers, topic, p) != ctx.me.broker_id:
            codes.append(ErrorCode.replica_not_available)  # its replica is on another broker
        else:
            codes.append(ErrorCode.none)
    return codes


# -- ElectLeaders ---------------------------------------------------------------------------------


async def handle_elect_leaders(
    ctx: BrokerContext, body: ElectLeadersRequest, scope: RequestScope
) -> ElectLeadersResponse:
    resp = response_for(body)
    election = getattr(body, "election_type", PREFERRED)  # v1 added the choice
    code = ErrorCode.none
    results: tuple[Entity, ...] = ()
    if not await ctx.access.authorizer.allowed_on_cluster(AclOperation.ALTER, scope):
        code = CLUSTER_DENIED  # v1+; v0 hears it per partition
        denied = (CLUSTER_DENIED, "The principal may not ALTER the cluster.")
        results = tuple(
            _election_result(resp, name, [(p, denied) for p in indexes])
            for name, indexes in _grouped(body.topic_partitions or ()).items()
        )
    elif election not in (PREFERRED, UNCLEAN):
        code = ErrorCode.invalid_request
    else:
        try:
            results = await _elections(ctx, resp, election, body.topic_partitions)
        except STORAGE_ERRORS:
            code = ADMIN_UNAVAILABLE  # v1+; v0 hears it per partition
            unavailable = (ADMIN_UNAVAILABLE, "Redis is unavailable.")
            results = tuple(
                _election_result(resp, name, [(p, unavailable) for p in indexes])
                for name, indexes in _grouped(body.topic_partitions or ()).items()
            )
    return make(resp, throttle_time=NO_THROTTLE, error_code=code, replica_election_results=results)


async def _elections(
    ctx: BrokerContext,
    resp: type[ElectLeadersResponse],
    election: int,
    requested: Sequence[_NamedPartitions] | None,
) -> tuple[Entity, ...]:
    brokers = await ctx.cluster.live_brokers()
    results = []
    if requested is None:
        # All partitions: as Kafka, only those an election changed or failed on are listed.
        for t in await all_topics(ctx):
            outcomes = [(p, _election(brokers, t, p, election)) for p in range(t.partitions)]
            needed = [o for o in outcomes if o[1][0] != ErrorCode.election_not_needed]
            results.append(_election_result(resp, t.name, needed))
        return tuple(results)
    for name, indexes in _grouped(requested).items():
        topic = await _topic(ctx, name)
        results.append(
            _election_result(resp, name, [(p, _election(brokers, topic, p, election)) for p in indexes])
        )
    return tuple(results)


def _election_result(
    resp: type[ElectLeadersResponse], topic: str, outcomes: Iterable[tuple[int, Outcome]]
) -> Entity:
    entries = tuple(
        make(sibling(resp, "PartitionResult"), partition_id=p, error_code=code, error_message=message)
        for p, (code, message) in outcomes
    )
    return make(sibling(resp, "ReplicaElectionResult"), topic=topic, partition_result=entries)


def _election(brokers: list[BrokerInfo], topic: Topic | None, p: int, election: int) -> Outcome:
    if topic is None or not 0 <= p < topic.partitions:
        return ErrorCode.unknown_topic_or_partition, "The partition does not exist."
    placed = topic.leaders.get(p)
    if election == PREFERRED and placed is not None and all(b.broker_id != placed for b in brokers):
        # Served meanwhile by another broker; Metadata moves it back as soon as its broker is live.
        return (
            ErrorCode.preferred_leader_not_available,
            f"Broker {placed}, its preferred leader, is not live.",
        )
    return ErrorCode.election_not_needed, "The partition's one replica is already its leader."


# -- AlterPartitionReassignments, ListPartitionReassignments -----------------------------------------


class _Reassignment(Protocol):
    @property
    def partition_index(self) -> int: ...
    @property
    def replicas(self) -> Sequence[int] | None: ...


async def handle_alter_partition_reassignments(
    ctx: BrokerContext, body: AlterPartitionReassignmentsRequest, scope: RequestScope
) -> AlterPartitionReassignmentsResponse:
    """Accepting a reassignment to one live broker records that broker in the topic hash: Metadata
    then names it as the partition's leader, and clients move their traffic to it. Nothing has to
    be copied (every broker reads the same Redis), so the move is complete when this answers."""
    resp = response_for(body)
    allow_new_factor = bool(getattr(body, "allow_replication_factor_change", True))  # v1
    top: Outcome = OK
    if not await ctx.access.authorizer.allowed_on_cluster(AclOperation.ALTER, scope):
        top = (CLUSTER_DENIED, "The principal may not ALTER the cluster.")
    responses = []
    for requested in body.topics:
        partitions: Sequence[_Reassignment] = requested.partitions
        try:
            outcomes = (
                await _reassign_topic(ctx, requested.name, partitions, allow_new_factor)
                if top == OK
                else [top] * len(partitions)
            )
        except STORAGE_ERRORS as exc:
            outcomes = [(ADMIN_UNAVAILABLE, f"Redis is unavailable: {exc}")] * len(partitions)
        responses.append(
            make(
                sibling(resp, "ReassignableTopicResponse"),
                name=requested.name,
                partitions=tuple(
                    make(
                        sibling(resp, "ReassignablePartitionResponse"),
                        partition_index=r.partition_index,
                        error_code=code,
                        error_message=message,
                    )
                    for r, (code, message) in zip(partitions, outcomes, strict=True)
                ),
            )
        )
    return make(
        resp,
        throttle_time=NO_THROTTLE,
        allow_replication_factor_change=allow_new_factor,
        error_code=top[0],
        error_message=top[1],
        responses=tuple(responses),
    )


async def _reassign_topic(
    ctx: BrokerContext, name: str, requested: Sequence[_Reassignment], allow_new_factor: bool
) -> list[Outcome]:
    topic = await ctx.topics.fresh(name) if valid_topic_name(name) else None
    live = {b.broker_id for b in await ctx.cluster.live_brokers()}
    outcomes = [_reassignment(topic, r, live, allow_new_factor) for r in requested]
    placed = {
        r.partition_index: r.replicas[0]
        for r, o in zip(requested, outcomes, strict=True)
        if o == OK and r.replicas
    }
    if placed:
        try:
            await ctx.topics.alter(name, leaders=placed)
        except UnknownTopic:
            return [(ErrorCode.unknown_topic_or_partition, f"Topic '{name}' does not exist.")] * len(
                requested
            )
    return outcomes


def _reassignment(
    topic: Topic | None, requested: _Reassignment, live: set[int], allow_new_factor: bool
) -> Outcome:
    p, replicas = requested.partition_index, requested.replicas
    if topic is None or not 0 <= p < topic.partitions:
        return ErrorCode.unknown_topic_or_partition, "The partition does not exist."
    if replicas is None:
        return ErrorCode.no_reassignment_in_progress, f"No reassignment of partition {p} is in progress."
    if not replicas:
        return ErrorCode.invalid_replica_assignment, "The replica list is empty."
    if len(set(replicas)) != len(replicas):
        return ErrorCode.invalid_replica_assignment, "The replica list names a broker more than once."
    if len(replicas) > 1:
        if not allow_new_factor:
            message = f"The replication factor is 1; {len(replicas)} replicas would change it."
            return ErrorCode.invalid_replication_factor, message
        message = f"Schooner partitions have one replica (Redis keeps the data); {len(replicas)} were given."
        return ErrorCode.invalid_replica_assignment, message
    if replicas[0] not in live:
        return ErrorCode.invalid_replica_assignment, f"Broker {replicas[0]} is not a live broker."
    return OK


async def handle_list_partition_reassignments(
    ctx: BrokerContext, body: ListPartitionReassignmentsRequest, scope: RequestScope
) -> ListPartitionReassignmentsResponse:
    """Reassignments complete when they are accepted, so none is ever ongoing."""
    resp = response_for(body)
    allowed = await ctx.access.authorizer.allowed_on_cluster(AclOperation.DESCRIBE, scope)
    return make(
        resp,
        throttle_time=NO_THROTTLE,
        error_code=ErrorCode.none if allowed else CLUSTER_DENIED,
        error_message=None if allowed else "The principal may not DESCRIBE the cluster.",
        topics=(),
    )


# -- UpdateFeatures -------------------------------------------------------------------------------

UPGRADE_TYPES = (1, 2, 3)  # upgrade, safe downgrade, unsafe downgrade


async def handle_update_features(
    ctx: BrokerContext, body: UpdateFeaturesRequest, scope: RequestScope
) -> UpdateFeaturesResponse:
    """The features ApiVersions lists stay at their levels, so every update fails with
    INVALID_UPDATE_VERSION; validate_only gives the same answers."""
    resp = response_for(body)
    counts = Counter(u.feature for u in body.feature_updates)
    top: Outcome = OK
    twice = sorted(name for name, n in counts.items() if n > 1)
    outcomes: list[tuple[str, Outcome]] = []
    if not await ctx.access.authorizer.allowed_on_cluster(AclOperation.ALTER, scope):
        top = CLUSTER_DENIED, "The principal may not ALTER the cluster."
        outcomes = [(u.feature, top) for u in body.feature_updates]
    elif twice:
        top = ErrorCode.invalid_request, f"Feature {twice[0]!r} is updated more than once."
    else:
        for update in body.feature_updates:
            upgrade_type = getattr(update, "upgrade_type", 1)  # v1 replaced allow_downgrade with it
            if upgrade_type not in UPGRADE_TYPES:
                outcome: Outcome = ErrorCode.invalid_request, f"Unknown upgrade type {upgrade_type}."
            else:
                outcome = (
                    ErrorCode.invalid_update_version,
                    f"The broker does not support feature {update.feature!r}.",
                )
            outcomes.append((update.feature, outcome))
    result_cls = optional_sibling(resp, "UpdatableFeatureResult")
    if result_cls is None and outcomes:  # v2 has no results: it answers with the first failure
        top = outcomes[0][1]
    return make(
        resp,
        throttle_time=NO_THROTTLE,
        error_code=top[0],
        error_message=top[1],
        results=tuple(
            make(result_cls, feature=name, error_code=code, error_message=message)
            for name, (code, message) in outcomes
        )
        if result_cls is not None
        else (),
    )
