"""Classic, consumer (KIP-848) and share (KIP-932) groups as a Kafka client sees them: list, describe,
lag, offset resets and deletion, for `schooner groups` and the console.

confluent-kafka's AdminClient does what it has an API for (classic and consumer groups, offsets,
deletion of any group); the share-group APIs and ListGroups' types filter go through wire.py.
Every failure is a KafkaFailure whose message can be shown as it is.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from confluent_kafka import ConsumerGroupState, ConsumerGroupTopicPartitions, TopicCollection, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec
from kio.schema.errors import ErrorCode

from ...protocol.apis import ApiKey, request_type
from ...protocol.messages import make, sibling
from ...storage.groups.lag import PartitionLag
from ..client_options import ClientSettings
from . import KafkaFailure, admin_client, result
from .topics import offsets_at
from .wire import Connection, WireClient

SHARE = "share"
NO_OFFSET = -1001  # librdkafka's OFFSET_INVALID: no committed offset


@dataclass(frozen=True, slots=True)
class GroupListing:
    group_id: str
    type: str  # classic, consumer or share
    state: str


@dataclass(frozen=True, slots=True)
class Member:
    member_id: str
    client_id: str
    host: str
    assignment: tuple[tuple[str, int], ...]
    instance_id: str | None = None  # a classic group's static member id


@dataclass(frozen=True, slots=True)
class Group:
    group_id: str
    type: str
    state: str
    epoch: int | None  # a consumer or share group's epoch; classic groups do not tell their generation
    members: tuple[Member, ...]
    # Committed offset (a share group's share-partition start offset), end offset and records of lag,
    # None where not known or where the group has no position; no exact count or time here.
    partitions: tuple[PartitionLag, ...]
    assignor: str | None = None  # a classic or consumer group's partition assignor
    coordinator: int | None = None  # the coordinator's broker id, where the client says


@dataclass(frozen=True, slots=True)
class OffsetChange:
    topic: str
    partition: int
    current: int | None
    target: int


@dataclass(frozen=True, slots=True)
class ResetSpec:
    """Where to move: earliest, latest, offset (value), timestamp (value, ms) or shift (value)."""

    kind: str
    value: int = 0


# -- list and describe ----------------------------------------------------------------------------------
def list_groups(settings: ClientSettings, admin: AdminClient | None = None) -> list[GroupListing]:
    """Groups of every type: librdkafka lists classic and consumer groups, ListGroups' types filter
    the share groups (librdkafka does not name them)."""
    admin = admin or admin_client(settings)
    listed = result(admin.list_consumer_groups(request_timeout=settings.timeout_s), settings)
    groups = [GroupListing(g.group_id, _name(g.type), _name(g.state)) for g in listed.valid]
    with WireClient(settings) as wire:
        groups += [GroupListing(g.group_id, SHARE, g.group_state) for g in _list_share(wire.any_broker())]
    return sorted(groups, key=lambda g: g.group_id)


def group_type(settings: ClientSettings, group_id: str) -> str:
    """classic, consumer or share; KafkaFailure for a group that does not exist."""
    with WireClient(settings) as wire:
        connection = wire.any_broker()
        version = connection.version_of(ApiKey.LIST_GROUPS, (5,))
        response = connection.call(
            make(request_type(ApiKey.LIST_GROUPS, version), states_filter=(), types_filter=())
        )
    _check(response.error_code, "ListGroups")
    for g in response.groups:
        if g.group_id == group_id:
            return str(g.group_type or "classic")
    raise KafkaFailure(f"no group {group_id}", "GROUP_ID_NOT_FOUND")


def describe_group(settings: ClientSettings, group_id: str) -> Group:
    kind = group_type(settings, group_id)
    if kind == SHARE:
        return _describe_share(settings, group_id)
    admin = admin_client(settings)
    described = result(
        admin.describe_consumer_groups([group_id], request_timeout=settings.timeout_s)[group_id], settings
    )
    if described.state == ConsumerGroupState.DEAD:
        raise KafkaFailure(f"no group {group_id}", "GROUP_ID_NOT_FOUND")
    members = tuple(
        Member(
            m.member_id,
            m.client_id,
            m.host,
            tuple((tp.topic, tp.partition) for tp in (m.assignment.topic_partitions or ())),
            m.group_instance_id,
        )
        for m in described.members
    )
    epoch = _consumer_epoch(settings, group_id) if kind == "consumer" else None
    state = _name(described.state)
    lag = tuple(_committed_lag(admin, settings, group_id))
    coordinator = described.coordinator.id if described.coordinator is not None else None
    return Group(
        group_id, kind, state, epoch, members, lag, described.partition_assignor or None, coordinator
    )


def group_lag(settings: ClientSettings, group_id: str) -> list[PartitionLag]:
    if group_type(settings, group_id) == SHARE:
        with WireClient(settings) as wire:
            return _share_lag(settings, wire.coordinator(group_id), group_id)
    return _committed_lag(admin_client(settings), settings, group_id)


def _committed_lag(admin: AdminClient, settings: ClientSettings, group_id: str) -> list[PartitionLag]:
    committed = committed_offsets(admin, settings, group_id)
    ends = end_offsets(admin, settings, committed)
    rows = []
    for (topic, partition), offset in sorted(committed.items()):
        end = ends.get((topic, partition))
        lag = None if offset is None or end is None else max(end - offset, 0)
        rows.append(PartitionLag(topic, partition, offset, end, lag))
    return rows


def committed_offsets(
    admin: AdminClient, settings: ClientSettings, group_id: str
) -> dict[tuple[str, int], int | None]:
    """The group's committed offset per partition (OffsetFetch); None where it has none."""
    request = [ConsumerGroupTopicPartitions(group_id)]
    found = result(
        admin.list_consumer_group_offsets(request, request_timeout=settings.timeout_s)[group_id], settings
    )
    return {
        (tp.topic, tp.partition): (None if tp.offset == NO_OFFSET else tp.offset)
        for tp in found.topic_partitions or ()
    }


