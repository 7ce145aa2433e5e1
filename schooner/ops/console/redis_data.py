"""The Redis side of the console: Redis memory and version, partition sizes, share partitions' record
counts, and the MQ library's groups and dead letters (schooner.mq.admin). Blocking: the pages call it
in a thread.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ...mq.admin import Admin, GroupStats, Ownership, PendingMessage, QueuePartitionLag
from ...storage.blocking_store import BlockingStore
from ...storage.mq.dead_letters import DeadLetter
from ...storage.redis.server_info import Memory
from ...storage.topic_partition import TopicPartition

MQ_TOPICS_SHOWN = 200  # the MQ page looks at this many topics at most


@dataclass(frozen=True)
class RedisInfo:
    version: str
    mode: str
    memory: Memory


@dataclass(frozen=True)
class MqTopic:
    name: str
    partitions: int
    groups: list[GroupStats]
    dead_letters: int


@dataclass(frozen=True)
class MqGroup:
    stats: GroupStats
    owners: list[Ownership]
    lag: list[QueuePartitionLag]


@dataclass(frozen=True)
class ShareRow:
    topic: str
    partition: int
    start_offset: int
    in_flight: int
    archived: int
    dead_lettered: int
    lag: int | None


class RedisSide:
    def __init__(self, url: str, keyspace: str) -> None:
        self.store = BlockingStore.connect(url, keyspace)
        self.mq = Admin(self.store.redis, keyspace=self.store.ks)

    def close(self) -> None:
        self.store.close()

    def info(self) -> RedisInfo:
        server = self.store.server()
        return RedisInfo(server.get("redis_version", "?"), server.get("redis_mode", "?"), self.store.memory())

    def sizes(self, partitions: Iterable[tuple[str, int]]) -> dict[tuple[str, int], int]:
        tps = [TopicPartition(t, p) for t, p in partitions]
        found = self.store.partition_sizes(tps)
        return {(tp.topic, tp.partition): size for tp, size in found.items()}

    def share_partitions(self, group_id: str) -> list[ShareRow]:
        """What Redis adds to a share group's partitions: records in flight, archived, dead-lettered."""
        names = set(self.store.share_topics(group_id))
        topics = [t for t in self.store.topics() if t.name in names]
        pairs = [(t, p) for t in sorted(topics, key=lambda t: t.name) for p in range(t.partitions)]
        states = self.store.share_states(pairs, group_id)
        return [
            ShareRow(t.name, p, s.start_offset, s.in_flight, s.archived, s.dead_lettered,
                     None if s.lag < 0 else s.lag)
            for (t, p), s in zip(pairs, states, strict=True)
            if s is not None
        ]  # fmt: skip

    # -- the MQ library ------------------------------------------------------------------------------
    def mq_topics(self) -> list[MqTopic]:
        """Topics that MQ groups consume or that hold dead letters."""
        out = []
        for t in self.store.topics()[:MQ_TOPICS_SHOWN]:
            groups = self.mq.groups(t.name)
            letters = self.mq.dead_letter_count(t.name)
            if groups or letters:
                out.append(MqTopic(t.name, t.partitions, groups, letters))
        return out

    def mq_groups(self, topic: str) -> list[MqGroup]:
        out = []
        for g in self.mq.groups(topic):
            try:
                lag = self.mq.lag(topic, g.name)
            except LookupError:  # missing on some partition: show what there is
                lag = []
            out.append(MqGroup(g, self.mq.owners(topic, g.name), lag))
        return out

    def pending(self, topic: str, group: str, limit: int = 50) -> list[PendingMessage]:
        return self.mq.pending(topic, group, limit=limit)

    def dead_letters(self, topic: str, limit: int = 100) -> list[DeadLetter]:
        return self.mq.dead_letters(topic, limit=limit)

    def replay(self, topic: str, letter_id: str) -> bool:
        return self.mq.replay(topic, letter_id) is True

    def delete_letters(self, topic: str, letter_ids: list[str]) -> int:
        return self.mq.delete_dead_letters(topic, letter_ids)
