"""The storage layer on a real Redis Cluster (3 primaries, a replica each): cluster mode found from one
node's URL or forced by it, a batch of calls over 12 partitions on all three primaries in one go,
scripts loaded again after the servers forgot them, the append lane's one connection per primary, and
acks=all waiting on the replicas of each primary that took appends."""

from __future__ import annotations

import asyncio
import os
import signal
from typing import Any

import pytest
import redis
from redis.exceptions import MovedError

from schooner.storage.groups.commits import Owner
from schooner.storage.keys import Keyspace
from schooner.storage.log import append as log_append
from schooner.storage.log import read as log_read
from schooner.storage.log.acks import AcksAll, NotDurable
from schooner.storage.log.append import APPENDED, RecordBatch
from schooner.storage.redis import calls, client
from schooner.storage.redis.cluster_lanes import ClusterLanes
from schooner.storage.share.partition import AckBatch, Limits
from schooner.storage.store import Store, open_lane
from schooner.storage.topic_partition import TopicPartition
from schooner.storage.topics import metadata

PARTITIONS = 12


class R:
    def __init__(self, value: bytes) -> None:
        self.value = value
        self.key: bytes | None = None
        self.timestamp = 1_700_000_000_000
        self.headers: list[tuple[str, bytes | None]] = []


def test_cluster_mode_is_found_from_any_node_or_forced_by_the_url(redis_cluster, redis_server) -> None:
    for node in redis_cluster.nodes:
        assert client.is_cluster(client.connect_sync(node.url))
        assert client.is_cluster(client.connect(node.url))
    assert client.is_cluster(client.connect_sync(redis_cluster.url + "?cluster=yes"))
    if not client.is_cluster(client.connect_sync(redis_server.url)):  # the suite's single server
        assert not client.is_cluster(client.connect(redis_server.url))
    # Forced off, a node answers for its own slots only: the error a plain client meets.
    plain = client.connect_sync(redis_cluster.url + "?cluster=no")
    assert not client.is_cluster(plain)
    ks = Keyspace("forced")
    with pytest.raises(MovedError):
        for p in range(PARTITIONS):
            plain.xlen(ks.stream("t", p))


def test_a_batch_over_partitions_on_every_primary(redis_cluster, keyspace) -> None:
    async def body() -> None:
        r = client.connect(redis_cluster.url, 5000)
        ks = Keyspace(keyspace)
        try:
            topic = await calls.drive(
                r, metadata.create(ks, "spread", PARTITIONS, {"retention.ms": "-1"}, {})
            )
            await r.initialize()
            owners = {r.get_node_from_key(ks.stream("spread", p)).name for p in range(PARTITIONS)}
            assert len(owners) == 3
            appends = [
                log_append.append(ks, topic, p, RecordBatch([R(b"p%d-%d" % (p, i)) for i in range(p + 1)]))
                for p in range(PARTITIONS)
            ]
            results = await calls.run_many(r, appends)
            assert [res.status for res in results] == [APPENDED] * PARTITIONS
            assert [res.last_offset - res.base_offset + 1 for res in results] == list(
                range(1, PARTITIONS + 1)
            )
            reads = await calls.drive(
                r, calls.parallel([log_read.read(ks, topic, p, 0, 100) for p in range(PARTITIONS)])
            )
            for p, read in enumerate(reads):
                assert len(read.entries) == p + 1 and read.high_watermark == p + 1
            # Stream reads that redis-py routes by asking the server are sent to their node directly.
            xreads = [
                calls.command("XREAD", "COUNT", 1, "STREAMS", ks.stream("spread", p), "0-0")
                for p in range(PARTITIONS)
            ]
            replies = await calls.run_many(r, xreads)
            streams = [list(reply) if isinstance(reply, dict) else [s for s, _ in reply] for reply in replies]
            assert streams == [[ks.stream("spread", p).encode()] for p in range(PARTITIONS)]
        finally:
            await r.aclose()

    asyncio.run(body())


def test_scripts_are_loaded_again_on_every_primary_after_a_flush(redis_cluster, keyspace) -> None:
    async def body() -> None:
        r = client.connect(redis_cluster.url, 5000)
        ks = Keyspace(keyspace)
        try:
            topic = await calls.drive(
                r, metadata.create(ks, "flushed", PARTITIONS, {"retention.ms": "-1"}, {})
            )
            batch = [log_append.append(ks, topic, p, RecordBatch([R(b"a")])) for p in range(PARTITIONS)]
            assert [res.status for res in await calls.run_many(r, batch)] == [APPENDED] * PARTITIONS
            # What a failover does to a promoted replica: it has no scripts.
            await r.execute_command("SCRIPT FLUSH", target_nodes="primaries")
            batch = [log_append.append(ks, topic, p, RecordBatch([R(b"b")])) for p in range(PARTITIONS)]
            assert [res.status for res in await calls.run_many(r, batch)] == [APPENDED] * PARTITIONS
        finally:
            await r.aclose()

    asyncio.run(body())


