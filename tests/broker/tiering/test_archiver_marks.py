"""The tier marks an archiver records when Redis lost (or never got) what an earlier step committed:
the cold start is the table's first offset, read from an index that reaches the table's end."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from schooner.broker.tiering.archiver import Archiver
from schooner.broker.tiering.tiering import Tiering, open_cold_store
from schooner.config import Settings
from schooner.storage.cluster import BrokerInfo
from schooner.storage.keys import Keyspace
from schooner.storage.log.append import RecordBatch
from schooner.storage.log.entry import Record
from schooner.storage.redis import client
from schooner.storage.store import Store, open_lane

ME = BrokerInfo(1, "127.0.0.1", 9092)


def test_a_step_redis_never_recorded_keeps_the_cold_start_at_the_tables_first_offset(
    redis_server: Any, keyspace: str, tmp_path: Path
) -> None:
    """Broker A archives partition 0's first records, and Redis loses the record of it (killed before
    its AOF had the write). Broker B, whose file index was cached while partition 0 had no file, takes
    the partition over: it records the cold start at 0, where the table starts, not at the first
    offset of its own next step (a chaos run lost every record below that)."""

    async def body() -> None:
        settings = Settings(cold_store_url=str(tmp_path / "cold"), archive_batch_records=1000)
        redis = client.connect(redis_server.url)
        store = Store(redis, Keyspace(keyspace), open_lane(redis))
        cold_a, cold_b = (open_cold_store(settings, keyspace) for _ in range(2))
        assert cold_a is not None and cold_b is not None

        async def brokers() -> list[BrokerInfo]:
            return [ME]

        archiver_b = Archiver(Tiering(store, cold_b), settings, ME, brokers)
        try:
            topic = await store.create_topic(
                "marks", 2, {"remote.storage.enable": "true", "retention.ms": "-1"}, {}
            )

            async def append(partition: int, values: range) -> None:
                records = [Record(1_700_000_000_000, None, b"v%d" % i) for i in values]
                await store.append(topic, partition, RecordBatch(records))

            await append(1, range(5))
            await archiver_b.archive(topic, 1)  # B's index now holds partition 1's file, none of 0's
            assert await cold_b.start_offset(topic, 0) is None
            await append(0, range(10))
            piece = await store.archive_slice(topic, 0, 0, 1000)
            await cold_a.archive(topic, 0, piece)  # A's step: committed, never recorded in Redis
            await append(0, range(10, 15))
            await archiver_b.archive(topic, 0)
            marks = await archiver_b.tiering.marks(topic, 0)
            assert (marks.cold_start, marks.archived_end) == (0, 15)
        finally:
            cold_a.close()
            cold_b.close()
            await store.close()

    asyncio.run(body())
