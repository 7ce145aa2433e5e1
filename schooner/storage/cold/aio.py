"""AsyncColdStore: the cold tier's blocking calls (delta-rs, pyiceberg, pyarrow) run in threads of its own,
so the event loop never waits on the cold store and cold work never takes the loop's default executor."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from ..topics.metadata import Topic
from .formats import ColdTables
from .source import ArchiveSlice
from .table import Archived, ColdRead, ColdStore

T = TypeVar("T")

THREADS = 4  # delta-rs and pyarrow release the GIL while they read, write and decompress


class AsyncColdStore:
    def __init__(self, cold: ColdTables | ColdStore, threads: int = THREADS) -> None:
        self.cold = cold
        self._executor = ThreadPoolExecutor(threads, thread_name_prefix="schooner-cold")
        self._owns_executor = True

    def beside(self, cold: ColdTables | ColdStore) -> AsyncColdStore:
        """Another keyspace's cold store on this one's threads (a tenant's, on its deployment's): one pool
        per deployment, however many tenants. Closing it leaves the threads to this one."""
        other = AsyncColdStore.__new__(AsyncColdStore)
        other.cold, other._executor, other._owns_executor = cold, self._executor, False
        return other

    async def _run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, functools.partial(fn, *args, **kwargs))

    async def archived_end(self, topic: Topic, partition: int) -> int | None:
        return await self._run(self.cold.archived_end, topic, partition)

    async def archive(self, topic: Topic, partition: int, piece: ArchiveSlice) -> Archived:
        return await self._run(self.cold.archive, topic, partition, piece)

    async def read(
        self,
        topic: Topic,
        partition: int,
        offset: int,
        max_bytes: int,
        max_records: int = 100_000,
        committed: bool = False,
        start: int | None = None,
    ) -> ColdRead:
        return await self._run(
            self.cold.read, topic, partition, offset, max_bytes, max_records, committed, start
        )

    async def start_offset(self, topic: Topic, partition: int, archived_end: int | None = None) -> int | None:
        return await self._run(self.cold.start_offset, topic, partition, archived_end)

    async def offset_for_timestamp(
        self,
        topic: Topic,
        partition: int,
        timestamp: int,
        archived_end: int | None = None,
        start: int | None = None,
    ) -> tuple[int, int] | None:
        return await self._run(
            self.cold.offset_for_timestamp, topic, partition, timestamp, archived_end, start
        )

    async def trim(self, topic: Topic, partition: int, below: int, vacuum: bool = True) -> int:
        return await self._run(self.cold.trim, topic, partition, below, vacuum)

    async def vacuum(self, topic: Topic) -> list[str]:
        return await self._run(self.cold.vacuum, topic)

    async def drop(self, topic: Topic) -> None:
        await self._run(self.cold.drop, topic)

    def close(self) -> None:
        """Waits for running calls to end (a delta-rs call cannot be cancelled midway)."""
        if self._owns_executor:
            self._executor.shutdown(wait=True)
