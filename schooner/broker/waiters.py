"""Wakes long-polling fetches when a partition they wait on gets new records (from any broker)."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Iterable

from ..storage.topic_partition import TopicPartition


class AppendWaiters:
    def __init__(self) -> None:
        self._waiting: dict[TopicPartition, set[asyncio.Event]] = defaultdict(set)

    def notify(self, topic: str, partition: int) -> None:
        for event in self._waiting.get(TopicPartition(topic, partition), ()):
            event.set()

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
            self._waiting[key].add(event)
        return event

    def unregister(self, partitions: Iterable[TopicPartition], event: asyncio.Event) -> None:
        for key in partitions:
            waiting = self._waiting.get(key)
            if waiting is not None:
                waiting.discard(event)
                if not waiting:
                    del self._waiting[key]

    @staticmethod
    async def wait(event: asyncio.Event, timeout: float) -> bool:
        """Waits until a registered partition is appended to, or the timeout passes."""
        try:
            await asyncio.wait_for(event.wait(), timeout)
            return True
        except TimeoutError:
            return False
