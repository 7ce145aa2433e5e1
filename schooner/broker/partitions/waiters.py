"""Wakes long-polling fetches when a partition they wait on gets new records (from any writer).

A waiting fetch does not poll. It is woken by this broker's appends, by the append notices of the other
brokers (upkeep.py), and by one look every RECHECK_SECONDS at the partitions fetches wait on: each one's
last entry ID, one command per partition however many fetches wait on it (upkeep.py sends them). That
look finds the entries of plain Redis writers, which publish no notice, and appends whose notice was
lost while a subscription was down.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterable, Sequence

from ...storage.topic_partition import TopicPartition

Watch = Callable[[TopicPartition], None]

RECHECK_SECONDS = 0.5  # so a plain Redis writer's entry reaches a waiting fetch within about a second
TIP_MEMORY_SECONDS = 60.0  # a partition's last ID is kept this long after its last waiter left


def _nothing(tp: TopicPartition) -> None:
    return None


class AppendWaiters:
    def __init__(self) -> None:
        self._waiting: dict[TopicPartition, set[asyncio.Event]] = {}
        # Append notices heard per partition: fetch's cached end reads (partition_ends.py) compare them.
        self._appends: dict[TopicPartition, int] = {}
        self._first: Watch = _nothing
        self._last: Watch = _nothing
        self.waiting = 0  # fetches registered now (waiting, or reading between waits)
        # The last entry ID each looked-at partition had, and when it last had waiters.
        self._tips: dict[TopicPartition, tuple[bytes | None, float]] = {}
        self._tips_swept = 0.0
        # Tags this broker's append notices: it wakes its fetches as each append's reply comes, and its
        # own notice, heard later, would count the append twice (and make fetch read an end it knows).
        self.origin = uuid.uuid4().hex[:12]
        self._own = self.origin.encode()

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
        """A notice from the append script: b"topic:partition", then b" " and the appender's origin token
        when a broker appended (storage/log/notices.py); this broker's own are skipped."""
        message, _, origin = message.partition(b" ")
        if origin == self._own:
            return
        topic, _, partition = message.rpartition(b":")
        try:
            self.notify(topic.decode(), int(partition))
        except ValueError:
            return

    def register(self, partitions: Iterable[TopicPartition]) -> asyncio.Event:
        """Starts listening before the caller reads, so an append in between is not missed."""
        event = asyncio.Event()
        self.waiting += 1
        for key in partitions:
            waiting = self._waiting.get(key)
            if waiting is None:
                waiting = self._waiting[key] = set()
                self._first(key)
            waiting.add(event)
        return event

    def unregister(self, partitions: Iterable[TopicPartition], event: asyncio.Event) -> None:
        self.waiting -= 1
        for key in partitions:
            waiting = self._waiting.get(key)
            if waiting is not None:
                waiting.discard(event)
                if not waiting:
                    del self._waiting[key]
                    self._last(key)

    def waited(self) -> list[TopicPartition]:
        """The partitions fetches wait on now."""
        return list(self._waiting)

    def saw_tips(
        self, partitions: Sequence[TopicPartition], tips: Sequence[bytes | None], now: float
    ) -> None:
        """Wakes the fetches of partitions whose last entry ID changed since the last look. A partition
        not looked at before is woken too: it may have changed between its fetch's read and this look."""
        for key, tip in zip(partitions, tips, strict=True):
            seen = self._tips.get(key)
            self._tips[key] = (tip, now)
            if seen is None or seen[0] != tip:
                self.notify(key.topic, key.partition)
        if now - self._tips_swept > TIP_MEMORY_SECONDS:
            self._tips_swept = now
            self._tips = {k: v for k, v in self._tips.items() if now - v[1] <= TIP_MEMORY_SECONDS}

    def wake_all(self) -> None:
        """The look failed (Redis is out of reach): every waiting fetch reads again, and answers the
        error its read meets rather than waiting on."""
        for key in list(self._waiting):
            self.notify(key.topic, key.partition)

    @staticmethod
    async def wait(event: asyncio.Event, timeout: float) -> bool:
        """Waits until a registered partition is appended to, or the timeout passes."""
        try:
            # Not wait_for(): on Python 3.11 it drops a cancel that comes as the event is set, and a
            # fetch whose client left would then wait on.
            async with asyncio.timeout(timeout):
                await event.wait()
            return True
        except TimeoutError:
            return False
