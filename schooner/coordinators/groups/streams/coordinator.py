"""Coordination of KIP-1071 streams groups: StreamsGroupHeartbeat, leaving, and finding a group to describe.

The GroupCoordinator (groups/coordinator.py) holds one of these as `.streams`. It is the KIP-848
consumer group coordinator serving StreamsGroup (group.py): the same joining, static members, fencing
by member epoch, revocation deadlines, leaving and expiry, on the same GroupOwnership and group hash
in Redis (whose `type` says "streams"). What it adds: the first member's topology becomes the group's
(a later epoch replaces it), and on every heartbeat the topology is configured against the topics as
they are (topology.py), which gives the subtopologies' task counts, or the statuses that say why the
group is not ready (missing source topics, internal topics to create, wrong partition counts). The
broker, not this module, creates the internal topics the answer names.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from kio.schema.errors import ErrorCode

from ..consumer.coordinator import ConsumerGroupCoordinator, Heartbeat
from ..consumer.group import ConsumerGroup, ConsumerMember
from ..modern.coordinator import HeartbeatAnswer, MemberTimeouts, TopicSource, fail
from ..modern.group import JOIN_EPOCH, TopicInfo
from .group import StreamsGroup, StreamsMember
from .topology import InternalTopic, Status, Topology, configure, invalid

# Told to every member: no warm-up tasks are assigned (no standbys), so neither decides anything yet.
ACCEPTABLE_RECOVERY_LAG = 10_000
TASK_OFFSET_INTERVAL_MS = 60_000


@dataclass(frozen=True, slots=True)
class StreamsHeartbeat(Heartbeat):
    """One StreamsGroupHeartbeat request; `owned` holds its active tasks (subtopology -> partitions)."""

    topology: Topology | None = None
    process_id: str | None = None
    endpoint: tuple[str, int] | None = None
    client_tags: dict[str, str] | None = None
    endpoint_epoch: int = -1
    shutdown_application: bool = False


@dataclass(slots=True)
class StreamsAnswer:
    """The heartbeat's answer, with what a streams member is told besides."""

    answer: HeartbeatAnswer
    statuses: list[tuple[Status, str]] = field(default_factory=list)
    to_create: tuple[InternalTopic, ...] = ()
    endpoint_epoch: int = 0
    # (host, port) -> (active partitions, by topic) of every member with an endpoint; None: unchanged
    endpoints: dict[tuple[str, int], dict[str, set[int]]] | None = None


def invalid_field(hb: StreamsHeartbeat) -> str | None:
    """Why the request is malformed (INVALID_REQUEST), or None."""
    if not hb.member_id.strip():
        return "MemberId can't be empty."
    if not hb.group_id.strip():
        return "GroupId can't be empty."
    if hb.instance_id is not None and not hb.instance_id.strip():
        return "InstanceId can't be empty."
    if hb.rack_id is not None and not hb.rack_id.strip():
        return "RackId can't be empty."
    if hb.member_epoch < -2:
        return "MemberEpoch is invalid."
    if hb.member_epoch == JOIN_EPOCH:
        if hb.rebalance_ms == -1:
            return "RebalanceTimeoutMs must be provided in first request."
        if hb.topology is None or not hb.topology.subtopologies:
            return "Topology must be non-empty in first request."
        if hb.owned:
            return "ActiveTasks must be empty when (re-)joining."
        if hb.process_id is None or not hb.process_id.strip():
            return "ProcessId must be set in first request."
    if hb.topology is not None:
        return invalid(hb.topology)
    return None


