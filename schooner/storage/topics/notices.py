"""Topic change notices: the topic scripts (topic_create, topic_update, topic_delete) PUBLISH the topic's
name on the topics channel in the same script as the change, so every broker drops its cached copy at
once and can cache topics for long. A plain PUBLISH reaches every node of a Redis Cluster, which is
what this rare notice wants.

ChannelNotices is one subscription to one plain channel; the log's append notices use it too. On one
Redis it reads its connection itself (redis/subscription.py); on a Redis Cluster, where a plain channel
may be served by any node, through redis-py's pub/sub.
"""

from __future__ import annotations

from ..keys import Keyspace
from ..redis.calls import Redis, StorageTimeout
from ..redis.client import is_cluster
from ..redis.subscription import Subscription


class _ClusterSubscription:
    """Subscription's interface over redis-py's pub/sub, for a Redis Cluster."""

    def __init__(self, redis: Redis, channel: str, quiet: float) -> None:
        self._pubsub = redis.pubsub()
        self._channel = channel
        self._quiet = quiet

    async def subscribe(self) -> None:
        await self._pubsub.subscribe(self._channel)

    async def next(self) -> bytes | None:
        pinged = False
        while True:
            message = await self._pubsub.get_message(timeout=self._quiet)
            if message is None:
                if pinged:
                    raise StorageTimeout(f"no answer to PING within {self._quiet:g} s")
                await self._pubsub.ping()
                pinged = True
                continue
            pinged = False
            if message.get("type") == "message":
                data: bytes = message["data"]
                return data
            if message.get("type") == "subscribe":
                return None

    async def close(self) -> None:
        await self._pubsub.aclose()  # also ends a read in progress (which can swallow a cancel)


class ChannelNotices:
    """One subscription, on a connection of its own. A quiet channel is PINGed after `quiet` seconds;
    no answer within as long again means the connection is dead (a stalled path shows no error)."""

    def __init__(self, redis: Redis, channel: str, quiet: float) -> None:
        self._subscription: Subscription | _ClusterSubscription = (
            _ClusterSubscription(redis, channel, quiet)
            if is_cluster(redis)
            else Subscription(redis.connection_pool.make_connection, channel, quiet)
        )

    async def subscribe(self) -> None:
        await self._subscription.subscribe()

    async def next(self) -> bytes | None:
        """The next notice, or None when the subscription is (re)confirmed. Raises StorageError (or
        OSError) when the connection fails; then close this one and subscribe on a new one."""
        return await self._subscription.next()

    async def close(self) -> None:
        """Also ends a read in progress."""
        await self._subscription.close()


class TopicNotices(ChannelNotices):
    """The names of topics created, deleted or changed (next() gives the name as bytes)."""

    def __init__(self, redis: Redis, ks: Keyspace, quiet: float) -> None:
        super().__init__(redis, ks.topics_channel, quiet)
