"""The KIP-932 share group: members with epochs, and the group's target assignment.

Pure data and rules; share_coordinator.py drives it and does the I/O.

As in a KIP-848 consumer group, the group epoch goes up whenever something that decides the
assignment changes (a member joins, leaves or changes its subscription; a subscribed topic appears,
grows or goes), and the target assignment is then computed for that epoch (share_assignor.py). But a
share group never revokes: records, not partitions, are what members hold, so several members may
read one partition and a member takes its new target at its next heartbeat, with the target epoch.
States are Kafka's: Empty without members, else Stable.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from .assignors import TopicInfo, TopicPartition
from .share_assignor import NAME as ASSIGNOR
from .share_assignor import assign_shared

Assignment = dict[str, set[int]]  # topic id (text) -> partitions

JOIN_EPOCH = 0
LEAVE_EPOCH = -1
PROTOCOL_TYPE = "share"  # what ListGroups shows as the protocol type


class ShareGroupState(StrEnum):
    EMPTY = "Empty"
    STABLE = "Stable"


def _pairs(assignment: Mapping[str, Iterable[int]]) -> set[TopicPartition]:
    return {(t, p) for t, ps in assignment.items() for p in ps}


def _grouped(pairs: Iterable[TopicPartition]) -> Assignment:
    out: Assignment = {}
    for t, p in pairs:
        out.setdefault(t, set()).add(p)
    return out


def _saved_assignment(assignment: Assignment) -> dict[str, list[int]]:
    return {t: sorted(ps) for t, ps in sorted(assignment.items()) if ps}


def _loaded_assignment(data: Mapping[str, list[int]] | None) -> Assignment:
    return {t: set(ps) for t, ps in (data or {}).items() if ps}


@dataclass(slots=True)
class ShareMember:
    member_id: str  # chosen by the client (a UUID), kept for the consumer's lifetime
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed: tuple[str, ...] = ()  # sorted topic names
    session_ms: int = 45_000
    epoch: int = JOIN_EPOCH
    previous_epoch: int = LEAVE_EPOCH
    assigned: Assignment = field(default_factory=dict)  # what the member has been told it reads
    target: Assignment = field(default_factory=dict)  # its share of the target assignment
    deadline: float = 0.0  # in memory only: a coordinator that takes the group over starts it afresh

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
            "assigned": _saved_assignment(self.assigned),
            "target": _saved_assignment(self.target),
        }

    @classmethod
    def from_saved(cls, data: dict[str, Any]) -> ShareMember:
        return cls(
            member_id=data["member_id"],
            rack_id=data.get("rack_id"),
            client_id=data.get("client_id", ""),
            client_host=data.get("client_host", ""),
            subscribed=tuple(data.get("subscribed", ())),
            session_ms=int(data.get("session_ms", 45_000)),
            epoch=int(data.get("epoch", JOIN_EPOCH)),
            previous_epoch=int(data.get("previous_epoch", LEAVE_EPOCH)),
            assigned=_loaded_assignment(data.get("assigned")),
            target=_loaded_assignment(data.get("target")),
        )


@dataclass
class ShareGroup:
    group_id: str
    owner_epoch: str = "0"
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ShareMember] = field(default_factory=dict)
    # Subscription metadata: every subscribed topic that exists, with its id and partition count.
    topics: dict[str, TopicInfo] = field(default_factory=dict)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    saved: dict[str, str] = field(default_factory=dict)  # what Redis holds, to write only changes

    @property
    def state(self) -> ShareGroupState:
        return ShareGroupState.STABLE if self.members else ShareGroupState.EMPTY

    @property
    def assignor(self) -> str:
        return ASSIGNOR

    def subscribed_topics(self) -> set[str]:
        return {n for m in self.members.values() for n in m.subscribed}

    def topic_name(self, topic_id: str) -> str | None:
        return next((n for n, info in self.topics.items() if info.id == topic_id), None)

    def compute_target(self) -> None:
        """The target assignment for the current group epoch."""
        wanted = {m.member_id: frozenset(m.subscribed) & set(self.topics) for m in self.members.values()}
        previous = {m.member_id: _pairs(m.target) for m in self.members.values()}
        targets = assign_shared(wanted, self.topics, previous)
        for m in self.members.values():
            m.target = _grouped(targets.get(m.member_id, set()))
        self.assignment_epoch = self.group_epoch

    def reconcile(self, member: ShareMember) -> None:
        """Nothing to revoke: a member behind the target epoch takes its target at once."""
        if member.epoch != self.assignment_epoch:
            member.previous_epoch, member.epoch = member.epoch, self.assignment_epoch
            member.assigned = {t: set(ps) for t, ps in member.target.items()}

    def remove(self, member_ids: Iterable[str]) -> list[ShareMember]:
        """Drops members; when any was there, the group epoch goes up once and the target is
        computed again (their partitions go to the others at their next heartbeats)."""
        gone = [m for m in (self.members.pop(i, None) for i in member_ids) if m is not None]
        if gone:
            wanted = self.subscribed_topics()
            self.topics = {n: info for n, info in self.topics.items() if n in wanted}
            self.group_epoch += 1
            self.compute_target()
        return gone

    # -- Redis ------------------------------------------------------------------------------------
    def to_saved(self) -> dict[str, str]:
        return {
            "type": "share",
            "state": self.state.value,
            "generation": str(self.group_epoch),  # what `schooner groups list` shows
            "group_epoch": str(self.group_epoch),
            "assignment_epoch": str(self.assignment_epoch),
            "assignor": ASSIGNOR,
            "protocol_type": PROTOCOL_TYPE,
            "protocol": "",
            "leader": "",
            "topics": json.dumps({n: [t.id, t.partitions] for n, t in sorted(self.topics.items())}),
            "members": json.dumps([m.to_saved() for m in self.members.values()]),
        }

    @classmethod
    def from_saved(cls, group_id: str, saved: dict[str, str]) -> ShareGroup:
        group = cls(group_id, owner_epoch=saved.get("owner_epoch", "0"))
        group.group_epoch = int(saved.get("group_epoch") or 0)
        group.assignment_epoch = int(saved.get("assignment_epoch") or 0)
        group.topics = {
            n: TopicInfo(i, int(p)) for n, (i, p) in json.loads(saved.get("topics") or "{}").items()
        }
        now = time.monotonic()
        for data in json.loads(saved.get("members") or "[]"):
            member = ShareMember.from_saved(data)
            member.deadline = now + member.session_ms / 1000
            group.members[member.member_id] = member
        group.saved = dict(saved)
        return group
