"""The append lane on a Redis Cluster: one PipelinedLane per primary, a call going to the lane of the
node that owns its first key's slot. Appends to one partition stay on one connection, in order.

A call the node refuses because the slot moved (MOVED), is being moved (ASK, TRYAGAIN) or has no
primary yet (CLUSTERDOWN) did not run, and is not sent again here: the calls of the same partition
sent after it may already be running on the slot's new node, and a re-sent call would land behind
them (an idempotent producer then sees its sequence broken, others their order). It fails with the
node's error, retriable for the client, and the slot map is fetched again for the next call. (While a
slot moves, an append keeps getting TRYAGAIN or ASK until the move ends: the append script declares
every key of its partition, and some of them do not exist.) A node that is gone fails its calls with
a connection error, also retriable, and makes the map be fetched again too.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, TypeVar

import redis.asyncio.cluster as acluster
from redis.cluster import PRIMARY
from redis.exceptions import SlotNotCoveredError

from .calls import Call, mark_topology_stale, refresh_topology
from .lane import PipelinedLane

T = TypeVar("T")


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
        try:
            await refresh_topology(self._client)  # fetches the slot map when marked stale
            node = self._node_of(key)
            sent = await self._lane_of(node).send_call(call)
        except Exception:
            mark_topology_stale(self._client)
            raise
        count = self._sent[node.name] = self._sent.get(node.name, 0) + 1
        self._unwaited.setdefault(key, {})[node.name] = count
        sent.add_done_callback(self._check)
        return sent

    def _check(self, sent: asyncio.Future[Any]) -> None:
        if not sent.cancelled() and sent.exception() is not None:
            mark_topology_stale(self._client)  # a redirection or a lost node: the map may be old

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