def end_offsets(
    admin: AdminClient, settings: ClientSettings, partitions: Iterable[tuple[str, int]]
) -> dict[tuple[str, int], int]:
    return offsets_at(admin, settings, partitions, OffsetSpec.latest())


def _consumer_epoch(settings: ClientSettings, group_id: str) -> int | None:
    with WireClient(settings) as wire:
        connection = wire.coordinator(group_id)
        version = connection.version_of(ApiKey.CONSUMER_GROUP_DESCRIBE, (0, 1))
        response = connection.call(
            make(
                request_type(ApiKey.CONSUMER_GROUP_DESCRIBE, version),
                group_ids=(group_id,),
                include_authorized_operations=False,
            )
        )
    (group,) = response.groups
    return int(group.group_epoch) if group.error_code == ErrorCode.none else None


# -- share groups, through wire.py ----------------------------------------------------------------------
def _list_share(connection: Connection) -> list[Any]:
    version = connection.version_of(ApiKey.LIST_GROUPS, (5,))
    response = connection.call(
        make(request_type(ApiKey.LIST_GROUPS, version), states_filter=(), types_filter=(SHARE,))
    )
    _check(response.error_code, "ListGroups")
    return list(response.groups)


def _describe_share(settings: ClientSettings, group_id: str) -> Group:
    with WireClient(settings) as wire:
        coordinator = wire.coordinator(group_id)
        version = coordinator.version_of(ApiKey.SHARE_GROUP_DESCRIBE, (1,))
        body = make(
            request_type(ApiKey.SHARE_GROUP_DESCRIBE, version),
            group_ids=(group_id,),
            include_authorized_operations=False,
        )
        (described,) = coordinator.call(body).groups
        _check(described.error_code, f"ShareGroupDescribe of {group_id}", described.error_message)
        partitions = _share_lag(settings, coordinator, group_id)
    members = tuple(
        Member(
            m.member_id,
            m.client_id,
            m.client_host,
            tuple((t.topic_name, p) for t in m.assignment.topic_partitions for p in t.partitions),
        )
        for m in described.members
    )
    return Group(group_id, SHARE, described.group_state, described.group_epoch, members, tuple(partitions))


