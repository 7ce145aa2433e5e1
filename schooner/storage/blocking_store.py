"""BlockingStore: every round trip of the blocking callers (the MQ library, the Spark data source and
sink, the CLI and its console) as one list, on one blocking client and keyspace: Store's blocking
counterpart. Each method runs a Call or Steps written once in the sub-packages, with run_sync or
drive_sync, so no caller passes a client and a keyspace to storage functions by hand.

Blocking callers have no broker settings, so topics load with their own configs only (no broker
defaults). The MQ consumer and producer build their round trips as values (mq/engine.py, a sans-IO
state machine; producer._sending, shared with the asyncio producer) and send them through run_many
and drive. Their asyncio twins send the same values with calls.run_many / calls.drive on their own
client: a Store carries the broker's append lane, which they do not use.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeVar

from .cold import marks as cold_marks
from .cold.marks import TierMarks
from .groups import commits, state
from .groups.commits import CommittedOffset
from .groups.lag import PartitionLag, partition_lag
from .keys import Keyspace
from .log import append, lookup, read, repair, sizes
from .log.append import AppendResult, Batch
from .log.entry import Record
from .log.read import PartitionBounds
from .log.repair import Renumbered
from .log.transactions import AbortedTransaction
from .mq import admin as queue_admin
from .mq import dead_letters, leases, queue, retries
from .mq.admin import GroupInfo, Lag, PartitionStats
from .mq.dead_letters import DeadLetter
from .mq.queue import PendingEntry
from .redis import client, server_info
from .redis.calls import (
    BlockingRedis,
    Call,
    Steps,
    command,
    drive_sync,
    parallel,
    run_many_sync,
    run_sync,
    together,
)
from .redis.server_info import Memory
from .security.users import User, all_users, delete_user, get_user, put_user
from .share import partition as share
from .topic_partition import TopicPartition
from .topics import metadata
from .topics.metadata import Topic

T = TypeVar("T")

Entries = list[Any]  # a raw XRANGE reply: [[id, [field, value, ...]], ...]


class BlockingStore:
    """One blocking Redis client and keyspace. Making one opens no connection (the Spark reader makes
    them in executors); close() closes the client."""

    def __init__(self, redis: BlockingRedis, ks: Keyspace) -> None:
        self.redis = redis
        self.ks = ks
        self.sharded = client.is_cluster(redis)  # appends SPUBLISH their notices on a cluster

    @classmethod
    def connect(cls, url: str, keyspace: str | Keyspace) -> BlockingStore:
        ks = keyspace if isinstance(keyspace, Keyspace) else Keyspace(keyspace)
        return cls(client.connect_sync(url), ks)

    def run(self, call: Call[T]) -> T:
        return run_sync(self.redis, call)

    def run_many(self, calls: Sequence[Call[Any]]) -> list[Any]:
        """Calls in one pipelined round trip (the MQ engine's batches)."""
        return run_many_sync(self.redis, calls)

    def drive(self, steps: Steps[T]) -> T:
        return drive_sync(self.redis, steps)

    def close(self) -> None:
        self.redis.close()

    # -- topics -------------------------------------------------------------------------------------
    def topic(self, name: str) -> Topic | None:
        return self.run(metadata.load(self.ks, name, {}))

    def topics(self) -> list[Topic]:
        return self.drive(metadata.load_all(self.ks, {}))

    def create_topic(self, name: str, partitions: int, configs: Mapping[str, str]) -> Topic:
        return self.drive(metadata.create(self.ks, name, partitions, dict(configs), {}))

    # -- the log ------------------------------------------------------------------------------------
    def append(self, topic: Topic, partition: int, batch: Batch) -> AppendResult:
        """One append script call. Unlike Store.append it does not restamp a partition left unstamped:
        the caller sees UNKNOWN_PARTITION."""
        return self.run(append.append(self.ks, topic, partition, batch, sharded=self.sharded))

    def bounds_of(self, partitions: Sequence[tuple[Topic, int]]) -> list[PartitionBounds]:
        return self.drive(read.bounds_of(self.ks, partitions))

    def stable_bounds_of(self, partitions: Sequence[tuple[Topic, int]]) -> list[tuple[PartitionBounds, int]]:
        return self.drive(read.stable_bounds_of(self.ks, partitions))

    def offset_for_timestamp(self, topic: Topic, partition: int, timestamp: int) -> tuple[int, int] | None:
        return self.drive(lookup.offset_for_timestamp(self.ks, topic, partition, timestamp))

    def tier_marks(self, partitions: Sequence[tuple[Topic, int]]) -> list[TierMarks]:
        """Each partition's tier marks (cold/marks.py), in one round trip: the cold tier's extent."""
        return self.run_many(cold_marks.marks_of(self.ks, partitions)) if partitions else []

    def entries_in_ms(self, topic: Topic, partition: int, probes: Sequence[int], below: int) -> list[int]:
        return self.drive(read.entries_in_ms(self.ks, topic, partition, probes, below))

    def next_ends(self, wanted: Sequence[tuple[Topic, int, int, int, int]]) -> list[tuple[int, int]]:
        return self.drive(read.next_ends(self.ks, wanted))

    def read_range(self, topic: Topic, partition: int, start: bytes, end: int, count: int) -> Entries:
        return self.run(read.read_range(self.ks, topic, partition, start, end, count))

    def read_range_and_bounds(
        self, topic: Topic, partition: int, start: int, end: int, count: int
    ) -> tuple[Entries, PartitionBounds]:
        return self.drive(read.read_range_and_bounds(self.ks, topic, partition, start, end, count))

    def read_committed_range(
        self, topic: Topic, partition: int, start: int, end: int, count: int, exclusive: bool = False
    ) -> tuple[Entries, list[AbortedTransaction]]:
        return self.drive(read.read_committed_range(self.ks, topic, partition, start, end, count, exclusive))

    def read_committed_range_and_bounds(
        self, topic: Topic, partition: int, start: int, end: int, count: int
    ) -> tuple[Entries, PartitionBounds, list[AbortedTransaction]]:
        return self.drive(read.read_committed_range_and_bounds(self.ks, topic, partition, start, end, count))

    def needs_repair(self, topic: str, partition: int) -> bool:
        return self.drive(repair.needs_repair(self.ks, topic, partition))

    def renumber(self, topic: Topic, partition: int) -> Renumbered:
        return self.drive(repair.renumber(self.ks, topic, partition))

    def partition_sizes(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        return self.drive(sizes.partition_sizes(self.ks, partitions))

    # -- Kafka groups (read straight from Redis) ----------------------------------------------------
    def group_ids(self) -> list[str]:
        return self.run(state.list_ids(self.ks))

    def group_state(self, group_id: str) -> dict[str, str]:
        return self.run(state.load_state(self.ks, group_id))

    def committed_offsets(self, group_id: str) -> dict[TopicPartition, CommittedOffset]:
        return self.drive(commits.fetch(self.ks, group_id))

    def partition_lag(self, topic: Topic, partition: int, committed: int | None) -> PartitionLag:
        return self.drive(partition_lag(self.ks, topic, partition, committed))

    def share_topics(self, group: str) -> list[str]:
        return self.run(share.topics(self.ks, group))

    def share_states(
        self, partitions: Sequence[tuple[Topic, int]], group: str
    ) -> list[share.ShareState | None]:
        return self.drive(together([share.state(self.ks, t, p, group) for t, p in partitions]))

    # -- SCRAM users: deployment-wide, so this store's keyspace must be the base one ------------------
    def user(self, name: str) -> User | None:
        return self.run(get_user(self.ks, name))

    def users(self) -> list[User]:
        return self.run(all_users(self.ks))

    def put_user(self, user: User) -> None:
        self.run(put_user(self.ks, user))

    def delete_user(self, name: str) -> None:
        self.run(delete_user(self.ks, name))

    # -- the server ---------------------------------------------------------------------------------
    def server(self) -> dict[str, str]:
        return self.run(server_info.server())

    def memory(self) -> Memory:
        return self.run(server_info.memory())

    # -- the MQ library's queues (schooner.mq.Admin); partitions are the ones to ask ------------------
    def mq_stats(self, topic: Topic, partitions: Iterable[int]) -> list[PartitionStats]:
        return self.drive(parallel([queue_admin.stats(self.ks, topic, p) for p in partitions]))

    def mq_create_group(self, topic: Topic, partitions: Iterable[int], group: str, start: str) -> None:
        """Creates the group on every partition, then registers it with the topic's groups."""
        self.run_many([queue.create_group(self.ks, topic, p, group, start) for p in partitions])
        self.run(command("SADD", self.ks.mq_groups(topic.name), group))

    def mq_delete_group(self, topic: str, partitions: Iterable[int], group: str) -> None:
        """The group on every partition, with its leases and member registry, and the share partitions of
        a share group of the same name (the same queue). One round trip."""
        todo: list[Call[Any]] = []
        for p in partitions:
            todo.append(queue.destroy_group(self.ks, topic, p, group))
            todo.append(command("DEL", self.ks.mq_lease(topic, p, group)))
            todo.append(command("DEL", self.ks.share_partition(topic, p, group)))
        todo.append(command("DEL", self.ks.mq_members(topic, group)))
        todo.append(command("SREM", self.ks.mq_groups(topic), group))
        self.run_many(todo)

    def mq_group_names(self, topic: str) -> list[str]:
        """The groups registered with the topic (groups made with plain XGROUP CREATE are not)."""
        return self.run(leases.groups(self.ks, topic))

    def mq_groups(self, topic: str, partitions: Iterable[int]) -> list[list[GroupInfo]]:
        return self.run_many([queue_admin.groups(self.ks, topic, p) for p in partitions])

    def mq_share_groups(self, topic: str, groups: Sequence[str]) -> list[bool]:
        """For each group: whether a share group of that name consumes the topic."""
        return self.run_many([queue_admin.is_share_group(self.ks, topic, g) for g in groups])

    def mq_members(self, topic: str, group: str) -> list[tuple[str, int]]:
        """Registered members with their expiry (ms since the epoch)."""
        return self.run(leases.members(self.ks, topic, group))

    def mq_owners(self, topic: str, partitions: Iterable[int], group: str) -> list[tuple[str | None, int]]:
        """Per partition: the lease holder and its remaining milliseconds. One round trip."""
        todo: list[Call[Any]] = []
        for p in partitions:
            todo += [leases.holder(self.ks, topic, p, group), leases.remaining_ms(self.ks, topic, p, group)]
        replies = self.run_many(todo)
        return list(zip(replies[::2], replies[1::2], strict=True))

    def mq_lags(self, topic: str, partitions: Iterable[int], group: str) -> list[Lag | None]:
        return self.run_many([queue_admin.lag(self.ks, topic, p, group) for p in partitions])

    def mq_pending(
        self, topic: str, partition: int, group: str, start: bytes | str, count: int
    ) -> list[PendingEntry]:
        return self.run(queue.pending(self.ks, topic, partition, group, start, count))

    def mq_trim(self, topic: Topic, partitions: Iterable[int], before_offset: int) -> list[tuple[int, int]]:
        return self.run_many([queue_admin.trim(self.ks, topic, p, before_offset) for p in partitions])

    def scheduled_retries(self, topic: str, partitions: Iterable[int]) -> list[list[tuple[str, int]]]:
        return self.run_many([retries.scheduled(self.ks, topic, p) for p in partitions])

    def move_due_retries(self, topic: Topic, partitions: Iterable[int]) -> list[int]:
        return self.drive(parallel([retries.move_due(self.ks, topic, p) for p in partitions]))

    def dead_letters(
        self, topic: str, partitions: Iterable[int], start: str = "-", count: int = 100
    ) -> list[list[DeadLetter]]:
        return self.run_many([dead_letters.read(self.ks, topic, p, start, count) for p in partitions])

    def dead_letter_counts(self, topic: str, partitions: Iterable[int]) -> list[int]:
        return self.run_many([dead_letters.count(self.ks, topic, p) for p in partitions])

    def replay_dead_letter(self, letter: DeadLetter, record: Record) -> bool:
        """Moves the letter into its origin partition's retry schedule; False when it is gone."""
        return self.run(dead_letters.replay_to_origin(self.ks, letter, record))

    def delete_dead_letters(self, topic: str, entry_ids: Mapping[int, list[str]]) -> list[int]:
        """entry_ids by partition; how many each partition deleted."""
        return self.run_many([dead_letters.delete(self.ks, topic, p, ids) for p, ids in entry_ids.items()])

    def purge_dead_letters(self, topic: str, partitions: Iterable[int]) -> list[int]:
        return self.run_many([dead_letters.purge(self.ks, topic, p) for p in partitions])
