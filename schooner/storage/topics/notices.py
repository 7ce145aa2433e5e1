"""Topic change notices: the topic scripts (topic_create, topic_update, topic_delete) PUBLISH the topic's
name on the topics channel in the same script as the change, so every broker drops its cached copy at
once and can cache topics for long. A plain PUBLISH reaches every node of a Redis Cluster, which is
what this rare notice wants.

ChannelNotices is one subscription to one plain channel; the log's append notices use it too.
"""

from __future__ import annotations

from ..keys import Keyspace
from ..redis.calls import Redis, StorageTimeout


class ChannelNotices:
    """One subscription, on a connection of its own. A quiet channel is PINGed after `quiet` seconds;
    no answer within as long again means the connection is dead (a stalled path shows no error)."""

    def __init__(self, redis: Redis, channel: str, quiet: float) -> None:
        self._pubsub = redis.pubsub()
        self._channel = channel
        self._quiet = quiet

    async def subscribe(self) -> None:
        await self._pubsub.subscribe(self._channel)

    async def next(self) -> bytes | None:
        """The next notice, or None when the subscription is (re)confirmed. Raises StorageError (or
        OSError) when the connection fails; then close this one and subscribe on a new one."""
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
        """Also ends a read in progress (redis-py's pub/sub read can swallow a cancel)."""
        await self._pubsub.aclose()


class TopicNotices(ChannelNotices):
    """The names of topics created, deleted or changed (next() gives the name as bytes)."""

    def __init__(self, redis: Redis, ks: Keyspace, quiet: float) -> None:
        super().__init__(redis, ks.topics_channel, quiet)
