"""The append scripts' wake-up notices, so a broker wakes its long-polling fetches whichever broker
appended. The message is "topic:partition", followed by a space and the appending broker's origin
token when a broker appended (it wakes its own fetches itself, and skips its own notices); where it goes
depends on the Redis:

- One Redis: PUBLISH on the one appended channel, which every broker subscribes to (AppendNotices).
- A Redis Cluster: SPUBLISH on the partition's own sharded channel, which carries the partition's hash
  tag, so the script stays in its slot and the notice stays on the primary that holds the partition.
  A broker SSUBSCRIBEs only to the partitions its fetches wait on (ShardedAppendNotices), and so hears
  nothing of the others. A PUBLISH in a script would be broadcast to every node of the cluster.

Fetches also poll, so a notice that goes unheard costs latency only.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from ..keys import Keyspace
from ..redis.calls import Redis, StorageError, StorageTimeout, mark_topology_stale
from ..topic_partition import TopicPartition
from ..topics.notices import ChannelNotices

log = logging.getLogger(__name__)

# The scripts' notice arguments: the channel ('' for none), the message, and '1' to SPUBLISH.
Notice = tuple[str, str, str]

# A partition whose fetches stopped waiting stays subscribed this long: a consumer fetches again at once.
LINGER_SECONDS = 30.0
# How often run() looks for lingering subscriptions to drop and failed ones to retry.
TICK_SECONDS = 1.0


def notice_args(
    ks: Keyspace, topic: str, partition: int, notify: bool, sharded: bool, origin: str = ""
) -> Notice:
    if not notify:
        return "", "", "0"
    message = f"{topic}:{partition} {origin}" if origin else f"{topic}:{partition}"
    if sharded:
        return ks.appended_shard_channel(topic, partition), message, "1"
    return ks.appended_channel, message, "0"


class AppendNotices(ChannelNotices):
    """One Redis: the one appended channel (next() gives b"topic:partition")."""

    def __init__(self, redis: Redis, ks: Keyspace, quiet: float) -> None:
        super().__init__(redis, ks.appended_channel, quiet)


class SubscriptionLost(StorageError):
    """Redis ended a subscription unasked (the channel's slot moved to another node)."""


class ShardedAppendNotices:
    """A Redis Cluster: one SSUBSCRIBE per partition that has waiting fetches, through redis-py's
    ClusterPubSub (one connection per node that holds such a partition), each node read by a task.

    want() and idle() are called as a partition gets its first waiter and loses its last one; run()
    keeps the subscriptions in step. The object outlives run(): after a failure, run() again subscribes
    anew to every partition still wanted. `heard` counts the notices heard per partition."""

    def __init__(
        self,
        redis: Redis,
        ks: Keyspace,
        quiet: float,
        linger: float = LINGER_SECONDS,
        tick: float = TICK_SECONDS,
    ) -> None:
        self._redis = redis
        self._ks = ks
        self._quiet = quiet
        self._linger = linger
        self._tick = tick
        self._wanted: dict[TopicPartition, float | None] = {}  # None: has waiters, else idle since
        self._subscribed: dict[bytes, TopicPartition] = {}  # SSUBSCRIBE sent, by channel
        self._leaving: set[bytes] = set()  # SUNSUBSCRIBE sent, not yet confirmed
        self._changed = asyncio.Event()
        self._pubsub: Any = None
        self._failing = False
        self.heard: Counter[TopicPartition] = Counter()

    def _channel(self, tp: TopicPartition) -> bytes:
        return self._ks.appended_shard_channel(tp.topic, tp.partition).encode()

    def want(self, tp: TopicPartition) -> None:
        self._wanted[tp] = None
        if self._channel(tp) not in self._subscribed:
            self._changed.set()

    def idle(self, tp: TopicPartition) -> None:
        if tp in self._wanted:
            self._wanted[tp] = time.monotonic()

    @property
    def subscribed(self) -> set[TopicPartition]:
        return set(self._subscribed.values())

    async def run(self, on_notice: Callable[[TopicPartition], None]) -> None:
        """Runs until cancelled. on_notice(partition) for each notice, and for each partition whose
        subscription Redis confirms (an append just before it went unheard: its waiters read again).
        Raises StorageError (or OSError) when a connection fails or a subscription is lost."""
        ps: Any = self._redis.pubsub()  # a ClusterPubSub: connect() types the client plainly
        self._pubsub = ps
        self._subscribed.clear()
        self._leaving.clear()
        readers: dict[str, asyncio.Task[None]] = {}
        try:
            while True:
                self._changed.clear()
                await self._subscribe_wanted(ps)
                await self._drop_idle(ps)
                for name, node_pubsub in list(ps.node_pubsub_mapping.items()):
                    if name not in readers and node_pubsub.connection is not None:
                        readers[name] = asyncio.create_task(self._read(ps, name, on_notice))
                changed = asyncio.ensure_future(self._changed.wait())
                waiting = [changed, *readers.values()]
                await asyncio.wait(waiting, timeout=self._tick, return_when=asyncio.FIRST_COMPLETED)
                changed.cancel()
                for name, task in list(readers.items()):
                    if task.done():
                        del readers[name]
                        task.result()  # a reader's failure ends the run
        except (StorageError, OSError, RuntimeError):
            mark_topology_stale(self._redis)
            raise
        finally:
            await self.close()
            for task in readers.values():
                task.cancel()
            if readers:
                await asyncio.wait(readers.values(), timeout=1)

    async def close(self) -> None:
        """Closes every connection (which also ends reads in progress)."""
        pubsub, self._pubsub = self._pubsub, None
        if pubsub is not None:
            with contextlib.suppress(StorageError, OSError):
                await pubsub.aclose()

    async def _subscribe_wanted(self, ps: Any) -> None:
        failed: Exception | None = None
        for tp, idle_since in list(self._wanted.items()):
            channel = self._channel(tp)
            if idle_since is not None or channel in self._subscribed or channel in self._leaving:
                continue
            try:
                await ps.ssubscribe(channel)
            except (StorageError, OSError) as exc:  # its primary is out of reach: retried next tick
                failed = exc
                continue
            self._subscribed[channel] = tp
        if failed is not None:
            mark_topology_stale(self._redis)
            if not self._failing:
                log.warning("append notices: cannot subscribe (retrying): %s", failed)
        elif self._failing:
            log.warning("append notices: subscribed again")
        self._failing = failed is not None

    async def _drop_idle(self, ps: Any) -> None:
        now = time.monotonic()
        dropped = []
        for tp, idle_since in list(self._wanted.items()):
            if idle_since is None or now - idle_since < self._linger:
                continue
            del self._wanted[tp]
            channel = self._channel(tp)
            if self._subscribed.pop(channel, None) is not None:
                self._leaving.add(channel)
                dropped.append(channel)
        if dropped:
            await ps.sunsubscribe(*dropped)

    async def _read(self, ps: Any, name: str, on_notice: Callable[[TopicPartition], None]) -> None:
        """Reads one node's connection until its last channel is unsubscribed."""
        node = self._redis.get_node(node_name=name)  # type: ignore[attr-defined]  # a RedisCluster
        if node is None:  # gone from the slot map since: subscribe anew where the map now says
            raise SubscriptionLost(f"node {name} left the cluster")
        pinged = False
        while True:
            message = await ps.get_sharded_message(target_node=node, timeout=self._quiet)
            if message is None:
                pubsub = ps.node_pubsub_mapping.get(name)
                if pubsub is None:
                    return
                if pinged:
                    raise StorageTimeout(f"no answer to PING from {name} within {self._quiet:g} s")
                await pubsub.ping()
                pinged = True
                continue
            pinged = False
            kind, channel = message["type"], message["channel"]
            tp = self._subscribed.get(channel)
            if kind == "smessage" and tp is not None:
                self.heard[tp] += 1
                on_notice(tp)
            elif kind == "ssubscribe" and tp is not None:
                on_notice(tp)
            elif kind == "sunsubscribe":
                if channel in self._leaving:
                    self._leaving.discard(channel)
                    self._changed.set()  # a partition wanted again meanwhile subscribes now
                elif tp is not None:
                    raise SubscriptionLost(f"Redis ended the subscription to {channel!r}")
