"""CreateTopics, DeleteTopics and CreatePartitions."""

from __future__ import annotations

import logging
import uuid
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Protocol

from kio.schema.errors import ErrorCode
from kio.static.protocol import Entity

from ...protocol.messages import make, optional_sibling, sibling
from ...protocol.request_types import CreatePartitionsRequest, CreateTopicsRequest, DeleteTopicsRequest
from ...protocol.response_types import (
    CreatePartitionsResponse,
    CreateTopicsResponse,
    DeleteTopicsResponse,
    response_for,
)
from ...security.acls import AclOperation, ResourceType
from ...storage.topics.config import InvalidConfig, check_together, effective, valid_topic_name
from ...storage.topics.metadata import PartitionsNotIncreasing, TopicExists, UnknownTopic, fixed_configs
from ..context import BrokerContext
from ..metadata.internal_topics import READ_ONLY, internal_topic_by_id, is_internal
from ..net.refusals import refused
from ..net.session import RequestScope
from .common import ADMIN_UNAVAILABLE, NO_THROTTLE, STORAGE_ERRORS, may_create_topic
from .topic_configs import check_config, topic_config_values

log = logging.getLogger(__name__)

# Guards the broker against absurd counts (each partition gets a stamped state hash); Kafka has no such cap.
MAX_PARTITIONS = 100_000
# Redis keeps the data, so every partition reports a single replica.
REPLICATION_FACTOR = 1

Outcome = tuple[ErrorCode, str | None]
DENIED = "Authorization failed."  # Kafka's message for a topic the principal may not act on


# The nested request entities the helpers read, as every served version has them.
class _Assignment(Protocol):
    """CreatePartitionsAssignment, and the base of CreatableReplicaAssignment."""

    @property
    def broker_ids(self) -> Sequence[int]: ...


class _CreatableAssignment(_Assignment, Protocol):
    @property
    def partition_index(self) -> int: ...


