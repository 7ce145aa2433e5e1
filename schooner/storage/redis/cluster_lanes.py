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

acks=all (storage/log/acks.py) asks `written_on` which node ran a key's last write, so that it waits
on that node's replicas, and refuses when the slot has another owner now (a failover).
"""

from __future__ import annotations

import asyncio
from typing import Any, TypeVar

import redis.asyncio.cluster as acluster

from .calls import (
    Call,
    ClusterUnavailable,
    RoundTripObserver,
    cluster_errors_as_storage_errors,
    mark_topology_stale,
    refresh_topology,
)
from .lane import PipelinedLane

T = TypeVar("T")


class ClusterLanes:
    def __init__(self, client: acluster.RedisCluster, timeout_ms: int | None = None) -> None:
        self._client = client
        self._timeout_ms = timeout_ms
        self._lanes: dict[str, PipelinedLane] = {}
        self._written: dict[str, str] = {}  # key -> name of the node that ran its last write
        self._observer: RoundTripObserver | None = None

    @property
    def observer(self) -> RoundTripObserver | None:
        return self._observer

    @observer.setter
    def observer(self, observer: RoundTripObserver | None) -> None:
        """Every node's lane, and those opened later, tell it of their round trips."""
        self._observer = observer
        for lane in self._lanes.values():
            lane.observer = observer

    def _node_of(self, key: str) -> acluster.ClusterNode:
        node = self._client.get_node_from_key(key)
        if node is None:
            raise ClusterUnavailable(f"no node serves the slot of {key}")
        return node

    def _lane_of(self, node: acluster.ClusterNode) -> PipelinedLane:
        lane = self._lanes.get(node.name)
        if lane is None:
            make = node.connection_class
            kwargs = node.connection_kwargs
            lane = self._lanes[node.name] = PipelinedLane(
                None, self._timeout_ms, make_connection=lambda: make(**kwargs)
            )
            lane.observer = self._observer
        return lane

    async def send_call(self, call: Call[T]) -> asyncio.Future[T]:
        """Sends the call on its node's lane now and returns a future for its parsed reply."""
        key = call.keys[0] if call.script else str(call.args[1])
        with cluster_errors_as_storage_errors(self._client):
            try:
                await refresh_topology(self._client)  # fetches the slot map when marked stale
                node = self._node_of(key)
                sent = await self._lane_of(node).send_call(call)
            except Exception:
                mark_topology_stale(self._client)
                raise
        name = str(node.name)

        def settled(done: asyncio.Future[Any]) -> None:
            if done.cancelled():
                return
            if done.exception() is not None:
                mark_topology_stale(self._client)  # a redirection or a lost node: the map may be old
            else:
                self._written[key] = name

        sent.add_done_callback(settled)
        return sent

    def written_on(self, key: str) -> str | None:
        """The node that ran the last write to the key through these lanes, if any did."""
        return self._written.get(key)

    async def close(self) -> None:
        lanes, self._lanes = list(self._lanes.values()), {}
        for lane in lanes:
            await lane.close()