def share_start_offsets(
    coordinator: Connection, group_id: str
) -> list[tuple[str, int, int | None, int | None]]:
    """(topic, partition, start offset, lag) of each share partition set up (DescribeShareGroupOffsets)."""
    version = coordinator.version_of(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, (0, 1))
    req = request_type(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, version)
    group = make(sibling(req, "DescribeShareGroupOffsetsRequestGroup"), group_id=group_id, topics=None)
    (answer,) = coordinator.call(make(req, groups=(group,))).groups
    _check(answer.error_code, f"DescribeShareGroupOffsets of {group_id}", answer.error_message)
    rows = []
    for t in answer.topics:
        for p in t.partitions:
            _check(p.error_code, f"DescribeShareGroupOffsets of {t.topic_name}:{p.partition_index}")
            lag = getattr(p, "lag", -1)
            rows.append(
                (
                    t.topic_name,
                    p.partition_index,
                    None if p.start_offset < 0 else p.start_offset,
                    None if lag < 0 else lag,
                )
            )
    return sorted(rows)


def _share_lag(settings: ClientSettings, coordinator: Connection, group_id: str) -> list[PartitionLag]:
    starts = share_start_offsets(coordinator, group_id)
    ends = end_offsets(admin_client(settings), settings, [(t, p) for t, p, _, _ in starts])
    return [PartitionLag(t, p, start, ends.get((t, p)), lag) for t, p, start, lag in starts]


# -- reset and delete -----------------------------------------------------------------------------------
def plan_reset(
    settings: ClientSettings, group_id: str, spec: ResetSpec, topics: list[tuple[str, int | None]] | None
) -> tuple[str, list[OffsetChange]]:
    """The group's type and the offsets a reset would set: of `topics` ((name, partition or None for
    all)), or of every partition where the group has offsets (None). Refused while the group has
    members, as Kafka refuses it."""
    group = describe_group(settings, group_id)
    if group.members:
        raise KafkaFailure(
            f"group {group_id} has {len(group.members)} active member(s): stop them before resetting offsets",
            "NON_EMPTY_GROUP",
        )
    current = {(p.topic, p.partition): p.committed for p in group.partitions}
    admin = admin_client(settings)
    if topics is None:
        partitions = sorted(current)
    else:
        partitions = []
        for name, partition in topics:
            count = _partition_count(admin, settings, name)
            if partition is not None and not 0 <= partition < count:
                raise KafkaFailure(f"topic {name} has no partition {partition} (it has {count})")
            partitions += [(name, partition)] if partition is not None else [(name, p) for p in range(count)]
    if not partitions:
        raise KafkaFailure(f"group {group_id} has no offsets to reset: name the topics with --topic")
    earliest = offsets_at(admin, settings, partitions, OffsetSpec.earliest())
    latest = offsets_at(admin, settings, partitions, OffsetSpec.latest())
    if spec.kind == "timestamp":
        found = offsets_at(admin, settings, partitions, OffsetSpec.for_timestamp(spec.value))
    changes = []
    for tp in partitions:
        low, high, now = earliest[tp], latest[tp], current.get(tp)
        if spec.kind == "earliest":
            target = low
        elif spec.kind == "latest":
            target = high
        elif spec.kind == "offset":
            target = spec.value
        elif spec.kind == "timestamp":
            target = found[tp] if found[tp] >= 0 else high  # no record that late: the end
        else:  # shift: from the committed offset, or the end where there is none (Kafka's latest reset)
            target = (now if now is not None else high) + spec.value
        changes.append(OffsetChange(tp[0], tp[1], now, min(max(target, low), high)))
    return group.type, changes


def execute_reset(settings: ClientSettings, group_id: str, kind: str, changes: list[OffsetChange]) -> None:
    if kind == SHARE:
        _alter_share(settings, group_id, changes)
        return
    admin = admin_client(settings)
    request = [
        ConsumerGroupTopicPartitions(
            group_id, [TopicPartition(c.topic, c.partition, c.target) for c in changes]
        )
    ]
    done = result(
        admin.alter_consumer_group_offsets(request, request_timeout=settings.timeout_s)[group_id], settings
    )
    for tp in done.topic_partitions or ():
        if tp.error is not None:
            raise KafkaFailure(f"{tp.topic}:{tp.partition}: {tp.error.str()}", str(tp.error.name()))


