"""Producers: append records to a topic through the broker's own append script, so Kafka consumers read
them at valid offsets. Keyed records go where a Kafka client would put them (murmur2).

send() appends one record; send_batch() groups records by partition and appends every partition's
batch in one pipelined round trip (one script call per partition and 1,000 records).
"""

from __future__ import annotations

import functools
import time
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from prometheus_client import CollectorRegistry

from schooner.storage.blocking_store import BlockingStore
from schooner.storage.keys import Keyspace
from schooner.storage.log import append as log_append
from schooner.storage.log.append import MAX_BATCH, UNKNOWN_PARTITION, AppendResult, RecordBatch
from schooner.storage.log.entry import Header, Record
from schooner.storage.redis import calls, client
from schooner.storage.redis.calls import BlockingRedis, Redis
from schooner.storage.topics import metadata
from schooner.storage.topics.metadata import Topic, UnknownTopic

from .metrics import metrics_for
from .partitioner import Partitioner

C = TypeVar("C", BlockingRedis, Redis)  # the client: blocking or asyncio

Bytes = bytes | str
Headers = Mapping[str, bytes | str | None] | Sequence[tuple[str, bytes | str | None]]


@dataclass(frozen=True, slots=True)
class OutgoingMessage:
    value: Bytes | None
    key: Bytes | None = None
    headers: Headers = ()
    partition: int | None = None  # None: by key (murmur2), round-robin without a key
    timestamp_ms: int | None = None  # None: now


@dataclass(frozen=True, slots=True)
class Sent:
    topic: str
    partition: int
    offset: int


@dataclass
class _Plan:
    """Which partition each message goes to, and the append calls that put them there."""

    topic: Topic
    placed: list[tuple[int, int]] = field(default_factory=list)  # (partition, index in partition)
    by_partition: dict[int, list[Record]] = field(default_factory=dict)


def _bytes(value: Bytes | None) -> bytes | None:
    return value.encode() if isinstance(value, str) else value


def _headers(headers: Headers) -> list[Header]:
    items = headers.items() if isinstance(headers, Mapping) else headers
    return [(name, _bytes(value)) for name, value in items]


class _Base(ABC, Generic[C]):
    """What both producers share; sending is one procedure of round trips (Steps) that each runs."""

    def __init__(
        self,
        redis: str | C,
        *,
        keyspace: str | Keyspace = "schooner",
        registry: CollectorRegistry | None = None,
    ) -> None:
        self._owns_client = isinstance(redis, str)
        self.redis: C = self._connect(redis) if isinstance(redis, str) else redis
        self.ks = keyspace if isinstance(keyspace, Keyspace) else Keyspace(keyspace)
        self.metrics = metrics_for(registry)
        self.partitioner = Partitioner()
        self._topics: dict[str, Topic] = {}

    @abstractmethod
    def _connect(self, url: str) -> C:
        """A client of this producer's kind (blocking or asyncio) for a Redis URL."""

    def _sending(self, topic: str, messages: list[OutgoingMessage]) -> calls.Steps[list[Sent]]:
        """Appends the messages; a topic deleted or re-created meanwhile is loaded again, once."""
        for fresh in (False, True):
            meta = None if fresh else self._topics.get(topic)
            if meta is None:
                (meta,) = yield [metadata.load(self.ks, topic, {})]
                if meta is None:
                    raise UnknownTopic(topic)
                self._topics[topic] = meta
            plan = self._plan(meta, messages)
            chunks, todo = self._calls(plan)
            sent = self._results(plan, chunks, (yield todo))
            if sent is not None:
                return sent
        raise UnknownTopic(topic)

    def _plan(self, topic: Topic, messages: Sequence[OutgoingMessage]) -> _Plan:
        plan = _Plan(topic)
        now = int(time.time() * 1000)
        for m in messages:
            key = _bytes(m.key)
            p = (
                m.partition
                if m.partition is not None
                else self.partitioner.partition(topic.name, key, topic.partitions)
            )
            if not 0 <= p < topic.partitions:
                raise ValueError(f"{topic.name} has no partition {p}")
            records = plan.by_partition.setdefault(p, [])
            plan.placed.append((p, len(records)))
            ts = m.timestamp_ms if m.timestamp_ms is not None else now
            records.append(Record(ts, key, _bytes(m.value), _headers(m.headers)))
        return plan

    def _calls(self, plan: _Plan) -> tuple[list[tuple[int, int]], list[calls.Call[AppendResult]]]:
        chunks, out = [], []
        for p, records in plan.by_partition.items():
            for start in range(0, len(records), MAX_BATCH):
                chunks.append((p, start))
                batch = RecordBatch(records[start : start + MAX_BATCH])
                sharded = client.is_cluster(self.redis)
                out.append(log_append.append(self.ks, plan.topic, p, batch, sharded=sharded))
        return chunks, out

    def _results(
        self, plan: _Plan, chunks: list[tuple[int, int]], results: list[AppendResult]
    ) -> list[Sent] | None:
        """Offsets in input order; None when the topic was deleted or re-created (reload and retry)."""
        base: dict[tuple[int, int], int] = {}
        for (p, start), result in zip(chunks, results, strict=True):
            if result.status == UNKNOWN_PARTITION:
                return None
            if result.status < 0:
                raise RuntimeError(f"append to {plan.topic.name}:{p} failed: Kafka error {-result.status}")
            base[(p, start)] = result.base_offset
        sent = []
        for p, i in plan.placed:
            start = i - i % MAX_BATCH
            sent.append(Sent(plan.topic.name, p, base[(p, start)] + (i - start)))
        for p, records in plan.by_partition.items():
            self.metrics.produced.labels(plan.topic.name, str(p), "").inc(len(records))
        return sent


class Producer(_Base[BlockingRedis]):
    def _connect(self, url: str) -> BlockingRedis:
        return client.connect_sync(url)

    @functools.cached_property
    def store(self) -> BlockingStore:
        """The client and keyspace the appends go through (made on first use)."""
        return BlockingStore(self.redis, self.ks)

    def send(
        self,
        topic: str,
        value: Bytes | None,
        *,
        key: Bytes | None = None,
        headers: Headers = (),
        partition: int | None = None,
        timestamp_ms: int | None = None,
    ) -> Sent:
        return self.send_batch(topic, [OutgoingMessage(value, key, headers, partition, timestamp_ms)])[0]

    def send_batch(self, topic: str, messages: Iterable[OutgoingMessage]) -> list[Sent]:
        return self.store.drive(self._sending(topic, list(messages)))

    def close(self) -> None:
        if self._owns_client:
            self.redis.close()


class AsyncProducer(_Base[Redis]):
    def _connect(self, url: str) -> Redis:
        return client.connect(url)

    async def send(
        self,
        topic: str,
        value: Bytes | None,
        *,
        key: Bytes | None = None,
        headers: Headers = (),
        partition: int | None = None,
        timestamp_ms: int | None = None,
    ) -> Sent:
        sent = await self.send_batch(topic, [OutgoingMessage(value, key, headers, partition, timestamp_ms)])
        return sent[0]

    async def send_batch(self, topic: str, messages: Iterable[OutgoingMessage]) -> list[Sent]:
        return await calls.drive(self.redis, self._sending(topic, list(messages)))

    async def close(self) -> None:
        if self._owns_client:
            await self.redis.aclose()
