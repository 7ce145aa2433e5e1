"""Share sessions (KIP-932): the partitions one member fetches from this broker, and the epoch its
next ShareFetch or ShareAcknowledge must carry. Kept in memory, as Kafka keeps them on each partition
leader: after a broker restart a member gets SHARE_SESSION_NOT_FOUND and opens a new one (epoch 0).

Epoch 0 opens (or replaces) a session; -1 closes it; any other must be the session's current epoch,
which each answered request advances, wrapping from 2**31 - 1 to 1.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field

from kio.schema.errors import ErrorCode

INITIAL_EPOCH = 0
FINAL_EPOCH = -1
MAX_EPOCH = 2**31 - 1

SessionPartition = tuple[uuid.UUID, int]  # (topic id, partition)


@dataclass(slots=True)
class ShareSession:
    group: str
    member: str
    epoch: int = 0  # what the next request must carry (advanced past the opening request to 1)
    partitions: dict[SessionPartition, None] = field(default_factory=dict)  # insertion-ordered set
    rotation: int = 0  # where the next fetch starts, so every partition gets its turn first
    registered: set[str] = field(default_factory=set)  # topics known to be in the group's share-topics set
    used: float = field(default_factory=time.monotonic)

    def advance(self) -> None:
        self.epoch = 1 if self.epoch >= MAX_EPOCH else self.epoch + 1
        self.used = time.monotonic()

    def add(self, partitions: list[SessionPartition]) -> None:
        for p in partitions:
            self.partitions[p] = None

    def forget(self, partitions: list[SessionPartition]) -> None:
        for p in partitions:
            self.partitions.pop(p, None)

    def fetch_order(self) -> list[SessionPartition]:
        order = list(self.partitions)
        if not order:
            return order
        start = self.rotation % len(order)
        self.rotation += 1
        return order[start:] + order[:start]


class ShareSessions:
    def __init__(self, limit: int = 10_000, idle_seconds: float = 120.0) -> None:
        self.limit = limit
        self.idle_seconds = idle_seconds  # a session unused this long may be evicted for a new one
        self._sessions: dict[tuple[str, str], ShareSession] = {}

    def open(self, group: str, member: str) -> ShareSession | ErrorCode:
        """A new session for the member (replacing its old one); SHARE_SESSION_LIMIT_REACHED when full."""
        key = (group, member)
        self._sessions.pop(key, None)
        if len(self._sessions) >= self.limit:
            self._evict_idle()
            if len(self._sessions) >= self.limit:
                return ErrorCode.share_session_limit_reached
        session = ShareSession(group, member)
        self._sessions[key] = session
        return session

    def find(self, group: str, member: str, epoch: int) -> ShareSession | ErrorCode:
        """The member's session when epoch is its current one (or FINAL_EPOCH)."""
        session = self._sessions.get((group, member))
        if session is None:
            return ErrorCode.share_session_not_found
        if epoch != FINAL_EPOCH and epoch != session.epoch:
            return ErrorCode.invalid_share_session_epoch
        return session

    def close(self, session: ShareSession) -> None:
        if self._sessions.get((session.group, session.member)) is session:
            del self._sessions[(session.group, session.member)]

    def of_member(self, group: str, member: str) -> ShareSession | None:
        return self._sessions.get((group, member))

    def __len__(self) -> int:
        return len(self._sessions)

    def _evict_idle(self) -> None:
        cutoff = time.monotonic() - self.idle_seconds
        for key in [k for k, s in self._sessions.items() if s.used < cutoff]:
            del self._sessions[key]
