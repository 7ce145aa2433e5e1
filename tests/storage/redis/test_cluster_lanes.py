"""The append lanes on a cluster (storage/redis/cluster_lanes.py) and calls.py's cluster runner when a
primary dies: the other primaries keep serving, even when the dead one was the cluster client's
default node (the node redis-py's own initialize() asks for COMMAND)."""

from __future__ import annotations

import asyncio

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError

from schooner.storage.redis import client
from schooner.storage.redis.calls import command, mark_topology_stale, run
from schooner.storage.redis.cluster_lanes import ClusterLanes

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
