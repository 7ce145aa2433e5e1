"""The KIP-848 consumer group: members with epochs, the group's target assignment, and reconciliation.

Pure data and rules; coordinator.py drives it and does the I/O. Epochs, targets and the saved
form are modern/group.py's, shared with share groups; what is the consumer group's own is below.

Each member moves toward its target one safe step at a time, on its own heartbeats: partitions it
must give up are revoked first (its epoch stays), it is only given partitions that no other member
still holds, and its epoch advances to the target epoch once it has nothing left to revoke. So no
partition is ever held by two members, and a member's epoch fences its offset commits. Static members
(an instance id) may step out for a restart and come back under a new member id with their partitions.
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, ClassVar

from kio.schema.errors import ErrorCode

from ..modern.group import (
    JOIN_EPOCH,
    Assignment,
    EpochGroup,
    EpochMember,
    TopicPartition,
    grouped,
    loaded_assignment,
    loaded_member,
    pairs,
    saved_assignment,
)
from .assignors import ASSIGNORS, DEFAULT_ASSIGNOR, MemberSpec

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


@dataclass(slots=True)
class ConsumerMember(EpochMember):
    """Besides EpochMember: static membership, a regex subscription, the assignor it asks for, and
    the partitions it must revoke within its rebalance timeout."""

    instance_id: str | None = None
    regex: str | None = None
    assignor: str | None = None
    rebalance_ms: int = 300_000
    state: MemberState = MemberState.STABLE
    revoking: Assignment = field(default_factory=dict)  # what it must give up before moving on
    revoke_deadline: float | None = None  # in memory only, as the session deadline

    def owns(self) -> set[TopicPartition]:
        return pairs(self.assigned) | pairs(self.revoking)

    def start_clocks(self, now: float) -> None:
        EpochMember.start_clocks(self, now)  # slots dataclasses have no zero-argument super()
        if self.state == MemberState.UNREVOKED:
            self.revoke_deadline = now + self.rebalance_ms / 1000

    def lapsed(self, now: float, redis_back_at: float) -> bool:
        """Its session ran out, or it did not revoke within its rebalance timeout."""
        return EpochMember.lapsed(self, now, redis_back_at) or (
            self.revoke_deadline is not None
            and now > max(self.revoke_deadline, redis_back_at + self.rebalance_ms / 1000)
        )

    def to_saved(self) -> dict[str, Any]:
        return {
            **EpochMember.to_saved(self),
            "instance_id": self.instance_id,
            "regex": self.regex,
            "assignor": self.assignor,
            "rebalance_ms": self.rebalance_ms,
            "state": self.state.value,
            "revoking": saved_assignment(self.revoking),
        }

    @classmethod
    def from_saved(cls, data: dict[str, Any]) -> ConsumerMember:
        return cls(
            **loaded_member(data),
            instance_id=data.get("instance_id"),
            regex=data.get("regex"),
            assignor=data.get("assignor"),
            rebalance_ms=int(data.get("rebalance_ms", 300_000)),
            state=MemberState(data.get("state", MemberState.STABLE.value)),
            revoking=loaded_assignment(data.get("revoking")),
        )


@dataclass
class ConsumerGroup(EpochGroup[ConsumerMember]):
    KIND: ClassVar[str] = "consumer"

    assignor: str = DEFAULT_ASSIGNOR
    regexes: dict[str, list[str]] = field(default_factory=dict)  # regex -> topic names it matched
    regexes_checked: float = 0.0

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

    # -- target assignment ------------------------------------------------------------------------
    def choose_assignor(self) -> str:
        """The server assignor most members ask for (ties by name), else the default."""
        votes = Counter(m.assignor for m in self.members.values() if m.assignor)
        if not votes:
            return DEFAULT_ASSIGNOR
        return min(votes, key=lambda name: (-votes[name], name))

    def _assign(self, previous: Mapping[str, set[TopicPartition]]) -> dict[str, set[TopicPartition]]:
        self.assignor = self.choose_assignor()
        specs = {
            m.member_id: MemberSpec(
                m.instance_id or m.member_id, frozenset(self.topics_of(m) & set(self.topics))
            )
            for m in self.members.values()
        }
        return ASSIGNORS[self.assignor](specs, self.topics, previous)

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
        current, wanted = pairs(member.assigned), pairs(member.target)
        keep = current & wanted
        revoke = current - wanted
        add = wanted - keep - held_by_others
        unreleased = bool(wanted - keep - add)
        if revoke and _still_owns(owned, grouped(revoke)):
            # Revocation first: the member keeps its epoch until it confirms the partitions are gone.
            member.state = MemberState.UNREVOKED
            member.assigned, member.revoking = grouped(keep), grouped(revoke)
            return
        member.assigned, member.revoking = grouped(keep | add), {}
        member.state = MemberState.UNRELEASED if unreleased else MemberState.STABLE
        if member.epoch != self.assignment_epoch:
            member.previous_epoch, member.epoch = member.epoch, self.assignment_epoch

    def replace(self, old: ConsumerMember, member_id: str) -> ConsumerMember:
        """A static member rejoining under a new member id takes the old one's place and partitions."""
        new = dataclasses.replace(old, member_id=member_id, epoch=JOIN_EPOCH, previous_epoch=JOIN_EPOCH)
        del self.members[old.member_id]
        self.members[member_id] = new
        return new

    # -- offsets ----------------------------------------------------------------------------------
    def check_commit(self, member_epoch: int, member_id: str, version: int) -> ErrorCode:
        if member_epoch < 0 and not self.members:
            return ErrorCode.none  # the admin client, or a consumer without group management
        member = self.members.get(member_id)
        if member is None:
            return ErrorCode.unknown_member_id
        if version < 9:
            return ErrorCode.unsupported_version  # members of consumer groups commit with v9+
        if member_epoch != member.epoch:
            return ErrorCode.stale_member_epoch
        return ErrorCode.none

    def check_fetch(self, member_id: str | None, member_epoch: int) -> ErrorCode:
        if member_id is None and member_epoch < 0:
            return ErrorCode.none
        member = self.members.get(member_id or "")
        if member is None:
            return ErrorCode.unknown_member_id
        if member_epoch != member.epoch:
            return ErrorCode.stale_member_epoch
        return ErrorCode.none

    # -- Redis ------------------------------------------------------------------------------------
    def _saved_fields(self) -> dict[str, str]:
        return {"regexes": json.dumps(self.regexes, sort_keys=True)}

    def _load_fields(self, saved: dict[str, str]) -> None:
        self.assignor = saved.get("assignor") or DEFAULT_ASSIGNOR
        self.regexes = json.loads(saved.get("regexes") or "{}")

    @classmethod
    def _member_from_saved(cls, data: dict[str, Any]) -> ConsumerMember:
        return ConsumerMember.from_saved(data)


def _still_owns(owned: Assignment | None, partitions: Assignment) -> bool:
    if owned is None:
        return True
    return bool(pairs(owned) & pairs(partitions))


def is_subset(owned: Assignment | None, assigned: Assignment) -> bool:
    return owned is not None and pairs(owned) <= pairs(assigned)
