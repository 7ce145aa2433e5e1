"""The append lanes on a cluster (storage/redis/cluster_lanes.py) and calls.py's cluster runner: when a
primary dies the other primaries keep serving, even when the dead one was the cluster client's
default node (the node redis-py's own initialize() asks for COMMAND); when a slot moves, a refused
call is not run later, and acks=all waits where the writes went."""

from __future__ import annotations

import asyncio
import os
import signal
from typing import Any

import pytest
from redis.cluster import key_slot
from redis.exceptions import AskError, MovedError, TryAgainError
from redis.exceptions import ConnectionError as RedisConnectionError

from schooner.storage.keys import Keyspace
from schooner.storage.log.acks import AcksAll
from schooner.storage.redis import client
from schooner.storage.redis.calls import command, mark_topology_stale, run
from schooner.storage.redis.cluster_lanes import ClusterLanes
from tests.cluster.helpers import SlotMove, replica_of

TIMEOUT_MS = 2000


def test_the_other_primaries_serve_while_the_default_node_is_dead(cluster_factory, keyspace) -> None:
    cluster = cluster_factory(replicas=0)  # no replica: the dead primary stays dead
    asyncio.run(_with_default_node_dead(cluster, keyspace))


async def _with_default_node_dead(cluster, keyspace: str) -> None:
    redis = client.connect(cluster.url, TIMEOUT_MS)
    lanes = ClusterLanes(redis, TIMEOUT_MS)  # type: ignore[arg-type]
    try:
        await redis.initialize()
        keys: dict[int, str] = {}  # a key on each primary, by port
        i = 0
        while len(keys) < 3:
            key = f"{keyspace}:{{k{i}}}"
            keys.setdefault(redis.get_node_from_key(key).port, key)
            i += 1
        for key in keys.values():
            assert await (await lanes.send_call(command("INCR", key))) == 1
        dead = redis.get_default_node().port
        cluster.node_for_port(dead).kill()

        with pytest.raises(RedisConnectionError):  # the lane's connection to it breaks...
            await (await lanes.send_call(command("INCR", keys[dead])))
        mark_topology_stale(redis)  # ...and so does a pipeline's (either marks the slot map stale)
        for port, key in keys.items():
            if port == dead:
                continue
            assert await (await lanes.send_call(command("INCR", key))) == 2
            assert await run(redis, command("INCR", key)) == 3
        with pytest.raises(RedisConnectionError):
            await run(redis, command("INCR", keys[dead]))
    finally:
        await lanes.close()
        await redis.aclose()


def _partition_on(redis: Any, ks: Keyspace, port: int, topic: str) -> tuple[str, int]:
    """A partition of `topic` whose slot lives on the primary at `port`."""
    i = 0
    while redis.get_node_from_key(ks.stream(topic, i)).port != port:
        i += 1
    return topic, i


def test_a_call_refused_for_a_moving_slot_fails_unrun_and_the_next_goes_to_the_new_owner(
    cluster_factory, keyspace
) -> None:
    """A moved slot (MOVED), a slot being moved (ASK for a key the source lacks, TRYAGAIN for a call on
        keys of which it has some): the refused call fails with the node's error and is not sent again
        (it would run behind the calls sent after it); the next call goes where the slot now is, and
        acks=all waits on the replicas of the node that ran each partition's last write, and refuses a
    partition whose last write ran on a node that no longer owns its slot (the target's replica is
    stopped here)."""
    cluster = cluster_factory()
    asyncio.run(_through_a_slot_move(cluster, keyspace))


async def _through_a_slot_move(cluster, keyspace: str) -> None:
    redis = client.connect(cluster.url, TIMEOUT_MS)
    lanes = ClusterLanes(redis, TIMEOUT_MS)  # type: ignore[arg-type]
    ks = Keyspace(keyspace)
    acks = AcksAll(redis, ks, written_on=lanes.written_on)
    try:
        await redis.initialize()
        source, target = sorted(n.port for n in redis.get_primaries())[:2]
        m, a, b = (_partition_on(redis, ks, source, tag) for tag in "mab")
        moved, asked, busy = (ks.stream(*tp) for tp in (m, a, b))
        for key in (moved, asked, busy, busy + ":other"):
            assert await (await lanes.send_call(command("RPUSH", key, "first"))) == 1
        assert await acks.wait([m, a, b], 1000)
        stopped = cluster.node_for_port(replica_of(cluster, target))
        os.kill(stopped.pid, signal.SIGSTOP)
        try:
            # MOVED: the slot is the target's now; the lanes still think it is the source's.
            SlotMove(cluster, key_slot(moved.encode()), source, target).finish()
            with pytest.raises(MovedError):
                await (await lanes.send_call(command("RPUSH", moved, "refused")))
            assert await (await lanes.send_call(command("RPUSH", moved, "next"))) == 2
            assert not await acks.wait([m], 1000)  # "next" ran on the target, whose replica is stopped

            # ASK: the slot is being moved and the key is not on the source (a new key).
            ask = SlotMove(cluster, key_slot(asked.encode()), source, target)
            ask.begin()
            ask.migrate(asked)
            with pytest.raises(AskError):
                await (await lanes.send_call(command("RPUSH", asked, "refused")))

            # TRYAGAIN: of two keys of the call, one has moved.
            again = SlotMove(cluster, key_slot(busy.encode()), source, target)
            again.begin()
            again.migrate(busy)
            with pytest.raises(TryAgainError):  # the source has the first key, not the second
                await (await lanes.send_call(command("LMOVE", busy + ":other", busy, "LEFT", "RIGHT")))
            ask.finish()
            again.finish()
        finally:
            os.kill(stopped.pid, signal.SIGCONT)
        expected = {moved: [b"first", b"next"], asked: [b"first"], busy: [b"first"]}
        for key, values in {**expected, busy + ":other": [b"first"]}.items():
            assert await run(redis, command("LRANGE", key, 0, -1)) == values  # none sent again
            assert redis.get_node_from_key(key).port == target
        assert await (await lanes.send_call(command("RPUSH", asked, "later"))) == 2
        assert await acks.wait([m, a], 5000)
        # busy's last write through the lanes ran on the source, and its slot is the target's now.
        assert not await acks.wait([b], 5000)
    finally:
        await lanes.close()
        await redis.aclose()
