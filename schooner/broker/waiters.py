"""Wakes long-polling fetches when a partition they wait on gets new records (from any broker)."""

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
        # Append notices heard per partition: fetch's cached end reads (partition_ends.py) compare them.
        self._appends: dict[TopicPartition, int] = {}
        self._first: Watch = _nothing
        self._last: Watch = _nothing

    def watch(self, first: Watch, last: Watch) -> None:
        """first(partition) when a partition gets its first waiter, last(partition) when its last one
        leaves: on a Redis Cluster the broker subscribes to the notices of those partitions only."""
        self._first, self._last = first, last

    def notify(self, topic: str, partition: int) -> None:
        key = TopicPartition(topic, partition)
        self._appends[key] = self._appends.get(key, 0) + 1
        for event in self._waiting.get(key, ()):
            event.set()

    def appends(self, key: TopicPartition) -> int:
        """How many notices this partition has had: any change means it may have new records."""
        return self._appends.get(key, 0)

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