def test_the_append_lane_keeps_one_connection_per_primary_and_acks_all_waits_for_replicas(
    redis_cluster, keyspace
) -> None:
    async def body() -> None:
        r = client.connect(redis_cluster.url, 5000)
        store = Store(r, Keyspace(keyspace), open_lane(r, 5000))
        assert isinstance(store.lane, ClusterLanes)
        try:
            topic = await store.create_topic("laned", PARTITIONS, {"retention.ms": "-1"}, {})
            results = await asyncio.gather(
                *(
                    store.append(topic, p, RecordBatch([R(b"x%d" % i) for i in range(3)]))
                    for p in range(PARTITIONS)
                )
            )
            assert all(res.status == APPENDED and res.base_offset == 0 for res in results)
            assert len(store.lane._lanes) == 3  # one pipelined connection per primary
            assert await store.wait_durable([(topic, p) for p in range(PARTITIONS)])
            # Each replica holds what acks=all acknowledged.
            for p in range(PARTITIONS):
                node = r.get_node_from_key(store.ks.stream("laned", p))
                replica = _replica_of(redis_cluster, node.port)
                assert replica.xlen(store.ks.stream("laned", p)) == 3
                replica.close()
        finally:
            await store.close()

    asyncio.run(body())


def _replica_of(cluster: Any, primary_port: int) -> redis.Redis:
    for n in cluster.nodes:
        c = redis.Redis(port=n.port)
        role = c.execute_command("ROLE")
        if role[0] == b"slave" and int(role[2]) == primary_port:
            c.execute_command("READONLY")
            return c
        c.close()
    raise AssertionError(f"no replica of {primary_port}")


def test_acks_all_waits_for_the_replica_of_the_primary_that_took_the_appends(redis_cluster, keyspace) -> None:
    """WAIT goes on a connection of its own after a marker write, so it covers the lane's appends; a
    stopped replica makes it fall short on its own primary only."""

    async def body() -> None:
        r = client.connect(redis_cluster.url, 5000)
        store = Store(r, Keyspace(keyspace), open_lane(r, 5000))
        acks = AcksAll(r, store.ks)
        try:
            topic = await store.create_topic("waited", PARTITIONS, {"retention.ms": "-1"}, {})
            await r.initialize()
            nodes = {p: r.get_node_from_key(store.ks.stream("waited", p)).port for p in range(PARTITIONS)}
            stopped_primary = nodes[0]
            other = next(p for p in range(PARTITIONS) if nodes[p] != stopped_primary)
            replica = _replica_process(redis_cluster, stopped_primary)
            await store.append(topic, 0, RecordBatch([R(b"before")]))
            assert await acks.wait([("waited", 0)], 300)
            os.kill(replica, signal.SIGSTOP)
            try:
                await store.append(topic, 0, RecordBatch([R(b"during")]))
                await store.append(topic, other, RecordBatch([R(b"elsewhere")]))
                assert not await acks.wait([("waited", 0)], 300)
                assert await acks.wait([("waited", other)], 300)
            finally:
                os.kill(replica, signal.SIGCONT)
            assert await acks.wait([("waited", 0)], 2000)
        finally:
            await store.close()

    asyncio.run(body())


def _replica_process(cluster: Any, primary_port: int) -> int:
    c = _replica_of(cluster, primary_port)
    port = c.connection_pool.connection_kwargs["port"]
    c.close()
    pid = cluster.node_for_port(port).pid
    assert pid is not None
    return int(pid)


def test_acknowledgements_commits_and_transaction_ends_wait_for_the_replica(redis_cluster, keyspace) -> None:
    """A share acknowledgement, an offset commit and a transaction's end are answered once the replica
    of their primary has them, as an append under acks=all: with that replica stopped each raises
    NotDurable (a retriable error for the client), and with it running each returns."""

    async def body() -> None:
        r = client.connect(redis_cluster.url, 15_000)  # past the 5 s WAIT
        store = Store(r, Keyspace(keyspace), open_lane(r, 5000))
        try:
            topic = await store.create_topic("durable", 1, {"retention.ms": "-1"}, {})
            await store.append(topic, 0, RecordBatch([R(b"a"), R(b"b")]))
            await r.initialize()
            group = "durable-group"
            owner = Owner(1, (await store.claim_group(group, 1))["owner_epoch"])
            limits = Limits(
                lock_ms=30_000, delivery_limit=5, max_locks=200, read_committed=False, dead_letters=False
            )
            await store.share_acquire([(topic, 0)], group, "m", 10, limits, ["0"])
            ack = [(topic, 0, [AckBatch(0, 0, (1,))])]
            commit = {TopicPartition("durable", 0): (1, -1, None)}

            def replica_of(key: str) -> int:
                return _replica_process(redis_cluster, r.get_node_from_key(key).port)

            share_key = store.ks.share_partition("durable", 0, group)
            offsets_key = store.ks.group_offsets(group)
            txn_key = store.ks.transaction("durable-txn")
            for key, write in (
                (share_key, lambda: store.share_acknowledge(ack, group, "m", limits)),
                (offsets_key, lambda: store.commit_offsets(group, owner, commit)),
                (txn_key, lambda: store.transaction_durable("durable-txn", [], [])),
            ):
                replica = replica_of(key)
                os.kill(replica, signal.SIGSTOP)
                try:
                    with pytest.raises(NotDurable):
                        await write()
                finally:
                    os.kill(replica, signal.SIGCONT)
                await write()  # the same write again, with the replica running: answered
            state = await store.share_states([(topic, 0)], group)
            assert state[0] is not None
        finally:
            await store.close()

    asyncio.run(body())
