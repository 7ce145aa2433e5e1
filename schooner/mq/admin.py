"""Administration of MQ topics and groups: stats, lag, pending entries, ownership, safe trimming, retries
and dead letters (list, replay, delete, purge). Blocking; every method is a few pipelined round trips.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from schooner.storage.blocking_store import BlockingStore
from schooner.storage.groups.lag import PartitionLag
from schooner.storage.keys import Keyspace
from schooner.storage.log.entry import Record
from schooner.storage.mq import dead_letters, queue
from schooner.storage.mq.admin import GroupInfo, PartitionStats
from schooner.storage.mq.dead_letters import DeadLetter
from schooner.storage.redis import client
from schooner.storage.topics.metadata import Topic, UnknownTopic

from .message import replay_headers
from .producer import OutgoingMessage, Producer, Sent

SORTS = ("idle", "deliveries")


@dataclass(frozen=True, slots=True)
class TopicStats:
    name: str
    partitions: list[PartitionStats]

    @property
    def length(self) -> int:
        return sum(p.length for p in self.partitions)


@dataclass(frozen=True, slots=True)
class QueuePartitionLag(PartitionLag):
    """A group's lag on one partition of an MQ queue: records are the entries not yet acked, the
    undelivered ones and those delivered but pending; seconds is now minus the append time of the
    oldest of them (0 when none). committed and end_offset are None: a queue's position is its Redis
    consumer group, not an offset."""

    undelivered: int = 0
    pending: int = 0

    @property
    def messages(self) -> int:
        """Not yet acked: undelivered + pending."""
        return self.undelivered + self.pending


@dataclass(frozen=True, slots=True)
class PendingMessage:
    partition: int
    offset: int
    entry_id: str
    consumer: str
    idle_ms: int
    deliveries: int


@dataclass(frozen=True, slots=True)
class Ownership:
    partition: int
    member: str | None
    expires_in_ms: int  # -2 when nobody holds the lease


@dataclass(frozen=True, slots=True)
class GroupStats:
    name: str
    members: list[str]  # live MQ members (a share group's members are the broker's: see `share`)
    partitions: list[GroupInfo | None]  # None where the group is missing on a partition
    share: bool = False  # a share group of this name consumes the topic too: the same queue


@dataclass(frozen=True, slots=True)
class ScheduledRetry:
    partition: int
    retry_id: str
    group: str
    due_ms: int


class Admin:
    def __init__(self, redis: str | Any, *, keyspace: str | Keyspace = "schooner") -> None:
        self.ks = keyspace if isinstance(keyspace, Keyspace) else Keyspace(keyspace)
        self._owns_client = isinstance(redis, str)
        self.redis = client.connect_sync(redis) if isinstance(redis, str) else redis
        self.store = BlockingStore(self.redis, self.ks)

    def close(self) -> None:
        if self._owns_client:
            self.redis.close()

    def topic(self, name: str) -> Topic:
        found = self.store.topic(name)
        if found is None:
            raise UnknownTopic(name)
        return found

    # -- topics and groups --------------------------------------------------------------------------
    def topics(self) -> list[TopicStats]:
        return [self.topic_stats(t) for t in self.store.topics()]

    def topic_stats(self, topic: Topic | str) -> TopicStats:
        t = topic if isinstance(topic, Topic) else self.topic(topic)
        return TopicStats(t.name, self.store.mq_stats(t, range(t.partitions)))

    def create_group(self, topic: str, group: str, start: str = "latest") -> None:
        t = self.topic(topic)
        begin = {"latest": queue.LATEST, "earliest": queue.EARLIEST}[start]
        self.store.mq_create_group(t, range(t.partitions), group, begin)

    def delete_group(self, topic: str, group: str) -> None:
        """Destroys the group on every partition, with its leases and member registry. A share group of
        the same name is the same queue: its share partitions go too (its members, if any, start anew)."""
        t = self.topic(topic)
        self.store.mq_delete_group(topic, range(t.partitions), group)

    def groups(self, topic: str) -> list[GroupStats]:
        t = self.topic(topic)
        names = self.store.mq_group_names(topic)
        infos = self.store.mq_groups(topic, range(t.partitions))
        names = sorted(set(names) | {g.name for per in infos for g in per})
        shared = self.store.mq_share_groups(topic, names)
        out = []
        for name, share in zip(names, shared, strict=True):
            members = self.members(topic, name)
            per = [next((g for g in gs if g.name == name), None) for gs in infos]
            out.append(GroupStats(name, members, per, share))
        return out

    def members(self, topic: str, group: str) -> list[str]:
        now = int(time.time() * 1000)
        registered = self.store.mq_members(topic, group)
        return [m for m, expires in registered if expires > now]

    def owners(self, topic: str, group: str) -> list[Ownership]:
        """Which member holds which partition, and for how much longer unless renewed."""
        t = self.topic(topic)
        owners = self.store.mq_owners(topic, range(t.partitions), group)
        return [Ownership(p, member, expires) for p, (member, expires) in enumerate(owners)]

    # -- lag, pending, trimming ---------------------------------------------------------------------
    def lag(self, topic: str, group: str) -> list[QueuePartitionLag]:
        t = self.topic(topic)
        lags = self.store.mq_lags(topic, range(t.partitions), group)
        now = int(time.time() * 1000)
        out = []
        for p, lag in enumerate(lags):
            if lag is None:
                raise LookupError(f"group {group} does not exist on {topic}:{p}")
            age = max(now - lag.oldest_unconsumed_ms, 0) / 1000 if lag.oldest_unconsumed_ms else 0.0
            out.append(
                QueuePartitionLag(
                    topic, p, None, None, lag.messages, lag.exact, age,
                    undelivered=lag.undelivered, pending=lag.pending,
                )
            )  # fmt: skip
        return out

    def pending(
        self, topic: str, group: str, *, partition: int | None = None, sort: str = "idle", limit: int = 100
    ) -> list[PendingMessage]:
        """Pending entries, the longest idle (or the most delivered) first."""
        if sort not in SORTS:
            raise ValueError(f"sort is one of {SORTS}")
        t = self.topic(topic)
        found: list[PendingMessage] = []
        for p in [partition] if partition is not None else range(t.partitions):
            start: bytes | str = "-"
            while True:
                page = self.store.mq_pending(topic, p, group, start, 1000)
                found += [
                    PendingMessage(
                        p, t.offsets.offset_of_id(e.entry_id), e.entry_id.decode(), e.consumer,
                        e.idle_ms, e.deliveries,
                    )
                    for e in page
                ]  # fmt: skip
                if len(page) < 1000:
                    break
                start = b"(" + page[-1].entry_id
        if sort == "idle":
            found.sort(key=lambda m: (-m.idle_ms, m.partition, m.offset))
        else:
            found.sort(key=lambda m: (-m.deliveries, -m.idle_ms, m.partition, m.offset))
        return found[:limit]

    def trim(self, topic: str, before_offset: int | None = None) -> dict[int, tuple[int, int]]:
        """Removes entries below before_offset (everything, when None) on every partition, but none that a
        group has not acked yet. Returns, per partition, (entries removed, offset trimmed up to)."""
        t = self.topic(topic)
        bound = before_offset if before_offset is not None else 2**62
        return dict(enumerate(self.store.mq_trim(t, range(t.partitions), bound)))

    # -- retries ------------------------------------------------------------------------------------
    def retries(self, topic: str) -> list[ScheduledRetry]:
        t = self.topic(topic)
        per = self.store.scheduled_retries(topic, range(t.partitions))
        return [
            ScheduledRetry(p, rid, rid.split("/", 1)[0], due)
            for p, items in enumerate(per)
            for rid, due in items
        ]

    def move_due_retries(self, topic: str) -> int:
        """Appends every due retry now (consumers do this themselves for the partitions they hold)."""
        t = self.topic(topic)
        return sum(self.store.move_due_retries(t, range(t.partitions)))

    # -- dead letters -------------------------------------------------------------------------------
    def dead_letters(self, topic: str, *, partition: int | None = None, limit: int = 100) -> list[DeadLetter]:
        """The oldest dead letters of the topic (or one partition), oldest first."""
        t = self.topic(topic)
        parts = [partition] if partition is not None else list(range(t.partitions))
        per = self.store.dead_letters(topic, parts, "-", limit)
        merged = sorted((d for letters in per for d in letters), key=lambda d: _id_key(d.entry_id))
        return merged[:limit]

    def dead_letter_count(self, topic: str) -> int:
        t = self.topic(topic)
        return sum(self.store.dead_letter_counts(topic, range(t.partitions)))

    def dead_letter(self, topic: str, letter_id: str) -> DeadLetter | None:
        p, entry_id = dead_letters.parse_letter_id(letter_id)
        (found,) = self.store.dead_letters(topic, [p], entry_id, 1)
        return found[0] if found and found[0].entry_id == entry_id else None

    def replay(self, topic: str, letter_id: str, *, to_topic: str | None = None) -> bool | Sent:
        """To the origin partition (to_topic None): moved into the retry schedule and appended at once, for
        the group that dead-lettered it; returns False when the letter is gone. To another topic: appended
        there as a new record (by its key), then deleted; returns where it went."""
        letter = self.dead_letter(topic, letter_id)
        if letter is None:
            return False
        if to_topic is None or to_topic == topic:
            record = Record(
                letter.timestamp, letter.key, letter.value,
                replay_headers(letter.headers, letter.group, letter.origin_offset),
            )  # fmt: skip
            if not self.store.replay_dead_letter(letter, record):
                return False
            t = self.topic(topic)
            self.store.move_due_retries(t, [letter.origin_partition])
            return True
        producer = Producer(self.redis, keyspace=self.ks)
        sent = producer.send_batch(
            to_topic, [OutgoingMessage(letter.value, letter.key, letter.headers, None, letter.timestamp)]
        )[0]
        self.delete_dead_letters(topic, [letter_id])
        return sent

    def delete_dead_letters(self, topic: str, letter_ids: list[str]) -> int:
        by_partition: dict[int, list[str]] = {}
        for letter_id in letter_ids:
            p, entry_id = dead_letters.parse_letter_id(letter_id)
            by_partition.setdefault(p, []).append(entry_id)
        return sum(self.store.delete_dead_letters(topic, by_partition))

    def purge_dead_letters(self, topic: str) -> int:
        """Drops every dead letter of the topic; returns how many there were."""
        t = self.topic(topic)
        count = self.dead_letter_count(topic)
        self.store.purge_dead_letters(topic, range(t.partitions))
        return count


def _id_key(entry_id: str) -> tuple[int, int]:
    ms, _, seq = entry_id.partition("-")
    return int(ms), int(seq or 0)
