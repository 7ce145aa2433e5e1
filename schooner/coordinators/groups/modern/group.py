"""What KIP-848 consumer groups and KIP-932 share groups have in common: members with epochs, a group
epoch, a target assignment, and the form both take in Redis (as Kafka's `group/modern/` holds it).

Pure data and rules. The group epoch goes up whenever something that decides the assignment changes (a
member joins, leaves or changes its subscription; a subscribed topic appears, grows or goes); the target
assignment is then computed for that epoch by the kind's assignor, and the assignment epoch catches up.
How a member moves toward its target is the kind's own: consumer/group.py revokes first and knows
static members, share/group.py gives the target at once and lets several members read one partition.
"""

from __future__ import annotations

import asyncio
import json
import time
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, ClassVar, Generic, Self, TypeVar

from kio.schema.errors import ErrorCode

Assignment = dict[str, set[int]]  # topic id (text) -> partitions
TopicPartition = tuple[str, int]  # (topic id as text, partition): ids change when a topic is made again


@dataclass(frozen=True, slots=True)
class TopicInfo:
    """A subscribed topic as the assignors see it."""

    id: str
    partitions: int


JOIN_EPOCH = 0
LEAVE_EPOCH = -1


def pairs(assignment: Mapping[str, Iterable[int]]) -> set[TopicPartition]:
    return {(t, p) for t, ps in assignment.items() for p in ps}


def grouped(tps: Iterable[TopicPartition]) -> Assignment:
    out: Assignment = {}
    for t, p in tps:
        out.setdefault(t, set()).add(p)
    return out


def saved_assignment(assignment: Assignment) -> dict[str, list[int]]:
    return {t: sorted(ps) for t, ps in sorted(assignment.items()) if ps}


def loaded_assignment(data: Mapping[str, list[int]] | None) -> Assignment:
    return {t: set(ps) for t, ps in (data or {}).items() if ps}


@dataclass(slots=True)
class EpochMember:
    """A member of either kind: what it subscribes to, its epochs, and what it has and should have."""

    member_id: str
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed: tuple[str, ...] = ()  # sorted topic names
    session_ms: int = 45_000
    epoch: int = JOIN_EPOCH
    previous_epoch: int = LEAVE_EPOCH
    assigned: Assignment = field(default_factory=dict)  # what the member has been told it owns
    target: Assignment = field(default_factory=dict)  # its share of the target assignment
    deadline: float = 0.0  # in memory only: a coordinator that takes the group over starts it afresh

    def start_clocks(self, now: float) -> None:
        """Its deadlines, counted from `now` (when the group was loaded)."""
        self.deadline = now + self.session_ms / 1000

    def lapsed(self, now: float, redis_back_at: float) -> bool:
        """Whether it is gone: its session ran out, counted at the earliest from when this broker
        reached Redis again after trouble (the member could not get through before)."""
        return now > max(self.deadline, redis_back_at + self.session_ms / 1000)

    def to_saved(self) -> dict[str, Any]:
        return {
            "member_id": self.member_id,
            "rack_id": self.rack_id,
            "client_id": self.client_id,
            "client_host": self.client_host,
            "subscribed": list(self.subscribed),
            "session_ms": self.session_ms,
            "epoch": self.epoch,
            "previous_epoch": self.previous_epoch,
            "assigned": saved_assignment(self.assigned),
            "target": saved_assignment(self.target),
        }

    @classmethod
    def from_saved(cls, data: dict[str, Any]) -> Self:
        return cls(**loaded_member(data))


def loaded_member(data: dict[str, Any]) -> dict[str, Any]:
    """EpochMember's fields from its saved form, as keyword arguments (a kind adds its own)."""
    return dict(
        member_id=data["member_id"],
        rack_id=data.get("rack_id"),
        client_id=data.get("client_id", ""),
        client_host=data.get("client_host", ""),
        subscribed=tuple(data.get("subscribed", ())),
        session_ms=int(data.get("session_ms", 45_000)),
        epoch=int(data.get("epoch", JOIN_EPOCH)),
        previous_epoch=int(data.get("previous_epoch", LEAVE_EPOCH)),
        assigned=loaded_assignment(data.get("assigned")),
        target=loaded_assignment(data.get("target")),
    )


M = TypeVar("M", bound=EpochMember)


