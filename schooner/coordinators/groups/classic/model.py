"""The classic consumer group's data: its members and generation, how it is saved to Redis, and the
JoinGroup request and the JoinGroup and SyncGroup results. Queries only: every change of a group is
a transition in group.py.
"""

from __future__ import annotations

import asyncio
import base64
import json
import uuid
from collections import Counter
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from kio.schema.errors import ErrorCode

Protocols = tuple[tuple[str, bytes], ...]  # (name, metadata) in the member's order of preference


class GroupState(StrEnum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass(frozen=True, slots=True)
class GroupSettings:
    min_session_ms: int = 6000
    max_session_ms: int = 1_800_000
    initial_rebalance_delay_ms: int = 3000


@dataclass(frozen=True, slots=True)
class JoinRequest:
    """One JoinGroup request. An empty member_id is a member joining for the first time."""

    group_id: str
    member_id: str
    instance_id: str | None
    client_id: str
    client_host: str
    session_ms: int
    rebalance_ms: int
    protocol_type: str
    protocols: Protocols
    require_known_member: bool  # v4+ (KIP-394): a new member first gets its id, then joins with it


@dataclass(slots=True)
class JoinResult:
    error: ErrorCode
    member_id: str = ""
    generation: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    members: list[tuple[str, str | None, bytes]] = field(default_factory=list)
    skip_assignment: bool = False


@dataclass(slots=True)
class SyncResult:
    error: ErrorCode
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


@dataclass(slots=True)
class Member:
    member_id: str
    instance_id: str | None
    client_id: str
    client_host: str
    session_ms: int
    rebalance_ms: int
    protocol_type: str
    protocols: Protocols
    assignment: bytes = b""
    last_seen: float = 0.0
    joining: bool = False  # its JoinGroup waits for the rebalance to complete
    syncing: bool = False  # its SyncGroup waits for the leader's

    @classmethod
    def joined(cls, member_id: str, req: JoinRequest, now: float) -> Member:
        return cls(
            member_id, req.instance_id, req.client_id, req.client_host, req.session_ms, req.rebalance_ms,
            req.protocol_type, req.protocols, last_seen=now,
        )  # fmt: skip

    def metadata_for(self, protocol: str) -> bytes:
        for name, metadata in self.protocols:
            if name == protocol:
                return metadata
        return b""

    def to_saved(self) -> dict[str, Any]:
        return {
            "member_id": self.member_id,
            "instance_id": self.instance_id,
            "client_id": self.client_id,
            "client_host": self.client_host,
            "session_ms": self.session_ms,
            "rebalance_ms": self.rebalance_ms,
            "protocol_type": self.protocol_type,
            "protocols": [[n, base64.b64encode(m).decode()] for n, m in self.protocols],
            "assignment": base64.b64encode(self.assignment).decode(),
        }

    @classmethod
    def from_saved(cls, data: dict[str, Any], now: float) -> Member:
        return cls(
            member_id=data["member_id"],
            instance_id=data.get("instance_id"),
            client_id=data.get("client_id", ""),
            client_host=data.get("client_host", ""),
            session_ms=int(data["session_ms"]),
            rebalance_ms=int(data["rebalance_ms"]),
            protocol_type=data.get("protocol_type", ""),
            protocols=tuple((n, base64.b64decode(m)) for n, m in data.get("protocols", [])),
            assignment=base64.b64decode(data.get("assignment", "")),
            last_seen=now,  # a coordinator that takes the group over starts the sessions afresh
        )


@dataclass
class Group:
    group_id: str
    owner_epoch: str = "0"
    state: GroupState = GroupState.EMPTY
    generation: int = 0
    protocol_type: str | None = None
    protocol: str | None = None
    leader: str | None = None
    members: dict[str, Member] = field(default_factory=dict)
    # Member ids handed out with MEMBER_ID_REQUIRED, not yet joined: id -> time handed out.
    pending: dict[str, float] = field(default_factory=dict)
    timer_at: float | None = None  # when the rebalance timer last armed is due
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)  # the coordinator's, around each event

    def instance_owner(self, instance_id: str) -> str | None:
        for m in self.members.values():
            if m.instance_id == instance_id:
                return m.member_id
        return None

    def supports(self, protocol_type: str, protocols: Protocols) -> bool:
        if not protocols or not protocol_type:
            return False
        if not self.members:
            return True
        if protocol_type != self.protocol_type:
            return False
        names = {n for n, _ in protocols}
        return all(names & {n for n, _ in m.protocols} for m in self.members.values())

    def select_protocol(self) -> str | None:
        """The protocol every member supports that most members prefer (Kafka's vote)."""
        members = list(self.members.values())
        if not members:
            return None
        common = set.intersection(*({n for n, _ in m.protocols} for m in members))
        if not common:
            return None
        votes: Counter[str] = Counter()
        for m in members:
            votes[next(n for n, _ in m.protocols if n in common)] += 1
        return max(sorted(common), key=lambda n: votes[n])

    def all_rejoined(self) -> bool:
        return all(m.joining for m in self.members.values()) and not self.pending

    def to_saved(self) -> dict[str, Any]:
        return {
            "state": self.state.value,
            "generation": self.generation,
            "protocol_type": self.protocol_type or "",
            "protocol": self.protocol or "",
            "leader": self.leader or "",
            "members": json.dumps([m.to_saved() for m in self.members.values()]),
        }

    @classmethod
    def from_saved(cls, group_id: str, saved: dict[str, str], now: float) -> Group:
        group = cls(group_id, owner_epoch=saved.get("owner_epoch", "0"))
        group.state = GroupState(saved.get("state") or GroupState.EMPTY.value)
        group.generation = int(saved.get("generation") or 0)
        group.protocol_type = saved.get("protocol_type") or None
        group.protocol = saved.get("protocol") or None
        group.leader = saved.get("leader") or None
        for data in json.loads(saved.get("members") or "[]"):
            member = Member.from_saved(data, now)
            group.members[member.member_id] = member
        return group


def new_member_id(client_id: str) -> str:
    return f"{client_id or 'member'}-{uuid.uuid4()}"
