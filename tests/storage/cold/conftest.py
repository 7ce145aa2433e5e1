"""The cold tier's fixtures: a partition log in the test redis-server, written through the real append
and marker scripts, a cold store on a test folder, and an S3-compatible server (moto's, from PyPI) on a
free port for the tests that run on S3."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from schooner.storage.cold.location import ColdLocation
from schooner.storage.cold.source import ArchiveSlice, archive_slice
from schooner.storage.cold.table import ColdStore
from schooner.storage.keys import Keyspace
from schooner.storage.log import append as log_append
from schooner.storage.log import read as log_read
from schooner.storage.log import transactions
from schooner.storage.log.append import APPENDED, RecordBatch
from schooner.storage.log.entry import Record
from schooner.storage.log.read import PartitionRead
from schooner.storage.redis import calls, client
from schooner.storage.topics import metadata
from schooner.storage.topics.metadata import Topic


class Log:
    """One topic's partition 0 in Redis, on a client of its own (each call runs its own event loop)."""

    def __init__(self, url: str, ks: Keyspace, topic: Topic) -> None:
        self.url, self.ks, self.topic = url, ks, topic

    def _run(self, fn: Any) -> Any:
        async def main() -> Any:
            redis = client.connect(self.url)
            try:
                return await fn(redis)
            finally:
                await redis.aclose()

        return asyncio.run(main())

    def append(self, records: Sequence[Record], pid: int = -1, epoch: int = -1, seq: int = -1) -> int:
        """Appends one batch (transactional when pid is given); its base offset."""
        batch = RecordBatch(records, pid, epoch, seq)
        txn = f"tx-{pid}" if pid >= 0 else None
        call = log_append.append(self.ks, self.topic, 0, batch, transactional_id=txn)
        result = self._run(lambda r: calls.run(r, call))
        assert result.status == APPENDED, result
        return int(result.base_offset)

    def end_txn(self, pid: int, epoch: int, commit: bool) -> int:
        """The marker's offset."""
        call = transactions.write_marker(self.ks, self.topic, 0, pid, epoch, commit)
        result = self._run(lambda r: calls.run(r, call))
        assert result.status == transactions.MARKER_WRITTEN, result
        return int(result.offset)

    def call(self, call: Any) -> Any:
        """Runs one storage round trip (a Call) on the log's Redis."""
        return self._run(lambda r: calls.run(r, call))

    def length(self) -> int:
        """The partition's stream length."""
        return int(self._run(lambda r: r.xlen(self.ks.stream(self.topic.name, 0))))

    def slice(self, start: int, max_records: int) -> ArchiveSlice:
        return self._run(lambda r: calls.drive(r, archive_slice(self.ks, self.topic, 0, start, max_records)))

    def read(self, offset: int, count: int, committed: bool = False) -> PartitionRead:
        steps = log_read.read(self.ks, self.topic, 0, offset, count, committed)
        return self._run(lambda r: calls.drive(r, steps))


@pytest.fixture
def make_log(redis_server: Any, keyspace: str, topic_defaults: dict[str, str]) -> Any:
    def make(name: str = "orders", **configs: str) -> Log:
        ks = Keyspace(keyspace)
        overrides = {"retention.ms": "-1", **configs}  # made-up old timestamps must not be trimmed

        async def create(redis: Any) -> Topic:
            return await calls.drive(redis, metadata.create(ks, name, 1, overrides, topic_defaults))

        log = Log(redis_server.url, ks, None)  # type: ignore[arg-type]
        log.topic = log._run(create)
        return log

    return make


@pytest.fixture
def cold(tmp_path: Path, keyspace: str) -> ColdStore:
    return ColdStore(ColdLocation.from_url(f"file://{tmp_path}/cold"), keyspace)