def _alter_share(settings: ClientSettings, group_id: str, changes: list[OffsetChange]) -> None:
    with WireClient(settings) as wire:
        coordinator = wire.coordinator(group_id)
        coordinator.version_of(ApiKey.ALTER_SHARE_GROUP_OFFSETS, (0,))
        req = request_type(ApiKey.ALTER_SHARE_GROUP_OFFSETS, 0)
        by_topic: dict[str, list[Any]] = {}
        for c in changes:
            by_topic.setdefault(c.topic, []).append(
                make(
                    sibling(req, "AlterShareGroupOffsetsRequestPartition"),
                    partition_index=c.partition,
                    start_offset=c.target,
                )
            )
        topics = tuple(
            make(sibling(req, "AlterShareGroupOffsetsRequestTopic"), topic_name=name, partitions=tuple(parts))
            for name, parts in by_topic.items()
        )
        response = coordinator.call(make(req, group_id=group_id, topics=topics))
    _check(response.error_code, f"AlterShareGroupOffsets of {group_id}", response.error_message)
    for t in response.responses:
        for p in t.partitions:
            _check(p.error_code, f"{t.topic_name}:{p.partition_index}", p.error_message)


def delete_share_offsets(settings: ClientSettings, group_id: str, topics: list[str]) -> None:
    """Drops a share group's share partitions of these topics (DeleteShareGroupOffsets): its next fetch
    starts again per share.auto.offset.reset. Refused while the group has members."""
    if group_type(settings, group_id) != SHARE:
        raise KafkaFailure(f"group {group_id} is not a share group")
    with WireClient(settings) as wire:
        coordinator = wire.coordinator(group_id)
        version = coordinator.version_of(ApiKey.DELETE_SHARE_GROUP_OFFSETS, (0,))
        req = request_type(ApiKey.DELETE_SHARE_GROUP_OFFSETS, version)
        wanted = tuple(
            make(sibling(req, "DeleteShareGroupOffsetsRequestTopic"), topic_name=t) for t in topics
        )
        response = coordinator.call(make(req, group_id=group_id, topics=wanted))
    _check(response.error_code, f"DeleteShareGroupOffsets of {group_id}", response.error_message)
    for t in response.responses:
        _check(t.error_code, f"deleting the share offsets of {t.topic_name}", t.error_message)


def delete_group(settings: ClientSettings, group_id: str) -> None:
    """Deletes an empty group of any type: the broker's DeleteGroups takes share groups too."""
    admin = admin_client(settings)
    future = admin.delete_consumer_groups([group_id], request_timeout=settings.timeout_s)[group_id]
    try:
        result(future, settings)
    except KafkaFailure as exc:
        if "GROUP_ID_NOT_FOUND" in str(exc):
            raise KafkaFailure(f"no group {group_id}", "GROUP_ID_NOT_FOUND") from None
        if "NON_EMPTY_GROUP" in str(exc):
            raise KafkaFailure(
                f"group {group_id} has active members: stop them before deleting it", "NON_EMPTY_GROUP"
            ) from None
        raise


def _partition_count(admin: AdminClient, settings: ClientSettings, name: str) -> int:
    """describe_topics, not list_topics: librdkafka's Metadata from list_topics may auto-create it."""
    future = admin.describe_topics(TopicCollection([name]), request_timeout=settings.timeout_s)[name]
    try:
        return len(result(future, settings).partitions)
    except KafkaFailure as exc:
        if "UNKNOWN_TOPIC" in str(exc):
            raise KafkaFailure(f"no topic {name}", "UNKNOWN_TOPIC_OR_PART") from None
        raise


def _check(code: ErrorCode, what: str, message: str | None = None) -> None:
    if code == ErrorCode.group_id_not_found and " of " in what:
        group = what.rsplit(" of ", 1)[1]
        raise KafkaFailure(f"no group {group}: {message or code.name}", code.name.upper())
    if code != ErrorCode.none:
        raise KafkaFailure(f"{what} failed: {message or code.name}", code.name.upper())


def _name(value: Any) -> str:
    """A confluent-kafka enum (ConsumerGroupType.CLASSIC) as Kafka spells it (classic; Stable)."""
    name = str(getattr(value, "name", value))
    if type(value).__name__.endswith("Type"):
        return name.lower()
    return "".join(word.title() for word in name.split("_"))