class _Config(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def value(self) -> str | None: ...


class _CreatableTopic(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def num_partitions(self) -> int: ...
    @property
    def replication_factor(self) -> int: ...
    @property
    def assignments(self) -> Sequence[_CreatableAssignment]: ...
    @property
    def configs(self) -> Sequence[_Config]: ...


class _PartitionsTopic(Protocol):
    """CreatePartitionsTopic."""

    @property
    def name(self) -> str: ...
    @property
    def count(self) -> int: ...
    @property
    def assignments(self) -> Sequence[_Assignment] | None: ...


def _storage_failure(exc: BaseException) -> Outcome:
    return ADMIN_UNAVAILABLE, f"Redis is unavailable: {exc}"


async def _assignment_error(
    ctx: BrokerContext, replica_lists: Sequence[Sequence[int]], first: int = 0, one_replica: bool = False
) -> str | None:
    """Kafka's checks of a manual assignment: replicas are given, distinct, and registered brokers.
    With one_replica (CreatePartitions), a list must name one broker: Schooner partitions have one
    replica. `first` is the index of the first partition assigned, for the messages."""
    live = {b.broker_id for b in await ctx.cluster.live_brokers()}
    for index, broker_ids in enumerate(replica_lists, start=first):
        if not broker_ids:
            return f"The manual partition assignment of partition {index} has an empty replica list."
        if len(set(broker_ids)) != len(broker_ids):
            return f"The manual partition assignment of partition {index} names a broker more than once."
        if one_replica and len(broker_ids) > 1:
            return (
                f"Schooner partitions have one replica (Redis keeps the data), but the assignment of "
                f"partition {index} names {len(broker_ids)} brokers."
            )
        unknown = [b for b in broker_ids if b not in live]
        if unknown:
            return f"The manual partition assignment names broker {unknown[0]}, which is not registered."
    return None


def _placed(first: int, replica_lists: Sequence[Sequence[int]]) -> dict[int, int]:
    """Partition -> the broker a manual assignment puts it on: its first (Kafka's preferred) replica."""
    return {first + i: broker_ids[0] for i, broker_ids in enumerate(replica_lists)}


# -- CreateTopics ---------------------------------------------------------------------------------


async def handle_create_topics(
    ctx: BrokerContext, body: CreateTopicsRequest, scope: RequestScope
) -> CreateTopicsResponse:
    resp = response_for(body)
    counts = Counter(t.name for t in body.topics)
    reported: set[str] = set()
    results = []
    for requested in body.topics:
        if counts[requested.name] > 1:
            if requested.name not in reported:
                reported.add(requested.name)
                error = _create_error(
                    scope, resp, requested.name, ErrorCode.invalid_request, "Duplicate topic name."
                )
                results.append(error)
            continue
        if not await may_create_topic(ctx, scope, requested.name):
            results.append(
                _create_error(scope, resp, requested.name, ErrorCode.topic_authorization_failed, DENIED)
            )
            continue
        try:
            results.append(await _create_one(ctx, scope, resp, requested, bool(body.validate_only)))
        except STORAGE_ERRORS as exc:
            results.append(_create_error(scope, resp, requested.name, *_storage_failure(exc)))
    return make(resp, throttle_time=NO_THROTTLE, topics=tuple(results))


# Outcomes a client understands by itself: success, an existing topic (often what it hoped for), Redis
# out of reach (logged where the broker sees it) and a denial (logged by the authorizer).
_NOT_REFUSALS = frozenset(
    {ErrorCode.none, ErrorCode.topic_already_exists, ADMIN_UNAVAILABLE, ErrorCode.topic_authorization_failed}
)


def _log_refusal(scope: RequestScope, name: str, code: ErrorCode, message: str | None) -> None:
    reason = f"topic {name!r} not created: {code.name.upper()}: {message or 'no message'}"
    refused(log, "CREATE_TOPICS", reason, topic=name, error=code.name.upper(), scope=scope)


def _create_error(
    scope: RequestScope, resp: type[CreateTopicsResponse], name: str, code: ErrorCode, message: str | None
) -> Entity:
    if code not in _NOT_REFUSALS:
        _log_refusal(scope, name, code, message)
    return make(
        sibling(resp, "CreatableTopicResult"),
        name=name,
        topic_id=None,
        error_code=code,
        error_message=message,
        topic_config_error_code=0,
        num_partitions=-1,
        replication_factor=-1,
        configs=(),
    )


async def _create_one(
    ctx: BrokerContext,
    scope: RequestScope,
    resp: type[CreateTopicsResponse],
    requested: _CreatableTopic,
    validate_only: bool,
) -> Entity:
    name = requested.name
    if not valid_topic_name(name):
        illegal = f"Topic name {name!r} is illegal: use 1 to 249 of [a-zA-Z0-9._-], and not '.' or '..'"
        return _create_error(scope, resp, name, ErrorCode.invalid_topic_exception, illegal)
    if is_internal(name):  # it exists, as in Kafka, though Redis holds no such topic
        return _create_error(
            scope, resp, name, ErrorCode.topic_already_exists, f"Topic '{name}' is an {READ_ONLY}."
        )
    code, message, partitions = await _partition_count(ctx, requested)
    if code != ErrorCode.none:
        return _create_error(scope, resp, name, code, message)
    ordered = sorted(requested.assignments, key=lambda a: a.partition_index)  # checked: 0..n-1
    leaders = _placed(0, [a.broker_ids for a in ordered])
    overrides: dict[str, str] = {}
    for config in requested.configs:
        try:
            check_config(config.name, config.value)
        except InvalidConfig as exc:
            return _create_error(scope, resp, name, ErrorCode.invalid_config, str(exc))
        overrides[config.name] = str(config.value)
    try:
        check_together(effective(overrides, ctx.topic_defaults), ctx.tiering.available)
    except InvalidConfig as exc:
        return _create_error(scope, resp, name, ErrorCode.invalid_config, str(exc))
    if await ctx.topics.fresh(name) is not None:
        return _create_error(
            scope, resp, name, ErrorCode.topic_already_exists, f"Topic '{name}' already exists."
        )
    defaults = ctx.topic_defaults
    # Kafka returns the new topic's configs only to a principal that may describe them.
    shown = await ctx.access.authorizer.allowed(
        AclOperation.DESCRIBE_CONFIGS, ResourceType.TOPIC, name, scope
    )
    if validate_only:
        fixed = fixed_configs(overrides, defaults)
        return _created(resp, name, None, partitions, overrides, defaults, fixed, shown)
    try:
        topic = await ctx.topics.create(name, partitions, overrides, leaders)
    except TopicExists:
        return _create_error(
            scope, resp, name, ErrorCode.topic_already_exists, f"Topic '{name}' already exists."
        )
    return _created(
        resp, name, topic.id, topic.partitions, topic.overrides, defaults, topic.fixed_configs, shown
    )


async def _partition_count(
    ctx: BrokerContext, requested: _CreatableTopic
) -> tuple[ErrorCode, str | None, int]:
    assignments = requested.assignments
    if assignments:
        if requested.num_partitions != -1 or requested.replication_factor != -1:
            message = "Both num_partitions or replication_factor and a manual assignment were set; use one."
            return ErrorCode.invalid_request, message, 0
        ordered = sorted(assignments, key=lambda a: a.partition_index)
        if [a.partition_index for a in ordered] != list(range(len(ordered))):
            return ErrorCode.invalid_replica_assignment, "Partitions should be 0-based and consecutive.", 0
        error = await _assignment_error(ctx, [list(a.broker_ids) for a in ordered])
        if error:
            return ErrorCode.invalid_replica_assignment, error, 0
        partitions = len(ordered)
    else:
        partitions = requested.num_partitions
        if partitions == -1:
            partitions = ctx.settings.default_partitions
        if partitions < 1:
            return ErrorCode.invalid_partitions, "Number of partitions must be larger than 0, or -1.", 0
        if requested.replication_factor != -1 and requested.replication_factor < 1:
            message = "Replication factor must be larger than 0, or -1 to use the default value."
            return ErrorCode.invalid_replication_factor, message, 0
    if partitions > MAX_PARTITIONS:
        return ErrorCode.invalid_partitions, f"Number of partitions must not exceed {MAX_PARTITIONS}.", 0
    return ErrorCode.none, None, partitions


def _created(
    resp: type[CreateTopicsResponse],
    name: str,
    topic_id: uuid.UUID | None,
    partitions: int,
    overrides: Mapping[str, str],
    defaults: Mapping[str, str],
    fixed: Mapping[str, str],
    configs_shown: bool = True,
) -> Entity:
    configs: tuple[Entity, ...] = ()
    config_cls = optional_sibling(resp, "CreatableTopicConfigs")
    if config_cls is not None and configs_shown:
        configs = tuple(
            make(
                config_cls,
                name=c.name,
                value=c.value,
                read_only=c.read_only,
                config_source=c.source,
                is_sensitive=False,
            )
            for c in topic_config_values(overrides, defaults, fixed)
        )
    return make(
        sibling(resp, "CreatableTopicResult"),
        name=name,
        topic_id=topic_id,
        error_code=ErrorCode.none,
        error_message=None,
        topic_config_error_code=ErrorCode.none if configs_shown else ErrorCode.topic_authorization_failed,
        num_partitions=partitions,
        replication_factor=REPLICATION_FACTOR,
        configs=configs,
    )


# -- DeleteTopics ---------------------------------------------------------------------------------


def _given_id(topic_id: uuid.UUID | None) -> uuid.UUID | None:
    return None if topic_id is None or topic_id.int == 0 else topic_id


async def handle_delete_topics(
    ctx: BrokerContext, body: DeleteTopicsRequest, scope: RequestScope
) -> DeleteTopicsResponse:
    resp = response_for(body)
    if hasattr(body, "topics"):  # v6 names topics by name or id
        wanted = [(t.name, _given_id(t.topic_id)) for t in body.topics]
    else:
        wanted = [(name, None) for name in body.topic_names]
    names = Counter(n for n, _ in wanted if n is not None)
    ids = Counter(i for n, i in wanted if n is None and i is not None)
    results = []
    for name, topic_id in wanted:
        outcome: Outcome
        if name is not None and topic_id is not None:
            outcome = (ErrorCode.invalid_request, "You may not give both a topic name and a topic id.")
        elif name is None and topic_id is None:
            outcome = (ErrorCode.invalid_request, "Neither a topic name nor a topic id was given.")
        elif (name is not None and names[name] > 1) or (topic_id is not None and ids[topic_id] > 1):
            outcome = (ErrorCode.invalid_request, "Duplicate topic in the request.")
        else:
            try:
                name, topic_id, outcome = await _delete_one(ctx, scope, name, topic_id)
            except STORAGE_ERRORS as exc:
                outcome = _storage_failure(exc)
        results.append(
            make(
                sibling(resp, "DeletableTopicResult"),
                name=name,
                topic_id=topic_id,
                error_code=outcome[0],
                error_message=outcome[1],
            )
        )
    return make(resp, throttle_time=NO_THROTTLE, responses=tuple(results))


async def _delete_one(
    ctx: BrokerContext, scope: RequestScope, name: str | None, topic_id: uuid.UUID | None
) -> tuple[str | None, uuid.UUID | None, Outcome]:
    if name is None:
        assert topic_id is not None
        internal = internal_topic_by_id(topic_id, ctx.topic_defaults)
        if internal is not None:
            return None, topic_id, (ErrorCode.invalid_request, f"Topic '{internal.name}' is an {READ_ONLY}.")
        topic = await ctx.topics.by_id(topic_id)
        if topic is None:
            return None, topic_id, (ErrorCode.unknown_topic_id, f"Topic id {topic_id} does not exist.")
        if not await ctx.access.authorizer.allowed(
            AclOperation.DELETE, ResourceType.TOPIC, topic.name, scope
        ):
            return None, topic_id, (ErrorCode.topic_authorization_failed, DENIED)
    else:
        if not await ctx.access.authorizer.allowed(AclOperation.DELETE, ResourceType.TOPIC, name, scope):
            return name, None, (ErrorCode.topic_authorization_failed, DENIED)
        unknown = (ErrorCode.unknown_topic_or_partition, f"Topic '{name}' does not exist.")
        if not valid_topic_name(name):
            return name, None, unknown
        topic = await ctx.topics.fresh(name)
        if topic is None and is_internal(name):  # (a stored one, left by an older version, may go)
            return name, None, (ErrorCode.invalid_request, f"Topic '{name}' is an {READ_ONLY}.")
        if topic is None:
            return name, None, unknown
    try:
        await ctx.topics.delete(topic.name, topic.id)
    except UnknownTopic:
        code = ErrorCode.unknown_topic_or_partition if name is not None else ErrorCode.unknown_topic_id
        return name, topic_id, (code, f"Topic '{topic.name}' does not exist.")
    await ctx.tiering.drop_topic(topic)
    return topic.name, topic.id, (ErrorCode.none, None)


# -- CreatePartitions -----------------------------------------------------------------------------


async def handle_create_partitions(
    ctx: BrokerContext, body: CreatePartitionsRequest, scope: RequestScope
) -> CreatePartitionsResponse:
    resp = response_for(body)
    counts = Counter(t.name for t in body.topics)
    results = []
    for requested in body.topics:
        if counts[requested.name] > 1:
            outcome: Outcome = (ErrorCode.invalid_request, "Duplicate topic name.")
        else:
            try:
                outcome = await _grow(ctx, scope, requested, bool(body.validate_only))
            except STORAGE_ERRORS as exc:
                outcome = _storage_failure(exc)
        results.append(
            make(
                sibling(resp, "CreatePartitionsTopicResult"),
                name=requested.name,
                error_code=outcome[0],
                error_message=outcome[1],
            )
        )
    return make(resp, throttle_time=NO_THROTTLE, results=tuple(results))


async def _grow(
    ctx: BrokerContext, scope: RequestScope, requested: _PartitionsTopic, validate_only: bool
) -> Outcome:
    name, count = requested.name, requested.count
    if not await ctx.access.authorizer.allowed(AclOperation.ALTER, ResourceType.TOPIC, name, scope):
        return ErrorCode.topic_authorization_failed, DENIED
    unknown = (ErrorCode.unknown_topic_or_partition, f"The topic '{name}' does not exist.")
    if not valid_topic_name(name):
        return unknown
    if is_internal(name):
        return ErrorCode.invalid_request, f"Topic '{name}' is an {READ_ONLY}."
    topic = await ctx.topics.fresh(name)
    if topic is None:
        return unknown
    current = topic.partitions
    if count < current:
        message = f"Topic currently has {current} partitions, which is higher than the requested {count}."
        return ErrorCode.invalid_partitions, message
    if count == current:
        return ErrorCode.invalid_partitions, f"Topic already has {current} partitions."
    if count > MAX_PARTITIONS:
        return ErrorCode.invalid_partitions, f"Number of partitions must not exceed {MAX_PARTITIONS}."
    leaders: dict[int, int] = {}
    if requested.assignments is not None:
        added = count - current
        replica_lists = [list(a.broker_ids) for a in requested.assignments]
        if len(replica_lists) != added:
            given = len(replica_lists)
            message = f"Increasing the number of partitions by {added} but {given} assignments were given."
            return ErrorCode.invalid_replica_assignment, message
        error = await _assignment_error(ctx, replica_lists, first=current, one_replica=True)
        if error:
            return ErrorCode.invalid_replica_assignment, error
        leaders = _placed(current, replica_lists)
    if validate_only:
        return ErrorCode.none, None
    try:
        old = await ctx.topics.alter(name, partitions=count, leaders=leaders)
    except UnknownTopic:
        return unknown
    except PartitionsNotIncreasing:
        return ErrorCode.invalid_partitions, f"Topic '{name}' already has {count} or more partitions."
    await ctx.topics.stamp_partitions(name, topic.id, range(old, count))
    return ErrorCode.none, None
