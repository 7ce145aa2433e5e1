"""Wakes long-polling fetches when a partition they wait on gets new records (from any broker)."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Iterable


class AppendWaiters:
    def __init__(self) -> None:
        self._waiting: dict[tuple[str, int], set[asyncio.Event]] = defaultdict(set)

    def notify(self, topic: str, partition: int) -> None:
        for event in self._waiting.get((topic, partition), ()):
            event.set()

    def notify_text(self, message: bytes) -> None:
        """A notice from the append script: b"topic:partition"."""
        topic, _, partition = message.rpartition(b":")
        try:
            self.notify(topic.decode(), int(partition))
        except ValueError:
            return

    async def wait(self, partitions: Iterable[tuple[str, int]], timeout: float) -> bool:
        """Waits until one of the partitions is appended to, or the timeout passes."""
        event = asyncio.Event()
        keys = list(partitions)
        for key in keys:
            self._waiting[key].add(event)
        try:
            await asyncio.wait_for(event.wait(), timeout)
            return True
        except TimeoutError:
            return False
        finally:
            for key in keys:
                waiting = self._waiting.get(key)
                if waiting is not None:
                    waiting.discard(event)
                    if not waiting:
                        del self._waiting[key]
