"""The append lane on a Redis Cluster: one PipelinedLane per primary, a call going to the lane of the
node that owns its first key's slot. Appends to one partition stay on one connection, in order.

A call the node refuses because the slot moved (MOVED, ASK) or is being moved (TRYAGAIN) did not run:
it is sent again through redis-py's cluster client, which follows the redirection, and the slot map
is fetched again for the calls after it. A node that is gone fails its calls with a connection error
(a retriable answer for the client) and also makes the map be fetched again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, TypeVar

import redis.asyncio.cluster as acluster
from redis.exceptions import SlotNotCoveredError

from .calls import Call, mark_topology_stale, refresh_topology, run
from .lane import REDIRECTS, PipelinedLane

T = TypeVar("T")


class ClusterLanes:
    def __init__(self, client: acluster.RedisCluster, timeout_ms: int | None = None) -> None:
        self._client = client
        self._timeout_ms = timeout_ms
        self._lanes: dict[str, PipelinedLane] = {}

    def _lane_for(self, key: str) -> PipelinedLane:
        node = self._client.get_node_from_key(key)
        if node is None:
            raise SlotNotCoveredError(f"no node serves the slot of {key}")
        lane = self._lanes.get(node.name)
        if lane is None:
            make = node.connection_class
            kwargs = node.connection_kwargs
            lane = self._lanes[node.name] = PipelinedLane(
                None, self._timeout_ms, make_connection=lambda: make(**kwargs)
            )
        return lane

    async def send_call(self, call: Call[T]) -> asyncio.Future[T]:
        """Sends the call on its node's lane now and returns a future for its parsed reply."""
        key = call.keys[0] if call.script else str(call.args[1])
        try:
            await refresh_topology(self._client)  # fetches the slot map when marked stale
            sent = await self._lane_for(key).send_call(call)
        except Exception:
            mark_topology_stale(self._client)
            raise
        loop = asyncio.get_running_loop()
        result: asyncio.Future[T] = loop.create_future()

        def done(f: asyncio.Future[T]) -> None:
            if result.done():
                return
            exc = f.exception()
            if exc is None:
                result.set_result(f.result())
                return
            mark_topology_stale(self._client)
            if isinstance(exc, REDIRECTS):
                loop.create_task(self._redirect(result, call))
            else:
                result.set_exception(exc)

        sent.add_done_callback(done)
        return result

    async def _redirect(self, result: asyncio.Future[T], call: Call[T]) -> None:
        try:
            reply: T = await run(self._client, call)  # type: ignore[arg-type]  # a cluster client is one
        except Exception as exc:
            if not result.done():
                result.set_exception(exc)
        else:
            if not result.done():
                result.set_result(reply)

    async def wait_durable(self, keys: Sequence[str], timeout_ms: int) -> bool:
        """acks=all on the lanes of the nodes that hold these keys (each WAIT counts the writes of its
        own connection)."""
        lanes = {id(lane): lane for lane in (self._lane_for(key) for key in keys)}.values()
        results: list[Any] = await asyncio.gather(*(lane.wait_durable((), timeout_ms) for lane in lanes))
        return all(results)

    async def close(self) -> None:
        lanes, self._lanes = list(self._lanes.values()), {}
        for lane in lanes:
            await lane.close()
