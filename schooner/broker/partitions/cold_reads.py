"""ColdReads: the partition reader's source below Redis, for topics with remote.storage.enable.

A fetch offset below a tiered partition's Redis start (its first valid offset) is read from the cold
tier through AsyncColdStore (threads of its own: the event loop never waits on delta-rs). The reader
still reads Redis for such a partition, one entry only, for the high watermark and the LSO the answer
carries; the Redis start it saw is kept, so the next fetch below it goes to the cold tier at once.

The tier marks (storage/cold/marks.py: `cold_start`, `archived_end`) say where the log starts: a
fetch below the cold start is out of range, and every answer of a tiered partition reports the cold
start as its log start. They are read fresh for a cold read, and kept MARKS_TTL_SECONDS for the log
start of answers from Redis.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ...storage.cold.errors import ColdStoreError
from ...storage.cold.marks import TierMarks
from ...storage.log.read import PartitionRead
from ...storage.store import Store
from ...storage.topics.metadata import Topic

if TYPE_CHECKING:  # delta-rs and pyarrow load only with a cold store (broker/tiering/tiering.py)
    from ...storage.cold.aio import AsyncColdStore
    from ...storage.cold.table import ColdRead
    from ..metrics import BrokerMetrics

MARKS_TTL_SECONDS = 1.0
COLD_MAX_RECORDS = 100_000  # records one cold read returns at most (besides the byte budget)


class ColdReads:
    def __init__(
        self,
        store: Store,
        cold: AsyncColdStore | None,
        metrics: BrokerMetrics | None = None,
        tenant: str | None = None,
    ) -> None:
        self._store = store
        self._cold = cold
        self._metrics = metrics
        self._tenant = tenant  # labels the topics of the remote fetch meters (meters.topic_label)
        self._observe = metrics.cold_fetch_seconds.observe if metrics is not None else None
        # Kept per topic id, so that a topic made again under its name never sees its predecessor's.
        self._hot_starts: dict[_Key, int] = {}  # first valid Redis offset, from the last read
        self._marks: dict[_Key, tuple[float, TierMarks]] = {}

    def tiered(self, topic: Topic) -> bool:
        """Whether reads of the topic may go below Redis: it is tiered and this broker has a cold store."""
        return self._cold is not None and topic.remote_storage

    def below_hot(self, topic: Topic, partition: int, offset: int) -> bool:
        """Whether the offset is below the partition's Redis start as last seen (which only moves up)."""
        start = self._hot_starts.get(_key(topic, partition))
        return start is not None and offset < start

    def saw(self, topic: Topic, partition: int, read: PartitionRead) -> None:
        self._hot_starts[_key(topic, partition)] = read.first_valid_offset

    async def marks(self, partitions: Sequence[tuple[Topic, int]], fresh: bool) -> list[TierMarks]:
        """Each partition's tier marks: read in one round trip where not kept (or all, when fresh)."""
        now = time.monotonic()
        keys = [_key(t, p) for t, p in partitions]
        stale = [
            i for i, tp in enumerate(keys)
            if fresh or tp not in self._marks or now - self._marks[tp][0] > MARKS_TTL_SECONDS
        ]  # fmt: skip
        if stale:
            found = await self._store.tier_marks([partitions[i] for i in stale])
            for i, marks in zip(stale, found, strict=True):
                self._marks[keys[i]] = (now, marks)
        return [self._marks[tp][1] for tp in keys]

    async def read(self, topic: Topic, partition: int, offset: int, budget: int, committed: bool) -> ColdRead:
        """Cold records from the offset, up to the byte budget (the first always). Raises ColdStoreError."""
        assert self._cold is not None
        began = time.perf_counter()
        metrics = self._metrics
        try:
            got = await self._cold.read(topic, partition, offset, budget, COLD_MAX_RECORDS, committed)
        except ColdStoreError:
            if metrics is not None:
                label = _label(self._tenant, topic.name)
                metrics.remote_fetch_requests.labels(label).inc()
                metrics.remote_fetch_errors.labels(label).inc()
            raise
        finally:
            if self._observe is not None:
                self._observe(time.perf_counter() - began)
        if metrics is not None:  # Kafka's RemoteFetch*PerSec: one request per partition read
            label = _label(self._tenant, topic.name)
            metrics.remote_fetch_requests.labels(label).inc()
            metrics.remote_fetch_bytes.labels(label).inc(got.bytes)
        return got

    def forget(self, topic: str) -> None:
        """Drops what is kept of a topic (deleted, made again or changed: the topic cache's notices)."""
        for kept in (self._hot_starts, self._marks):
            for key in [key for key in kept if key[0] == topic]:
                del kept[key]


def _label(tenant: str | None, name: str) -> str:
    return name if tenant is None else f"{tenant}/{name}"  # meters.topic_label, without its imports


_Key = tuple[str, uuid.UUID, int]  # topic name, topic id, partition


def _key(topic: Topic, partition: int) -> _Key:
    return topic.name, topic.id, partition