class StreamsGroupCoordinator(ConsumerGroupCoordinator):
    GROUP: ClassVar[type[ConsumerGroup]] = StreamsGroup

    def _new_member(self, member_id: str) -> ConsumerMember:
        return StreamsMember(member_id)

    async def heartbeat(  # type: ignore[override]
        self, hb: StreamsHeartbeat, topics: TopicSource, timeouts: MemberTimeouts
    ) -> StreamsAnswer:
        answer = await super().heartbeat(hb, topics, timeouts)
        group = self.ownership.loaded(hb.group_id)
        # A group let go since (another broker took it over) has nothing more to tell the member.
        if (
            answer.error != ErrorCode.none
            or hb.member_epoch in self.LEAVE_EPOCHS
            or not isinstance(group, StreamsGroup)
        ):
            return StreamsAnswer(answer)
        member = group.members.get(answer.member_id or "")
        statuses = group.configured.statuses()
        if (
            isinstance(member, StreamsMember)
            and group.topology is not None
            and member.topology_epoch < group.topology.epoch
        ):
            message = f"The member's topology epoch {member.topology_epoch} is behind the group's."
            statuses.insert(0, (Status.STALE_TOPOLOGY, message))
        epoch = group.group_epoch
        endpoints = None if hb.endpoint_epoch == epoch else _endpoints(group)
        return StreamsAnswer(answer, statuses, group.configured.to_create, epoch, endpoints)

    def _refused(self, hb: Heartbeat) -> HeartbeatAnswer | None:
        assert isinstance(hb, StreamsHeartbeat)
        problem = invalid_field(hb)
        return None if problem is None else fail(ErrorCode.invalid_request, problem, hb)

    async def _heartbeat_locked(
        self, group: ConsumerGroup, hb: Heartbeat, topics: TopicSource, timeouts: MemberTimeouts
    ) -> HeartbeatAnswer:
        assert isinstance(group, StreamsGroup) and isinstance(hb, StreamsHeartbeat)
        if hb.topology is not None and (group.topology is None or hb.topology.epoch > group.topology.epoch):
            if group.topology is not None:
                group.group_epoch += 1  # a newer epoch of the application's topology (a join bumps anyway)
            group.topology = hb.topology
        return await super()._heartbeat_locked(group, hb, topics, timeouts)

    def _update_member(self, member: ConsumerMember, hb: Heartbeat, timeouts: MemberTimeouts) -> bool:
        bump = super()._update_member(member, hb, timeouts)
        assert isinstance(member, StreamsMember) and isinstance(hb, StreamsHeartbeat)
        if hb.topology is not None:
            member.topology_epoch = hb.topology.epoch
        if hb.process_id is not None:
            member.process_id = hb.process_id
        if hb.endpoint is not None and hb.endpoint != member.endpoint:
            member.endpoint = hb.endpoint
        if hb.client_tags is not None and hb.client_tags != member.client_tags:
            member.client_tags = dict(hb.client_tags)
            bump = True
        return bump

    def _full(self, hb: Heartbeat) -> bool:
        return hb.member_epoch == JOIN_EPOCH or (hb.rebalance_ms != -1 and hb.owned is not None)

    async def _refresh_topics(self, group: ConsumerGroup, topics: TopicSource) -> bool:
        """The topology configured against the topics as they are now; the subtopologies' task counts
        stand where a consumer group keeps its subscribed topics."""
        assert isinstance(group, StreamsGroup)
        if group.topology is None:
            return False
        counts: dict[str, int | None] = {}
        for s in group.topology.subtopologies:
            for name in (*s.sources, *(t.name for t in (*s.repartition_sources, *s.changelogs))):
                if name not in counts:
                    topic = await topics.topic(name)
                    counts[name] = topic.partitions if topic is not None else None
        regexes = any(s.source_regexes for s in group.topology.subtopologies)
        names = await topics.names() if regexes else []
        for name in names:
            if name not in counts:
                topic = await topics.topic(name)
                counts[name] = topic.partitions if topic is not None else None
        group.configured = configure(group.topology, counts.get, names)
        ready = group.configured.ready
        fresh = {s: TopicInfo(s, n) for s, n in group.configured.tasks.items()} if ready else {}
        if fresh != group.topics:
            group.topics = fresh
            return True
        return False


def _endpoints(group: StreamsGroup) -> dict[tuple[str, int], dict[str, set[int]]]:
    """What each member with an endpoint holds, as the source topic partitions of its active tasks."""
    inputs = group.configured.sources
    out: dict[tuple[str, int], dict[str, set[int]]] = {}
    for m in group.members.values():
        if not isinstance(m, StreamsMember) or m.endpoint is None:
            continue
        held = out.setdefault(m.endpoint, {})
        for subtopology, partitions in m.assigned.items():
            for topic in inputs.get(subtopology, ()):
                held.setdefault(topic, set()).update(partitions)
    return out
