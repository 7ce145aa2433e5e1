"""The append lane on a Redis Cluster: one PipelinedLane per primary, a call going to the lane of the
node that owns its first key's slot. Appends to one partition stay on one connection, in order.

A call the node refuses because the slot moved (MOVED), is being moved (ASK), or is half moved under a
call on several keys (TRYAGAIN) did not run: it is sent again on a lane, to the node the slot map
(fetched again) or the ASK names, after a pause for TRYAGAIN. On a lane, not through redis-py's cluster
client, because acks=all must WAIT on the connection that carried the write. A node that is gone
fails its calls with a connection error (a retriable answer for the client) and makes the slot map
be fetched again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, TypeVar

import redis.asyncio.cluster as acluster
from redis.cluster import PRIMARY
from redis.exceptions import AskError, MovedError, SlotNotCoveredError, TryAgainError

from .calls import Call, mark_topology_stale, refresh_topology
from .lane import REDIRECTS, PipelinedLane

T = TypeVar("T")

# A call is sent again at most this often; a slot whose keys take long to move (a big stream) keeps
# answering TRYAGAIN, and the client's retry of the produce takes over after that.
MAX_RESENDS = 12
TRYAGAIN_PAUSE_S = (0.02, 0.5)  # the first pause, doubled each time up to the second


class ClusterLanes:
    def __init__(self, client: acluster.RedisCluster, timeout_ms: int | None = None) -> None:
        self._client = client
        self._timeout_ms = timeout_ms
        self._lanes: dict[str, PipelinedLane] = {}
        self._sent: dict[str, int] = {}  # calls sent on each node's lane so far
        # Writes to a key that no acks=all wait has covered yet: node name -> that lane's count when the
        # last of them was sent. WAIT counts the writes of its own connection, so it must go there.
        self._unwaited: dict[str, dict[str, int]] = {}

    def _node_of(self, key: str) -> acluster.ClusterNode:
        node = self._client.get_node_from_key(key)
        if node is None:
            raise SlotNotCoveredError(f"no node serves the slot of {key}")
        return node

    def _lane_of(self, node: acluster.ClusterNode) -> PipelinedLane:
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
        result: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._follow(result, call, key, await self._send(call, key), 0)
        return result

    async def _send(self, call: Call[T], key: str, asked: AskError | None = None) -> asyncio.Future[T]:
        try:
            if asked is None:
                await refresh_topology(self._client)  # fetches the slot map when marked stale
                node = self._node_of(key)
            else:
                found = self._client.get_node(asked.host, asked.port)
                if found is None:
                    raise asked
                node = found
            lane = self._lane_of(node)
            if asked is not None:  # the target takes the next command on this connection only
                (await lane.send("ASKING")).add_done_callback(lambda f: f.exception())
            sent = await lane.send_call(call)
        except Exception:
            mark_topology_stale(self._client)
            raise
        count = self._sent[node.name] = self._sent.get(node.name, 0) + 1
        self._unwaited.setdefault(key, {})[node.name] = count
        return sent

    def _follow(
        self, result: asyncio.Future[T], call: Call[T], key: str, sent: asyncio.Future[T], resends: int
    ) -> None:
        def done(f: asyncio.Future[T]) -> None:
            if result.done():
                return
            exc = f.exception()
            if exc is None:
                result.set_result(f.result())
            elif isinstance(exc, REDIRECTS) and resends < MAX_RESENDS:
                asyncio.get_running_loop().create_task(self._resend(result, call, key, exc, resends + 1))
            else:
                mark_topology_stale(self._client)
                result.set_exception(exc)

        sent.add_done_callback(done)

    async def _resend(
        self, result: asyncio.Future[T], call: Call[T], key: str, exc: BaseException, resends: int
    ) -> None:
        asked = exc if isinstance(exc, AskError) and not isinstance(exc, MovedError) else None
        if isinstance(exc, MovedError):
            mark_topology_stale(self._client)
        elif asked is None:  # TRYAGAIN, or CLUSTERDOWN during a failover: give it a moment
            first, most = TRYAGAIN_PAUSE_S
            await asyncio.sleep(min(first * 2 ** (resends - 1), most))
            if not isinstance(exc, TryAgainError):
                mark_topology_stale(self._client)
        try:
            sent = await self._send(call, key, asked)
        except Exception as failed:
            if not result.done():
                result.set_exception(failed)
        else:
            self._follow(result, call, key, sent, resends)

    async def wait_durable(self, keys: Sequence[str], timeout_ms: int) -> bool:
        """acks=all on the lanes that carried the writes to these keys (each WAIT counts the writes of
        its own connection); on the lane of each key's node when no write is left uncovered."""
        names: set[str] = set()
        for key in keys:
            names.update(self._unwaited.get(key) or (self._lane_name(key),))
        order = sorted(names)
        marks = [self._sent.get(name, 0) for name in order]  # what a WAIT sent now covers
        results: list[Any] = await asyncio.gather(
            *(self._lanes[name].wait_durable((), timeout_ms) for name in order), return_exceptions=True
        )
        covered = {
            name: mark
            for name, mark, ok in zip(order, marks, results, strict=True)
            if ok is True or not self._is_primary(name)  # a node gone: its writes are not ours to wait on
        }
        for key in keys:
            left = self._unwaited.get(key)
            if left is None:
                continue
            for name, mark in covered.items():
                if left.get(name, mark + 1) <= mark:
                    del left[name]
            if not left:
                del self._unwaited[key]
        for outcome in results:
            if isinstance(outcome, BaseException):
                mark_topology_stale(self._client)
                raise outcome
        return all(results)

    def _lane_name(self, key: str) -> str:
        node = self._node_of(key)
        self._lane_of(node)
        return str(node.name)

    def _is_primary(self, name: str) -> bool:
        node = self._client.get_node(node_name=name)
        return node is not None and node.server_type == PRIMARY

    async def close(self) -> None:
        lanes, self._lanes = list(self._lanes.values()), {}
        for lane in lanes:
            await lane.close()
