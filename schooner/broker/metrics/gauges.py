"""Gauges read at scrape time: connections per listener, partition end offsets, group lag and archive lag
(per tiered partition, and per topic as Kafka's RemoteCopyLag*).

End offsets and lag come from Redis, with the functions `schooner groups lag` and `groups describe`
use (storage/groups/lag.py, storage/share/partition.py), all partitions' calls pipelined together so a
scrape costs a handful of round trips however many partitions there are. The reads run on the broker's
event loop (the HTTP server's thread hands them over and waits, bounded by SCRAPE_TIMEOUT_SECONDS).

With several brokers each reports only what it leads or coordinates (Metadata's leaders, the groups'
coordinator hash), so a sum over brokers counts each partition and group once; one broker reports all.
A tenant's topics and groups are labelled `tenant/name` (meters.topic_label).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
from collections.abc import Callable, Coroutine, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from ...storage.cluster import BrokerInfo
from ...storage.groups import commits
from ...storage.groups.lag import PartitionLag, partition_lag
from ...storage.keys import Keyspace
from ...storage.log.read import PartitionBounds, bounds_of
from ...storage.redis.calls import Steps, StorageError, parallel, together
from ...storage.share import partition as share
from ...storage.store import Store
from ...storage.topics.metadata import Topic
from ..metadata.cluster_view import ClusterView
from ..net.limits import ConnectionStats
from ..net.session import Session
from .meters import topic_label

log = logging.getLogger(__name__)

SCRAPE_TIMEOUT_SECONDS = 8.0  # under Prometheus' default scrape timeout (10 s)


class _Coordinators(Protocol):
    async def coordinator_for(self, group_id: str) -> BrokerInfo: ...


class KeyspaceSource(Protocol):
    """What the gauges read of one keyspace (a BrokerContext is one): its store, the cluster view (which
    partitions this broker leads), who coordinates each group, and the tenant that labels its series."""

    @property
    def store(self) -> Store: ...
    @property
    def cluster(self) -> ClusterView: ...
    @property
    def groups(self) -> _Coordinators: ...
    @property
    def tenant(self) -> str | None: ...
    @property
    def topic_defaults(self) -> Mapping[str, str]: ...


class Source(Protocol):
    """What the gauges read from the broker (on its event loop)."""

    @property
    def contexts(self) -> Sequence[KeyspaceSource]: ...  # the deployment's, then each tenant's
    def sessions(self) -> list[Session]: ...
    @property
    def listener_names(self) -> list[str]: ...
    @property
    def connection_stats(self) -> ConnectionStats: ...


@dataclass(slots=True)
class Snapshot:
    connections: dict[str, int] = field(default_factory=dict)
    closed: dict[str, int] = field(default_factory=dict)  # connections closed by the broker, by reason
    end_offsets: list[tuple[str, int, int]] = field(default_factory=list)  # topic, partition, offset
    lags: list[tuple[str, str, int, int]] = field(default_factory=list)  # group, topic, partition, records
    lag_seconds: list[tuple[str, str, int, float]] = field(default_factory=list)  # classic/consumer only
    archive_lags: list[tuple[str, int, int]] = field(default_factory=list)  # topic, partition, records
    # topic -> (records, bytes) not yet archived, over its led partitions (Kafka's RemoteCopyLag*)
    copy_lags: dict[str, tuple[int, float]] = field(default_factory=dict)
    storage_up: bool = True


async def snapshot(source: Source) -> Snapshot:
    snap = Snapshot()
    snap.connections = dict.fromkeys(source.listener_names, 0)
    for session in source.sessions():
        name = session.listener.protocol
        snap.connections[name] = snap.connections.get(name, 0) + 1
    st = source.connection_stats
    snap.closed = {
        "refused": st.refused,
        "idle": st.closed_idle,
        "incomplete_frame": st.closed_incomplete_frame,
        "unread_response": st.closed_unread_response,
    }
    for ctx in source.contexts:
        try:
            await _read_keyspace(ctx, snap)
        except (StorageError, OSError) as exc:
            log.info("metrics: reading end offsets and lag of %s failed: %s", ctx.store.ks.prefix, exc)
            snap.storage_up = False
    return snap


async def _read_keyspace(ctx: KeyspaceSource, snap: Snapshot) -> None:
    store, cluster = ctx.store, ctx.cluster
    me, ks = cluster.me.broker_id, store.ks
    topics = await store.topics(ctx.topic_defaults)
    brokers = await cluster.live_brokers()
    led = [(t, p) for t in topics for p in range(t.partitions) if cluster.leader_for(brokers, t, p) == me]
    groups = [g for g in await store.group_ids() if (await ctx.groups.coordinator_for(g)).broker_id == me]
    ends, lags, shares = await store.drive(_reads(ks, led, {t.name: t for t in topics}, groups))
    tenant = ctx.tenant
    for (topic, p), b in zip(led, ends, strict=True):
        snap.end_offsets.append((topic_label(tenant, topic.name), p, b.high_watermark))
    tiered = [(t, p, b) for (t, p), b in zip(led, ends, strict=True) if t.remote_storage]
    marks = await store.tier_marks([(t, p) for t, p, _ in tiered])
    for (topic, p, b), mark in zip(tiered, marks, strict=True):
        # Records not yet in the cold tier: from the archived end (or, before the first archive, the
        # log start) to the high watermark.
        archived = mark.archived_end if mark.archived_end is not None else b.log_start_offset
        label, behind = topic_label(tenant, topic.name), max(b.high_watermark - archived, 0)
        snap.archive_lags.append((label, p, behind))
        # Bytes: the records times the partition's average record size (its running totals, marks.py).
        records, size = snap.copy_lags.get(label, (0, 0.0))
        snap.copy_lags[label] = (records + behind, size + behind * mark.average_record_bytes)
    for group, lag in lags:
        g, t = topic_label(tenant, group), topic_label(tenant, lag.topic)
        snap.lags.append((g, t, lag.partition, lag.records or 0))  # partition_lag always counts
        snap.lag_seconds.append((g, t, lag.partition, lag.seconds))
    for group, name, p, records in shares:
        snap.lags.append((topic_label(tenant, group), topic_label(tenant, name), p, records))


_Lags = tuple[list[PartitionBounds], list[tuple[str, PartitionLag]], list[tuple[str, str, int, int]]]


def _reads(
    ks: Keyspace, led: list[tuple[Topic, int]], topics: dict[str, Topic], groups: list[str]
) -> Steps[_Lags]:
    """End offsets of the led partitions, the consumer lag of every committed partition of the groups
    (as `schooner groups lag`) and the lag of their share partitions (as `groups describe`)."""
    first: list[Any] = yield from parallel(
        [
            bounds_of(ks, led),
            together([share.topics(ks, g) for g in groups]),
            parallel([commits.fetch(ks, g) for g in groups]),
        ]
    )
    ends, share_topics, committed = first
    lag_of: list[tuple[str, Topic, int, int]] = [
        (g, topics[tp.topic], tp.partition, c.offset)
        for g, offsets in zip(groups, committed, strict=True)
        for tp, c in sorted(offsets.items())
        if tp.topic in topics
    ]
    share_of = [
        (g, topics[name], p)
        for g, names in zip(groups, share_topics, strict=True)
        for name in names
        if name in topics
        for p in range(topics[name].partitions)
    ]
    second: list[Any] = yield from parallel(
        [
            parallel([partition_lag(ks, t, p, offset) for _, t, p, offset in lag_of]),
            together([share.state(ks, t, p, g) for g, t, p in share_of]),
        ]
    )
    lags, states = second
    consumer = [(g, lag) for (g, *_), lag in zip(lag_of, lags, strict=True)]
    shared = [
        (g, t.name, p, st.lag)
        for (g, t, p), st in zip(share_of, states, strict=True)
        if st is not None and st.lag >= 0
    ]
    return ends, consumer, shared


class ScrapeGauges(Collector):
    """A prometheus_client collector whose collect() (on the HTTP server's thread) reads a Snapshot on
    the broker's loop."""

    def __init__(
        self, loop: asyncio.AbstractEventLoop, read: Callable[[], Coroutine[Any, Any, Snapshot]]
    ) -> None:
        self._loop = loop
        self._read = read

    def describe(self) -> Iterable[Metric]:
        return []  # registering must not scrape Redis

    def collect(self) -> Iterator[Metric]:
        snap = self._snapshot()
        connections = GaugeMetricFamily(
            "schooner_connections", "Open client connections, by listener.", labels=["listener"]
        )
        for listener, n in sorted(snap.connections.items()):
            connections.add_metric([listener], n)
        yield connections
        closed = CounterMetricFamily(
            "schooner_connections_closed",
            "Connections the broker closed: refused on arrival (over a cap, or stopping), idle, or an "
            "incomplete frame or unread response past request_timeout_ms.",
            labels=["reason"],
        )
        for reason, n in sorted(snap.closed.items()):
            closed.add_metric([reason], n)
        yield closed
        yield _family(
            "schooner_partition_end_offset",
            "High watermark of each partition this broker leads.",
            ["topic", "partition"],
            ((t, str(p), v) for t, p, v in snap.end_offsets),
        )
        yield _family(
            "schooner_group_lag",
            "Records not yet consumed, per partition, of each group this broker coordinates: end offset - "
            "committed offset for classic and consumer groups, records not yet accepted for share groups.",
            ["group", "topic", "partition"],
            ((g, t, str(p), v) for g, t, p, v in snap.lags),
        )
        yield _family(
            "schooner_group_lag_seconds",
            "Age of the oldest record not yet consumed (classic and consumer groups); 0 when caught up.",
            ["group", "topic", "partition"],
            ((g, t, str(p), v) for g, t, p, v in snap.lag_seconds),
        )
        yield _family(
            "schooner_archive_lag_records",
            "Records of each tiered partition this broker leads not yet archived to the cold tier.",
            ["topic", "partition"],
            ((t, str(p), v) for t, p, v in snap.archive_lags),
        )
        yield _family(
            "schooner_remote_copy_lag_records",
            "Records of each tiered topic not yet archived, over the partitions this broker leads (Kafka's "
            "RemoteCopyLagSegments, in records).",
            ["topic"],
            ((t, records) for t, (records, _) in sorted(snap.copy_lags.items())),
        )
        yield _family(
            "schooner_remote_copy_lag_bytes",
            "Bytes of those records, estimated as records x each partition's average record size (Kafka's "
            "RemoteCopyLagBytes).",
            ["topic"],
            ((t, size) for t, (_, size) in sorted(snap.copy_lags.items())),
        )
        up = GaugeMetricFamily(
            "schooner_metrics_storage_up", "1 when this scrape read end offsets and lag from Redis, else 0."
        )
        up.add_metric([], 1 if snap.storage_up else 0)
        yield up

    def _snapshot(self) -> Snapshot:
        if self._loop.is_closed():
            return Snapshot(storage_up=False)
        future = asyncio.run_coroutine_threadsafe(self._read(), self._loop)
        try:
            return future.result(SCRAPE_TIMEOUT_SECONDS)
        except concurrent.futures.TimeoutError:
            future.cancel()
            log.warning("metrics: the scrape's reads took over %.0f s; skipped", SCRAPE_TIMEOUT_SECONDS)
        except Exception:
            log.exception("metrics: the scrape's reads failed")
        return Snapshot(storage_up=False)


def _family(name: str, doc: str, labels: Sequence[str], rows: Iterable[tuple[Any, ...]]) -> GaugeMetricFamily:
    family = GaugeMetricFamily(name, doc, labels=labels)
    for *values, value in rows:
        family.add_metric(values, value)
    return family
