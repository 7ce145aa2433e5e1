"""Fetch sessions (KIP-227): a consumer names its partitions once, then sends only what changed.

A request's (session_id, session_epoch) says what it is:
- (0, -1): a full fetch with no session (every request before Fetch v7, and librdkafka's);
- (0, 0): a full fetch that opens a session if the cache has room; the response carries its id;
- (id, 0): closes session id, then as (0, 0);
- (id, -1): closes session id, then a full fetch with no session;
- (id, n > 0): an incremental fetch. The listed partitions are added or get a new fetch offset and
  byte limit, the forgotten ones leave; every partition of the session is read, and the response holds
  only those with records, an error, or a high watermark, log start or last stable offset that changed
  since the session last sent it. An unknown id gets FETCH_SESSION_ID_NOT_FOUND, an epoch other than
  the expected one INVALID_FETCH_SESSION_EPOCH; the client then opens a new session.
  (The handler skips the read of a partition whose kept end read, broker/partitions/partition_ends.py, still
  holds and matches what the session last sent: its answer could only be "unchanged".)
The next epoch is 1 after the opening request and one more after each accepted request, wrapping from
2**31 - 1 to 1.

Sessions are a cache in one broker process, as in Kafka (brokers hold no other state): after a restart,
or on another broker, a client gets FETCH_SESSION_ID_NOT_FOUND and starts over with a full fetch. The
cache holds `limit` sessions; a new one takes the place of the least recently used one that has been
idle for `idle_seconds`, else of the one with fewest partitions if the new one has more, else none is
opened and the full fetch is answered without a session.
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from kio.schema.errors import ErrorCode

INITIAL_EPOCH = 0
FINAL_EPOCH = -1
NO_SESSION = 0
MAX_EPOCH = 2**31 - 1
DEFAULT_SLOTS = 1000
DEFAULT_IDLE_SECONDS = 120.0

TopicRef = str | uuid.UUID  # the topic's name up to Fetch v12, its id from v13
Key = tuple[TopicRef, int]


@dataclass(slots=True)
class WantedPartition:
    """One partition to read: what a FetchPartition of the request, or the session, holds."""

    partition: int
    fetch_offset: int
    partition_max_bytes: int


@dataclass(slots=True)
class WantedTopic:
    topic: str | None
    topic_id: uuid.UUID | None
    partitions: list[WantedPartition]

    @property
    def ref(self) -> TopicRef:
        return self.topic_id if self.topic_id is not None else (self.topic or "")


@dataclass(slots=True)
class _Cached:
    fetch_offset: int
    partition_max_bytes: int
    # What the session last sent for the partition; None: not sent yet.
    sent: tuple[int, int, int] | None = None  # (high watermark, log start, last stable)


@dataclass(slots=True)
class FetchSession:
    id: int
    epoch: int = 1  # what the next request must carry
    partitions: dict[Key, _Cached] = field(default_factory=dict)  # insertion-ordered: the read order
    used: float = field(default_factory=time.monotonic)

    def advance(self) -> None:
        self.epoch = 1 if self.epoch >= MAX_EPOCH else self.epoch + 1
        self.used = time.monotonic()

    def update(
        self, topics: Iterable[WantedTopic], forgotten: Iterable[tuple[TopicRef, Sequence[int]]]
    ) -> None:
        for t in topics:
            for p in t.partitions:
                key = (t.ref, p.partition)
                cached = self.partitions.get(key)
                if cached is None:
                    self.partitions[key] = _Cached(p.fetch_offset, p.partition_max_bytes)
                else:
                    cached.fetch_offset, cached.partition_max_bytes = p.fetch_offset, p.partition_max_bytes
        for ref, partitions in forgotten:
            for partition in partitions:
                self.partitions.pop((ref, partition), None)

    def wanted(self) -> list[WantedTopic]:
        """Every partition of the session, grouped by topic in session order."""
        topics: dict[TopicRef, WantedTopic] = {}
        for (ref, partition), cached in self.partitions.items():
            t = topics.get(ref)
            if t is None:
                if isinstance(ref, uuid.UUID):
                    t = topics[ref] = WantedTopic(None, ref, [])
                else:
                    t = topics[ref] = WantedTopic(ref, None, [])
            t.partitions.append(WantedPartition(partition, cached.fetch_offset, cached.partition_max_bytes))
        return list(topics.values())

    def sent(self, ref: TopicRef, partition: int) -> tuple[int, int, int] | None:
        """The marks the session last sent for the partition (None: not sent yet)."""
        cached = self.partitions.get((ref, partition))
        return None if cached is None else cached.sent

    def respond(
        self, ref: TopicRef, partition: int, has_records: bool, error: bool, marks: tuple[int, int, int]
    ) -> bool:
        """Whether an incremental response must hold this partition; remembers what it sends. A
        partition that returned records moves to the end of the read order, so that others come
        first when max_bytes cuts the next response short."""
        key = (ref, partition)
        cached = self.partitions.get(key)
        if cached is None:
            return True
        changed = has_records or error or cached.sent != marks
        cached.sent = marks
        if has_records:
            del self.partitions[key]
            self.partitions[key] = cached
        return changed


@dataclass(slots=True)
class FetchPlan:
    topics: list[WantedTopic]
    session: FetchSession | None  # the session the response names (None: session id 0)
    incremental: bool  # the response holds only the partitions that changed


class FetchSessions:
    """The broker's cache of fetch sessions."""

    def __init__(self, limit: int = DEFAULT_SLOTS, idle_seconds: float = DEFAULT_IDLE_SECONDS) -> None:
        self.limit = limit
        self.idle_seconds = idle_seconds
        self._sessions: dict[int, FetchSession] = {}  # least recently used first

    def __len__(self) -> int:
        return len(self._sessions)

    def __contains__(self, session_id: int) -> bool:
        return session_id in self._sessions

    def sessions(self) -> list[FetchSession]:
        return list(self._sessions.values())

    def begin(
        self,
        session_id: int,
        epoch: int,
        topics: list[WantedTopic],
        forgotten: Sequence[tuple[TopicRef, Sequence[int]]],
    ) -> FetchPlan | ErrorCode:
        """What a request reads and how its response is built, or the top-level error."""
        if epoch in (INITIAL_EPOCH, FINAL_EPOCH):
            if session_id != NO_SESSION:
                self._sessions.pop(session_id, None)
            if epoch == FINAL_EPOCH:
                return FetchPlan(topics, None, False)
            session = self._open(sum(len(t.partitions) for t in topics))
            if session is not None:
                session.update(topics, ())
            return FetchPlan(topics, session, False)
        session = self._sessions.get(session_id) if session_id != NO_SESSION else None
        if session is None:
            return ErrorCode.fetch_session_id_not_found
        if epoch != session.epoch:
            return ErrorCode.invalid_fetch_session_epoch
        session.update(topics, forgotten)
        session.advance()
        self._sessions[session_id] = self._sessions.pop(session_id)  # now the most recently used
        return FetchPlan(session.wanted(), session, True)

    def _open(self, size: int) -> FetchSession | None:
        if self.limit <= 0:
            return None
        if len(self._sessions) >= self.limit and not self._evict(size):
            return None
        while True:
            new_id = random.randint(1, MAX_EPOCH)
            if new_id not in self._sessions:
                break
        session = FetchSession(new_id)
        self._sessions[new_id] = session
        return session

    def _evict(self, size: int) -> bool:
        """Makes room for a session of `size` partitions, if a stale or smaller session can go."""
        cutoff = time.monotonic() - self.idle_seconds
        for sid, s in self._sessions.items():  # least recently used first
            if s.used < cutoff:
                del self._sessions[sid]
                return True
        smallest = min(self._sessions.values(), key=lambda s: len(s.partitions))
        if len(smallest.partitions) < size:
            del self._sessions[smallest.id]
            return True
        return False
