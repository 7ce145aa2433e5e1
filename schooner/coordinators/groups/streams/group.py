"""The KIP-1071 streams group: a consumer group whose members own tasks instead of partitions.

Pure data and rules; coordinator.py drives it and does the I/O. A task is (subtopology id, partition),
so the consumer group's machinery serves it as it is: the target assignment (the uniform assignor over
each subtopology's tasks, sticky to the previous target), revocation before reassignment, and epochs
that fence offset commits. What is the streams group's own: the topology the members share, the
subtopologies' task counts (topology.py) standing where a consumer group keeps its subscribed topics,
and the members' process ids, endpoints and client tags. Only active tasks are assigned: standby
replicas (streams.num.standby.replicas) are not served yet.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, ClassVar

from ..consumer.group import ConsumerGroup, ConsumerGroupState, ConsumerMember
from .topology import Configured, Topology


class StreamsGroupState(StrEnum):
    EMPTY = "Empty"
    NOT_READY = "NotReady"  # the topology's topics are not all there yet
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"


@dataclass(slots=True)
class StreamsMember(ConsumerMember):
    """Besides a consumer group member: the Streams instance it runs in (several members may share one
    process), its endpoint for interactive queries, its client tags, and the topology epoch it runs."""

    process_id: str = ""
    endpoint: tuple[str, int] | None = None
    client_tags: dict[str, str] = field(default_factory=dict)
    topology_epoch: int = -1

    def to_saved(self) -> dict[str, Any]:
        return {
            **ConsumerMember.to_saved(self),
            "process_id": self.process_id,
            "endpoint": list(self.endpoint) if self.endpoint else None,
            "client_tags": self.client_tags,
            "topology_epoch": self.topology_epoch,
        }

    @classmethod
    def from_saved(cls, data: dict[str, Any]) -> StreamsMember:
        base = ConsumerMember.from_saved(data)
        endpoint = data.get("endpoint")
        return cls(
            **{name: getattr(base, name) for name in ConsumerMember.__dataclass_fields__},
            process_id=data.get("process_id", ""),
            endpoint=(endpoint[0], int(endpoint[1])) if endpoint else None,
            client_tags=dict(data.get("client_tags") or {}),
            topology_epoch=int(data.get("topology_epoch", -1)),
        )


@dataclass
class StreamsGroup(ConsumerGroup):
    """`topics` holds one entry per subtopology, named and identified by its id, its partition count
    the subtopology's task count; it is empty until the topology is ready."""

    KIND: ClassVar[str] = "streams"

    topology: Topology | None = None
    configured: Configured = field(default_factory=Configured)  # in memory: worked out again on heartbeats

    @property
    def state(self) -> StreamsGroupState:  # type: ignore[override]
        if not self.members:
            return StreamsGroupState.EMPTY
        if not self.configured.ready or self.topology is None:
            return StreamsGroupState.NOT_READY
        return StreamsGroupState(_SAME_STATES[ConsumerGroup.state.fget(self)])  # type: ignore[attr-defined]

    def topics_of(self, member: ConsumerMember) -> set[str]:
        return set(self.topics)  # every member may take any task

    def _saved_fields(self) -> dict[str, str]:
        return {
            **super()._saved_fields(),
            "topology": self.topology.to_saved() if self.topology else "",
        }

    def _load_fields(self, saved: dict[str, str]) -> None:
        super()._load_fields(saved)
        text = saved.get("topology")
        self.topology = Topology.from_saved(text) if text else None

    @classmethod
    def _member_from_saved(cls, data: dict[str, Any]) -> StreamsMember:
        return StreamsMember.from_saved(data)


_SAME_STATES = {
    ConsumerGroupState.EMPTY: StreamsGroupState.EMPTY,
    ConsumerGroupState.ASSIGNING: StreamsGroupState.ASSIGNING,
    ConsumerGroupState.RECONCILING: StreamsGroupState.RECONCILING,
    ConsumerGroupState.STABLE: StreamsGroupState.STABLE,
}