@dataclass
class EpochGroup(ABC, Generic[M]):
    """A group of either kind. A kind names itself (KIND), and says its state, its assignor, how
    its members are loaded, and which offset requests its members may make."""

    KIND: ClassVar[str]  # the saved `type` field and ListGroups' protocol type: "consumer" or "share"

    group_id: str
    owner_epoch: str = "0"
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, M] = field(default_factory=dict)
    # Subscription metadata: every subscribed topic that exists, with its id and partition count.
    topics: dict[str, TopicInfo] = field(default_factory=dict)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    saved: dict[str, str] = field(default_factory=dict)  # what Redis holds, to write only changes

    @property
    @abstractmethod
    def state(self) -> StrEnum: ...

    @property
    @abstractmethod
    def assignor(self) -> str:
        """The name of the server assignor that computes the target."""

    @abstractmethod
    def _assign(self, previous: Mapping[str, set[TopicPartition]]) -> Mapping[str, set[TopicPartition]]:
        """member id -> its target partitions, given the previous target."""

    @classmethod
    @abstractmethod
    def _member_from_saved(cls, data: dict[str, Any]) -> M: ...

    @abstractmethod
    def check_commit(self, member_epoch: int, member_id: str, version: int) -> ErrorCode:
        """Whether an OffsetCommit may store offsets for the group."""

    @abstractmethod
    def check_fetch(self, member_id: str | None, member_epoch: int) -> ErrorCode:
        """Whether an OffsetFetch (v9+) may read the group's offsets."""

    # -- subscriptions ----------------------------------------------------------------------------
    def topics_of(self, member: M) -> set[str]:
        """The topic names a member subscribes to."""
        return set(member.subscribed)

    def subscribed_topics(self) -> set[str]:
        return {n for m in self.members.values() for n in self.topics_of(m)}

    def topic_name(self, topic_id: str) -> str | None:
        return next((n for n, info in self.topics.items() if info.id == topic_id), None)

    # -- target assignment ------------------------------------------------------------------------
    def compute_target(self) -> None:
        """The target assignment for the current group epoch."""
        targets = self._assign({m.member_id: pairs(m.target) for m in self.members.values()})
        for m in self.members.values():
            m.target = grouped(targets.get(m.member_id, set()))
        self.assignment_epoch = self.group_epoch

    def remove(self, member_ids: Iterable[str]) -> list[M]:
        """Drops members; when any was there, the group epoch goes up once and the target is computed
        again (their partitions go to the others)."""
        gone = [m for m in (self.members.pop(i, None) for i in member_ids) if m is not None]
        if gone:
            self._members_gone()
            self.group_epoch += 1
            self.compute_target()
        return gone

    def _members_gone(self) -> None:
        """A kind's own tidying after members were removed, before the new target."""

    # -- Redis ------------------------------------------------------------------------------------
    def to_saved(self) -> dict[str, str]:
        return {
            "type": self.KIND,
            "state": self.state.value,
            "generation": str(self.group_epoch),  # what `schooner groups list` shows
            "group_epoch": str(self.group_epoch),
            "assignment_epoch": str(self.assignment_epoch),
            "assignor": self.assignor,
            "protocol_type": self.KIND,
            "protocol": "",
            "leader": "",
            "topics": json.dumps({n: [t.id, t.partitions] for n, t in sorted(self.topics.items())}),
            **self._saved_fields(),
            "members": json.dumps([m.to_saved() for m in self.members.values()]),
        }

    def _saved_fields(self) -> dict[str, str]:
        """A kind's own fields of the saved group."""
        return {}

    def _load_fields(self, saved: dict[str, str]) -> None:
        """Reads a kind's own fields of the saved group."""

    @classmethod
    def from_saved(cls, group_id: str, saved: dict[str, str]) -> Self:
        group = cls(group_id, owner_epoch=saved.get("owner_epoch", "0"))
        group.group_epoch = int(saved.get("group_epoch") or 0)
        group.assignment_epoch = int(saved.get("assignment_epoch") or 0)
        group.topics = {
            n: TopicInfo(i, int(p)) for n, (i, p) in json.loads(saved.get("topics") or "{}").items()
        }
        group._load_fields(saved)
        now = time.monotonic()
        for data in json.loads(saved.get("members") or "[]"):
            member = cls._member_from_saved(data)
            member.start_clocks(now)
            group.members[member.member_id] = member
        group.saved = dict(saved)
        return group
