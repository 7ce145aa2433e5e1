"""Wakes long-polling fetches when a partition they wait on gets new records (from any broker), and
remembers each partition's end as last read, so that a Fetch at the end can wait without reading first.

The remembered end holds only while the broker hears every append notice of its keyspace (one Redis: the
one appended channel, subscribed all the time; trust_ends). Any notice of a partition forgets its end, and
a read only records an end when no notice came while it ran, so an end is never newer than the log's
last notified append. A plain Redis writer publishes no notice: a fetch that waits at a remembered end
looks again after fetch.POLL_SECONDS, as a parked fetch always did.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable

from ..storage.topic_partition import TopicPartition

Watch = Callable[[TopicPartition], None]


def _nothing(tp: TopicPartition) -> None:
    return None


class AppendWaiters:
    def __init__(self) -> None:
        self._waiting: dict[TopicPartition, set[asyncio.Event]] = {}
        self._first: Watch = _nothing
        self._last: Watch = _nothing
        # Each partition's high watermark as last read, or the token of a read under way.
        self._ends: dict[TopicPartition, int | object] = {}
        self._ends_trusted = False

    def watch(self, first: Watch, last: Watch) -> None:
        """first(partition) when a partition gets its first waiter, last(partition) when its last one
        leaves: on a Redis Cluster the broker subscribes to the notices of those partitions only."""
        self._first, self._last = first, last

    def notify(self, topic: str, partition: int) -> None:
        key = TopicPartition(topic, partition)
        self._ends.pop(key, None)
        for event in self._waiting.get(key, ()):
            event.set()

    def trust_ends(self, heard: bool) -> None:
        """Told True when the append notices are (re)subscribed, False when they failed: ends read
        before a subscription, or while there is none, may have missed appends."""
        self._ends.clear()
        self._ends_trusted = heard

    @property
    def ends_trusted(self) -> bool:
        return self._ends_trusted

    def reading(self, partitions: Iterable[TopicPartition]) -> object:
        """Marks a read about to start (after register); pass the token to read_end."""
        token = object()
        for key in partitions:
            self._ends[key] = token
        return token

    def read_end(self, key: TopicPartition, token: object, high_watermark: int) -> None:
        """The end a read found, kept unless a notice (or another read) came meanwhile."""
        if self._ends.get(key) is token:
            self._ends[key] = high_watermark

    def at_end(self, wanted: Iterable[tuple[TopicPartition, int]]) -> bool:
        """Whether every (partition, offset) asks for the partition's remembered end: nothing to read yet."""
        if not self._ends_trusted:
            return False
        ends = self._ends
        return all(ends.get(key) == offset for key, offset in wanted)

    def notify_text(self, message: bytes) -> None:
        """A notice from the append script: b"topic:partition"."""
        topic, _, partition = message.rpartition(b":")
        try:
            self.notify(topic.decode(), int(partition))
        except ValueError:
            return

    def register(self, partitions: Iterable[TopicPartition]) -> asyncio.Event:
        """Starts listening before the caller reads, so an append in between is not missed."""
        event = asyncio.Event()
        for key in partitions:
            waiting = self._waiting.get(key)
            if waiting is None:
                waiting = self._waiting[key] = set()
                self._first(key)
            waiting.add(event)
        return event

    def unregister(self, partitions: Iterable[TopicPartition], event: asyncio.Event) -> None:
        for key in partitions:
            waiting = self._waiting.get(key)
            if waiting is not None:
                waiting.discard(event)
                if not waiting:
                    del self._waiting[key]
                    self._last(key)

    @staticmethod
    async def wait(event: asyncio.Event, timeout: float) -> bool:
        """Waits until a registered partition is appended to, or the timeout passes."""
        try:
            await asyncio.wait_for(event.wait(), timeout)
            return True
        except TimeoutError:
            return False
