"""Append notices as AppendWaiters counts them: a broker skips its own (tagged with its origin), and
counts other brokers' and plain writers' (storage/log/notices.py)."""

from __future__ import annotations

import asyncio

from schooner.broker.partitions.waiters import AppendWaiters
from schooner.storage.topic_partition import TopicPartition

ORDERS_0 = TopicPartition("orders", 0)


def test_own_notices_are_skipped_and_others_counted() -> None:
    async def scenario() -> None:
        waiters = AppendWaiters()
        event = waiters.register([ORDERS_0])
        waiters.notify_text(b"orders:0 " + waiters.origin.encode())  # this broker's: woken at its reply
        assert waiters.appends(ORDERS_0) == 0 and not event.is_set()
        waiters.notify_text(b"orders:0 " + AppendWaiters().origin.encode())  # another broker's
        assert waiters.appends(ORDERS_0) == 1 and event.is_set()
        waiters.notify_text(b"orders:0")  # a plain writer's PUBLISH, with no origin
        waiters.notify_text(b"my.topic:with:colons:12 abc")
        waiters.notify_text(b"orders:x")  # not a partition: ignored
        assert waiters.appends(ORDERS_0) == 2
        assert waiters.appends(TopicPartition("my.topic:with:colons", 12)) == 1

    asyncio.run(scenario())
