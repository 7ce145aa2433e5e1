"""Store: every round trip the broker and its coordinators make, as one list (in the manner of Tansu's
Storage trait). The coordinators' and the security's part of the list (share groups, group configs,
transactions, ACLs, SCRAM users) is in store_coordination.py, which Store inherits. Each method runs a
Call or Steps written once in the sub-packages; blocking callers (the MQ library, the Spark data source,
the CLI) have the same in BlockingStore (blocking_store.py).

Known exceptions, which run their own composition through Store.run / Store.drive:
- broker/metrics/gauges.py `_reads`: the metrics' reading of a keyspace, end offsets, committed offsets,
  lag and share partitions of many groups interleaved in two round trips (a method would only move it);
- broker/handlers/scram_users.py: the put_user / delete_user Calls it builds from an
  AlterUserScramCredentials request, sent together in one round trip.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeVar

from . import cluster, quotas
from .cluster import BrokerInfo
from .cold import marks as cold_marks
from .cold import source as cold_source
from .cold.marks import TierMarks
from .cold.source import ArchiveSlice
from .groups import commits, state
from .groups.commits import CommittedOffset, Owner
from .keys import Keyspace
from .log import append, compaction, lookup, producers, read, retention, sizes, transactions
from .log.acks import AcksAll
from .log.append import UNKNOWN_PARTITION, AppendResult, Batch
from .log.compaction import CompactionStep
from .log.producers import ProducerState
from .log.read import PartitionBounds, PartitionRead
from .redis import server_info
from .redis.calls import (
    Redis,
    RoundTripObserver,
    cluster_errors_as_storage_errors,
    observe_round_trips,
    parallel,
    refresh_topology,
    together,
)
from .redis.client import is_cluster
from .redis.cluster_lanes import ClusterLanes
from .redis.lane import PipelinedLane
from .redis.server_info import ACKS_ALL_TIMEOUT_MS, Memory
from .store_coordination import CoordinationCalls
from .topic_partition import TopicPartition
from .topics import metadata
from .topics.metadata import Topic
from .transactions import offsets as txn_offsets

T = TypeVar("T")


Lane = PipelinedLane | ClusterLanes


def open_lane(redis: Redis, timeout_ms: int | None = None) -> Lane:
    """The append lane: one pipelined connection, or on a Redis Cluster one per primary."""
    if is_cluster(redis):
        return ClusterLanes(redis, timeout_ms)  # type: ignore[arg-type]  # connect() types it plainly
    return PipelinedLane(redis, timeout_ms)


def open_read_lane(redis: Redis, timeout_ms: int | None = None) -> PipelinedLane | None:
    """The Fetch read lane on a single Redis (None on a cluster: reads go through redis-py's client)."""
    return None if is_cluster(redis) else PipelinedLane(redis, timeout_ms)


class Store(CoordinationCalls):
    """One Redis client and keyspace, the pipelined lane that carries appends in request order, and
    optionally a second pipelined lane for Fetch reads (cheaper per round trip than the client's)."""

    def __init__(
        self,
        redis: Redis,
        ks: Keyspace,
        lane: Lane | None = None,
        acks_all_fsync: bool = False,
        read_lane: PipelinedLane | None = None,
    ) -> None:
        self.redis = redis
        self.ks = ks
        self.lane = lane or open_lane(redis)
        self.read_lane = read_lane
        self.acks_all_fsync = acks_all_fsync
        written_on = self.lane.written_on if isinstance(self.lane, ClusterLanes) else None
        self.acks_all = AcksAll(redis, ks, acks_all_fsync, written_on)
        # On a Redis Cluster the append scripts SPUBLISH their wake-up notices (log/notices.py).
        self.sharded = is_cluster(redis)

    def with_keyspace(self, ks: Keyspace) -> Store:
        """A store for another keyspace (a tenant's) on this one's client and lane: no new connection.
        Close only this one."""
        return Store(self.redis, ks, self.lane, self.acks_all_fsync, self.read_lane)

    def observe(self, observer: RoundTripObserver | None) -> None:
        """Tells observer of every round trip on this store's client and lane (shared with the stores
        with_keyspace makes): the broker's metrics."""
        observe_round_trips(self.redis, observer)
        self.lane.observer = observer
        if self.read_lane is not None:
            self.read_lane.observer = observer

    async def close_lanes(self) -> None:
        await self.lane.close()
        if self.read_lane is not None:
            await self.read_lane.close()

    async def close(self) -> None:
        await self.close_lanes()
        await self.redis.aclose()

    # -- topics -------------------------------------------------------------------------------------
    async def topic(self, name: str, defaults: Mapping[str, str]) -> Topic | None:
        return await self.run(metadata.load(self.ks, name, defaults))

    async def topics(self, defaults: Mapping[str, str]) -> list[Topic]:
        return await self.drive(metadata.load_all(self.ks, defaults))

    async def topic_name(self, topic_id: uuid.UUID) -> str | None:
        return await self.run(metadata.name_of(self.ks, topic_id))

    async def create_topic(
        self,
        name: str,
        partitions: int,
        overrides: Mapping[str, str],
        defaults: Mapping[str, str],
        leaders: Mapping[int, int] | None = None,
    ) -> Topic:
        return await self.drive(metadata.create(self.ks, name, partitions, overrides, defaults, leaders))

    async def delete_topic(self, name: str, expected_id: uuid.UUID | None = None) -> None:
        await self.drive(metadata.delete(self.ks, name, expected_id))

    async def update_topic(self, name: str, **changes: Any) -> int:
        """metadata.update's changes (partitions, set_configs, delete_configs, replace_configs, leaders)."""
        return await self.run(metadata.update(self.ks, name, **changes))

    async def stamp_partitions(self, name: str, topic_id: uuid.UUID, partitions: range) -> None:
        await self.drive(metadata.stamp_partitions(self.ks, name, topic_id, partitions))

    # -- the log ------------------------------------------------------------------------------------
    async def send_append(
        self,
        topic: Topic,
        partition: int,
        batch: Batch,
        transactional_id: str | None = None,
        origin: str = "",
    ) -> asyncio.Future[AppendResult]:
        """Sends the append on the lane before returning (so appends keep their order); the future
        resolves when Redis has run it. Pass the future to settle_append. transactional_id: the
        producing request's, for a transactional batch; origin: the caller's token in the wake-up
        notice, when it wakes its own waiting fetches itself (log/notices.py)."""
        call = append.append(
            self.ks, topic, partition, batch, sharded=self.sharded, transactional_id=transactional_id,
            origin=origin,
        )  # fmt: skip
        return await self.lane.send_call(call)

    async def settle_append(
        self,
        topic: Topic,
        partition: int,
        batch: Batch,
        sent: asyncio.Future[AppendResult],
        transactional_id: str | None = None,
    ) -> AppendResult:
        """The append's result; a partition left unstamped (a create interrupted before its second step)
        is stamped and the batch appended again, when the topic still has this id and partition."""
        result = await sent
        if result.status == UNKNOWN_PARTITION:
            again = await self.drive(
                append.append_restamped(
                    self.ks, topic, partition, batch, sharded=self.sharded, transactional_id=transactional_id
                )
            )
            result = again or result
        return result

    async def append(
        self, topic: Topic, partition: int, batch: Batch, transactional_id: str | None = None
    ) -> AppendResult:
        sent = await self.send_append(topic, partition, batch, transactional_id)
        return await self.settle_append(topic, partition, batch, sent, transactional_id)

    async def wait_durable(self, partitions: Iterable[tuple[Topic, int]]) -> bool:
        """acks=all, after appends to these partitions: WAIT for the replicas their Redis has (and
        WAITAOF for its fsync with acks_all_fsync). False if fewer replicas took them in time."""
        return await self.acks_all.wait(((t.name, p) for t, p in partitions), ACKS_ALL_TIMEOUT_MS)

    async def bounds(self, topic: Topic, partition: int) -> PartitionBounds:
        return await self.drive(read.bounds(self.ks, topic, partition))

    async def read(
        self, topic: Topic, partition: int, offset: int, max_entries: int, committed: bool = False
    ) -> PartitionRead:
        return await self.drive(read.read(self.ks, topic, partition, offset, max_entries, committed))

    async def read_many(
        self, reads: Sequence[tuple[Topic, int, int, int]], committed: bool = False
    ) -> list[PartitionRead]:
        """read() of many (topic, partition, offset, max_entries) side by side: one round trip for all
        (and _dense_state's), on one connection however many partitions a Fetch names."""
        if self.read_lane is None:  # a Redis Cluster (or a store without one): redis-py routes by slot
            return await self.drive(
                parallel([read.read(self.ks, t, p, o, n, committed) for t, p, o, n in reads])
            )
        # On one Redis, through the read lane: a fetch of many partitions sends two commands for each, and
        # the lane's cost per command is a fraction of redis-py's pipeline's.
        return await self.read_lane.drive(read.read_many(self.ks, reads, committed))

    async def stable_bounds(self, topic: Topic, partition: int) -> tuple[PartitionBounds, int]:
        """The bounds and the last stable offset."""
        return await self.drive(read.stable_bounds(self.ks, topic, partition))

    async def archive_slice(self, topic: Topic, partition: int, start: int, max_records: int) -> ArchiveSlice:
        """Up to max_records committed entries from `start`, never past the LSO: a cold archive step's
        input (cold/source.py). On one Redis through the read lane, as fetches: redis-py's pipeline cost
        the archiver more than the Delta write (a profile of a tiered topic fed at its archiver's pace).
        A topic whose table decodes keys or values gets the schema documents its records name too (one
        more round trip; none for a raw table)."""
        steps = cold_source.archive_slice(self.ks, topic, partition, start, max_records)
        if self.read_lane is None:
            return await self.drive(steps)
        return await self.read_lane.drive(steps)

    # -- the cold tier's marks in Redis (cold/marks.py) ---------------------------------------------
    async def tier_marks(self, partitions: Sequence[tuple[Topic, int]]) -> list[TierMarks]:
        """Each tiered partition's archived end and cold start: one HMGET each, in one round trip."""
        return await self.drive(together(cold_marks.marks_of(self.ks, partitions))) if partitions else []

    async def record_tier(
        self,
        topic: Topic,
        partition: int,
        archived_end: int = -1,
        first: int | None = None,
        trimmed_below: int | None = None,
    ) -> TierMarks | None:
        return await self.run(
            cold_marks.record(self.ks, topic, partition, archived_end, first, trimmed_below)
        )

    async def trim_tiered(self, topic: Topic, partition: int, to_archived_end: bool = False) -> int:
        """Trims Redis to local.retention.* (or, `to_archived_end`, all that is archived), never at or
        past the archived end."""
        call = cold_marks.trim_hot(
            self.ks, topic, partition, topic.local_retention_ms, topic.local_retention_bytes, to_archived_end
        )
        return await self.run(call)

    async def claim_archiving(self, topic: Topic, partition: int, token: str, ttl_ms: int) -> bool:
        return await self.run(cold_marks.claim(self.ks, topic, partition, token, ttl_ms))

    async def release_archiving(self, topic: Topic, partition: int, token: str) -> bool:
        return await self.run(cold_marks.release(self.ks, topic, partition, token))

    async def write_markers(
        self,
        markers: Sequence[tuple[Topic, int]],
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        end_version: int = -1,
    ) -> list[transactions.MarkerResult]:
        """Ends a transaction in each partition, one script per partition, all in one pipeline."""
        calls = [
            transactions.write_marker(
                self.ks,
                t,
                p,
                producer_id,
                producer_epoch,
                commit,
                sharded=self.sharded,
                end_version=end_version,
            )
            for t, p in markers
        ]
        return await self.drive(together(calls)) if calls else []

    async def tips(self, partitions: Sequence[TopicPartition]) -> list[bytes | None]:
        """Each partition's last entry ID (read.tip), one command each, all in one round trip."""
        return await self.drive(together([read.tip(self.ks, tp.topic, tp.partition) for tp in partitions]))

    async def stage_txn_offsets(
        self, group_id: str, producer_id: int, offsets: Mapping[TopicPartition, tuple[int, int, str | None]]
    ) -> None:
        """TxnOffsetCommit: offsets that become the group's when the producer's transaction commits."""
        calls = txn_offsets.stage(self.ks, group_id, producer_id, offsets)
        if calls:
            await self.drive(together(calls))

    async def end_txn_offsets(self, group_ids: Iterable[str], producer_id: int, commit: bool) -> None:
        """The producer's staged offsets become each group's (commit) or are dropped, in one round trip."""
        calls = [txn_offsets.end(self.ks, g, producer_id, commit) for g in group_ids]
        if calls:
            await self.drive(together(calls))

    async def pending_txn_offsets(
        self, group_id: str, partitions: Iterable[TopicPartition] | None
    ) -> set[TopicPartition]:
        return await self.run(txn_offsets.pending(self.ks, group_id, partitions))

    async def open_transactions(self, topic: Topic, partition: int) -> list[transactions.OpenTransaction]:
        return await self.run(transactions.open_transactions(self.ks, topic, partition))

    async def offset_for_timestamp(
        self, topic: Topic, partition: int, timestamp: int
    ) -> tuple[int, int] | None:
        return await self.drive(lookup.offset_for_timestamp(self.ks, topic, partition, timestamp))

    async def max_timestamp(self, topic: Topic, partition: int) -> tuple[int, int] | None:
        return await self.drive(lookup.max_timestamp(self.ks, topic, partition))

    async def delete_records(self, topic: Topic, partition: int, before_offset: int) -> int:
        return await self.run(retention.delete_records(self.ks, topic, partition, before_offset))

    async def apply_retention(self, topic: Topic, partition: int) -> int:
        if not retention.has_retention(topic):
            return 0
        return await self.run(retention.apply_retention(self.ks, topic, partition))

    # -- Kafka consumer groups ----------------------------------------------------------------------
    async def claim_group(self, group_id: str, broker_id: int) -> dict[str, str]:
        return await self.run(state.claim(self.ks, group_id, broker_id))

    async def save_group(self, group_id: str, owner: Owner, fields: Mapping[str, Any]) -> bool:
        return await self.drive(state.save(self.ks, group_id, owner.broker_id, owner.epoch, fields))

    async def delete_group(self, group_id: str) -> int:
        return await self.drive(state.delete(self.ks, group_id))

    async def group_exists(self, group_id: str) -> bool:
        return await self.run(state.exists(self.ks, group_id))

    async def group_ids(self) -> list[str]:
        return await self.run(state.list_ids(self.ks))

    async def group_states(self, group_ids: Iterable[str]) -> dict[str, dict[str, str]]:
        return await self.drive(state.load_states(self.ks, group_ids))

    async def commit_offsets(
        self, group_id: str, owner: Owner, offsets: Mapping[TopicPartition, tuple[int, int, str | None]]
    ) -> bool:
        committed = await self.drive(commits.commit(self.ks, group_id, owner, offsets))
        if committed:
            await self.durable([self.ks.group_offsets(group_id)])
        return committed

    async def committed_offsets(
        self, group_id: str, partitions: Iterable[TopicPartition] | None = None
    ) -> dict[TopicPartition, CommittedOffset]:
        return await self.drive(commits.fetch(self.ks, group_id, partitions))

    async def delete_offsets(self, group_id: str, partitions: Iterable[TopicPartition]) -> int:
        return await self.drive(commits.delete_offsets(self.ks, group_id, partitions))

    # -- brokers and the server ---------------------------------------------------------------------
    async def allocate_broker_id(self) -> int:
        return await self.run(cluster.allocate_broker_id(self.ks))

    async def heartbeat(self, me: BrokerInfo, ttl_ms: int) -> None:
        await self.drive(cluster.heartbeat(self.ks, me, ttl_ms))

    async def unregister(self, broker_id: int) -> None:
        await self.drive(cluster.unregister(self.ks, broker_id))

    async def live_brokers(self, live_at_ms: int | None = None) -> list[BrokerInfo]:
        return await self.drive(cluster.live_brokers(self.ks, live_at_ms))

    async def cluster_id(self) -> str:
        return await self.drive(cluster.cluster_id(self.ks))

    async def next_producer_id(self) -> int:
        return await self.run(cluster.next_producer_id(self.ks))

    async def memory(self) -> Memory:
        """Of the one Redis, or summed over a cluster's primaries."""
        return server_info.combined(await self.memories())

    async def memories(self) -> list[Memory]:
        """Of the one Redis, or of each of a cluster's primaries."""
        if is_cluster(self.redis):
            cluster: Any = self.redis
            with cluster_errors_as_storage_errors(cluster):
                await refresh_topology(cluster)
                # One node at a time as a target: redis-py answers a one-primary cluster's "primaries"
                # with that node's reply, not with a dict by node.
                per_node = await asyncio.gather(
                    *(
                        cluster.execute_command("INFO", "memory", target_nodes=n)
                        for n in cluster.get_primaries()
                    )
                )
            return [server_info.parse_memory(info) for info in per_node]
        return [await self.run(server_info.memory())]

    # -- log dirs -----------------------------------------------------------------------------------
    async def partition_sizes(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        return await self.drive(sizes.partition_sizes(self.ks, partitions))

    # -- idempotent producers -----------------------------------------------------------------------
    async def producer_states(self, topic: Topic, partition: int) -> list[ProducerState]:
        return await self.run(producers.states(self.ks, topic, partition))

    async def producer_state(self, topic: Topic, partition: int, producer_id: int) -> ProducerState | None:
        return await self.run(producers.state(self.ks, topic, partition, producer_id))

    async def expire_producers(self, topic: Topic, partition: int, expiration_ms: int) -> int:
        return await self.drive(producers.expire(self.ks, topic, partition, expiration_ms))

    # -- client quotas: deployment-wide, so under the base keyspace the caller names ----------------
    async def client_quotas(self, base: Keyspace) -> dict[quotas.Entity, dict[str, float]]:
        return await self.drive(quotas.load_all(base))

    async def alter_client_quotas(self, base: Keyspace, changes: Sequence[quotas.QuotaChange]) -> None:
        """Each entity's change is one script, all sent in one pipelined round trip."""
        await self.drive(together([quotas.alter(base, c.entity, c.set_values, c.remove) for c in changes]))

    # -- log compaction -----------------------------------------------------------------------------
    async def claim_compaction(self, topic: Topic, partition: int, token: str) -> bool:
        return await self.run(compaction.claim(self.ks, topic, partition, token))

    async def compaction_step(self, topic: Topic, partition: int, token: str, limit: int) -> CompactionStep:
        return await self.run(compaction.step(self.ks, topic, partition, token, limit))

    async def release_compaction(self, topic: Topic, partition: int, token: str) -> bool:
        return await self.run(compaction.release(self.ks, topic, partition, token))
