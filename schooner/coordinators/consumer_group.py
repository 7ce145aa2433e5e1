"""The KIP-848 consumer group: members with epochs, the group's target assignment, and reconciliation.

Pure data and rules; consumer_coordinator.py drives it and does the I/O.

The group epoch goes up whenever something that decides the assignment changes (a member joins,
leaves or changes its subscription; a subscribed topic appears or grows). The target assignment is
then computed for that epoch. Each member moves toward its target one safe step at a time, on its
own heartbeats: partitions it must give up are revoked first (its epoch stays), it is only given
partitions that no other member still holds, and its epoch advances to the target epoch once it has
nothing left to revoke. So no partition is ever held by two members, and a member's epoch fences its
offset commits.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from .assignors import ASSIGNORS, DEFAULT_ASSIGNOR, MemberSpec, TopicInfo, TopicPartition

Assignment = dict[str, set[int]]  # topic id (text) -> partitions

JOIN_EPOCH = 0
LEAVE_EPOCH = -1
STATIC_LEAVE_EPOCH = -2  # a static member stepping out for a restart: it keeps its partitions


class MemberState(StrEnum):
    STABLE = "stable"
    UNREVOKED = "unrevoked_partitions"  # waits for the member to give partitions up
    UNRELEASED = "unreleased_partitions"  # waits for other members to give its partitions up


class ConsumerGroupState(StrEnum):
    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
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
class ConsumerMember:
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed: tuple[str, ...] = ()
    regex: str | None = None
    assignor: str | None = None
    rebalance_ms: int = 300_000
    session_ms: int = 45_000
    epoch: int = JOIN_EPOCH
    previous_epoch: int = LEAVE_EPOCH
    state: MemberState = MemberState.STABLE
    assigned: Assignment = field(default_factory=dict)  # what the member has been told it owns
    revoking: Assignment = field(default_factory=dict)  # what it must give up before moving on
    target: Assignment = field(default_factory=dict)  # its share of the target assignment
    # In memory only: a coordinator that takes the group over starts the clocks afresh.
    deadline: float = 0.0
    revoke_deadline: float | None = None

    def owns(self) -> set[TopicPartition]:
        return _pairs(self.assigned) | _pairs(self.revoking)

    def to_saved(self) -> dict[str, Any]:
        return {
            "member_id": self.member_id,
            "instance_id": self.instance_id,
            "rack_id": self.rack_id,
            "client_id": self.client_id,
            "client_host": self.client_host,
            "subscribed": list(self.subscribed),
            "regex": self.regex,
            "assignor": self.assignor,
            "rebalance_ms": self.rebalance_ms,
            "session_ms": self.session_ms,
            "epoch": self.epoch,
            "previous_epoch": self.previous_epoch,
            "state": self.state.value,
            "assigned": _saved_assignment(self.assigned),
            "revoking": _saved_assignment(self.revoking),
            "target": _saved_assignment(self.target),
        }

    @classmethod
    def from_saved(cls, data: dict[str, Any]) -> ConsumerMember:
        return cls(
            member_id=data["member_id"],
            instance_id=data.get("instance_id"),
            rack_id=data.get("rack_id"),
            client_id=data.get("client_id", ""),
            client_host=data.get("client_host", ""),
            subscribed=tuple(data.get("subscribed", ())),
            regex=data.get("regex"),
            assignor=data.get("assignor"),
            rebalance_ms=int(data.get("rebalance_ms", 300_000)),
            session_ms=int(data.get("session_ms", 45_000)),
            epoch=int(data.get("epoch", 0)),
            previous_epoch=int(data.get("previous_epoch", -1)),
            state=MemberState(data.get("state", MemberState.STABLE.value)),
            assigned=_loaded_assignment(data.get("assigned")),
            revoking=_loaded_assignment(data.get("revoking")),
            target=_loaded_assignment(data.get("target")),
        )


@dataclass
class ConsumerGroup:
    group_id: str
    owner_epoch: str = "0"
    group_epoch: int = 0
    assignment_epoch: int = 0
    assignor: str = DEFAULT_ASSIGNOR
    members: dict[str, ConsumerMember] = field(default_factory=dict)
    # Subscription metadata: every subscribed topic that exists, with its id and partition count.
    topics: dict[str, TopicInfo] = field(default_factory=dict)
    regexes: dict[str, list[str]] = field(default_factory=dict)  # regex -> topic names it matched
    regexes_checked: float = 0.0
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    saved: dict[str, str] = field(default_factory=dict)  # what Redis holds, to write only changes

    @property
    def state(self) -> ConsumerGroupState:
        if not self.members:
            return ConsumerGroupState.EMPTY
        if self.group_epoch > self.assignment_epoch:
            return ConsumerGroupState.ASSIGNING
        if any(
            m.epoch != self.assignment_epoch or m.state != MemberState.STABLE for m in self.members.values()
        ):
            return ConsumerGroupState.RECONCILING
        return ConsumerGroupState.STABLE

    def static_member(self, instance_id: str) -> ConsumerMember | None:
        return next((m for m in self.members.values() if m.instance_id == instance_id), None)

    def topics_of(self, member: ConsumerMember) -> set[str]:
        """The topic names a member subscribes to, by name or through its regex."""
        names = set(member.subscribed)
        if member.regex:
            names.update(self.regexes.get(member.regex, ()))
        return names

    def subscribed_topics(self) -> set[str]:
        return {n for m in self.members.values() for n in self.topics_of(m)}

    def topic_name(self, topic_id: str) -> str | None:
        return next((n for n, info in self.topics.items() if info.id == topic_id), None)

    # -- target assignment ------------------------------------------------------------------------
    def choose_assignor(self) -> str:
        """The server assignor most members ask for (ties by name), else the default."""
        votes = Counter(m.assignor for m in self.members.values() if m.assignor)
        if not votes:
            return DEFAULT_ASSIGNOR
        return min(votes, key=lambda name: (-votes[name], name))

    def compute_target(self) -> None:
        """The target assignment for the current group epoch."""
        self.assignor = self.choose_assignor()
        specs = {
            m.member_id: MemberSpec(
                m.instance_id or m.member_id, frozenset(self.topics_of(m) & set(self.topics))
            )
            for m in self.members.values()
        }
        previous = {m.member_id: _pairs(m.target) for m in self.members.values()}
        targets = ASSIGNORS[self.assignor](specs, self.topics, previous)
        for m in self.members.values():
            m.target = _grouped(targets.get(m.member_id, set()))
        self.assignment_epoch = self.group_epoch

    # -- reconciliation ---------------------------------------------------------------------------
    def reconcile(self, member: ConsumerMember, owned: Assignment | None) -> None:
        """Moves the member one safe step toward its target. `owned` is what the member reported
        owning in this heartbeat (None: not reported, so it is assumed to still own everything)."""
        if member.epoch < 0:
            return  # a static member that stepped out: frozen until it rejoins or its session ends
        if member.state == MemberState.UNREVOKED:
            if _still_owns(owned, member.revoking):
                return
            member.revoking = {}
            member.revoke_deadline = None
            member.state = MemberState.STABLE
        elif member.state == MemberState.STABLE and member.epoch == self.assignment_epoch:
            return
        held_by_others = {tp for m in self.members.values() if m is not member for tp in m.owns()}
        current, wanted = _pairs(member.assigned), _pairs(member.target)
        keep = current & wanted
        revoke = current - wanted
        add = wanted - keep - held_by_others
        unreleased = bool(wanted - keep - add)
        if revoke and _still_owns(owned, _grouped(revoke)):
            # Revocation first: the member keeps its epoch until it confirms the partitions are gone.
            member.state = MemberState.UNREVOKED
            member.assigned, member.revoking = _grouped(keep), _grouped(revoke)
            return
        member.assigned, member.revoking = _grouped(keep | add), {}
        member.state = MemberState.UNRELEASED if unreleased else MemberState.STABLE
        if member.epoch != self.assignment_epoch:
            member.previous_epoch, member.epoch = member.epoch, self.assignment_epoch

    def remove(self, member_id: str) -> ConsumerMember | None:
        """Drops a member; its partitions are free for others at once."""
        return self.members.pop(member_id, None)

    def replace(self, old: ConsumerMember, member_id: str) -> ConsumerMember:
        """A static member rejoining under a new member id takes the old one's place and partitions."""
        new = dataclasses.replace(old, member_id=member_id, epoch=JOIN_EPOCH, previous_epoch=JOIN_EPOCH)
        del self.members[old.member_id]
        self.members[member_id] = new
        return new

    # -- Redis ------------------------------------------------------------------------------------
    def to_saved(self) -> dict[str, str]:
        return {
            "type": "consumer",
            "state": self.state.value,
            "generation": str(self.group_epoch),  # what `schooner groups list` shows
            "group_epoch": str(self.group_epoch),
            "assignment_epoch": str(self.assignment_epoch),
            "assignor": self.assignor,
            "protocol_type": "consumer",
            "protocol": "",
            "leader": "",
            "topics": json.dumps({n: [t.id, t.partitions] for n, t in sorted(self.topics.items())}),
            "regexes": json.dumps(self.regexes, sort_keys=True),
            "members": json.dumps([m.to_saved() for m in self.members.values()]),
        }

    @classmethod
    def from_saved(cls, group_id: str, saved: dict[str, str]) -> ConsumerGroup:
        group = cls(group_id, owner_epoch=saved.get("owner_epoch", "0"))
        group.group_epoch = int(saved.get("group_epoch") or 0)
        group.assignment_epoch = int(saved.get("assignment_epoch") or 0)
        group.assignor = saved.get("assignor") or DEFAULT_ASSIGNOR
        group.topics = {
            n: TopicInfo(i, int(p)) for n, (i, p) in json.loads(saved.get("topics") or "{}").items()
        }
        group.regexes = json.loads(saved.get("regexes") or "{}")
        deadline = time.monotonic()
        for data in json.loads(saved.get("members") or "[]"):
            member = ConsumerMember.from_saved(data)
            member.deadline = deadline + member.session_ms / 1000
            if member.state == MemberState.UNREVOKED:
                member.revoke_deadline = deadline + member.rebalance_ms / 1000
            group.members[member.member_id] = member
        group.saved = dict(saved)
        return group


def _still_owns(owned: Assignment | None, partitions: Assignment) -> bool:
    if owned is None:
        return True
    return bool(_pairs(owned) & _pairs(partitions))


def is_subset(owned: Assignment | None, assigned: Assignment) -> bool:
    return owned is not None and _pairs(owned) <= _pairs(assigned)
