"""The KIP-932 share group: members with epochs, and the group's target assignment.

Pure data and rules; coordinator.py drives it and does the I/O. Epochs, targets and the saved
form are modern/group.py's, shared with KIP-848 consumer groups; the assignor is assignor.py's.
What differs: a share group never revokes. Records, not partitions, are what members hold, so several
members may read one partition and a member takes its new target at its next heartbeat, with the
target epoch. States are Kafka's: Empty without members, else Stable.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, ClassVar

from kio.schema.errors import ErrorCode

from ..modern.group import EpochGroup, EpochMember, TopicPartition
from .assignor import NAME as ASSIGNOR
from .assignor import assign_shared


class ShareGroupState(StrEnum):
    EMPTY = "Empty"
    STABLE = "Stable"


@dataclass(slots=True)
class ShareMember(EpochMember):
    """A share group member: its member id is chosen by the client (a UUID), kept for the consumer's
    lifetime; `assigned` is what it has been told it reads."""


@dataclass
class ShareGroup(EpochGroup[ShareMember]):
    KIND: ClassVar[str] = "share"

    @property
    def state(self) -> ShareGroupState:
        return ShareGroupState.STABLE if self.members else ShareGroupState.EMPTY

    @property
    def assignor(self) -> str:
        return ASSIGNOR

    def _assign(self, previous: Mapping[str, set[TopicPartition]]) -> dict[str, set[TopicPartition]]:
        wanted = {m.member_id: frozenset(m.subscribed) & set(self.topics) for m in self.members.values()}
        return assign_shared(wanted, self.topics, previous)

    def reconcile(self, member: ShareMember) -> None:
        """Nothing to revoke: a member behind the target epoch takes its target at once."""
        if member.epoch != self.assignment_epoch:
            member.previous_epoch, member.epoch = member.epoch, self.assignment_epoch
            member.assigned = {t: set(ps) for t, ps in member.target.items()}

    def _members_gone(self) -> None:
        # Topics nobody subscribes to any more go at once, so leaving costs one new epoch, not two.
        wanted = self.subscribed_topics()
        self.topics = {n: info for n, info in self.topics.items() if n in wanted}

    # -- offsets ----------------------------------------------------------------------------------
    def check_commit(self, member_epoch: int, member_id: str, version: int) -> ErrorCode:
        return ErrorCode.group_id_not_found  # share groups have no committed offsets, as in Kafka

    def check_fetch(self, member_id: str | None, member_epoch: int) -> ErrorCode:
        return ErrorCode.none

    @classmethod
    def _member_from_saved(cls, data: dict[str, Any]) -> ShareMember:
        return ShareMember.from_saved(data)
