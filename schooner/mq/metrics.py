"""Prometheus metrics of producers and consumers, labelled by topic, partition and group.

One set of metrics per CollectorRegistry (prometheus_client.REGISTRY unless one is passed), shared by
every producer and consumer that uses it. Producers label group "".
"""

from __future__ import annotations

import weakref
from bisect import bisect_right
from collections.abc import Sequence
from typing import Any

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram

LABELS = ("topic", "partition", "group")

_by_registry: weakref.WeakKeyDictionary[CollectorRegistry, Metrics] = weakref.WeakKeyDictionary()


class Metrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        def counter(name: str, doc: str) -> Counter:
            return Counter(name, doc, LABELS, registry=registry)

        def gauge(name: str, doc: str) -> Gauge:
            return Gauge(name, doc, LABELS, registry=registry)

        self.produced = counter("schooner_mq_produced", "Records appended by MQ producers")
        self.consumed = counter("schooner_mq_consumed", "Entries delivered to MQ consumers")
        self.acked = counter("schooner_mq_acked", "Entries acked after their handler succeeded")
        self.retried = counter("schooner_mq_retried", "Retries scheduled")
        self.failed = counter("schooner_mq_failed", "Handler failures (Fail outcomes and exceptions)")
        self.dead_lettered = counter("schooner_mq_dead_lettered", "Messages moved to the dead letters")
        self.handle_seconds = Histogram(
            "schooner_mq_handle_seconds", "Time spent in the handler per message", LABELS, registry=registry
        )
        self.in_flight = gauge("schooner_mq_in_flight", "Entries delivered to this consumer, not yet settled")
        self.leased = gauge("schooner_mq_leased_partitions", "1 while this consumer holds the partition")
        self.lag_messages = gauge("schooner_mq_lag_messages", "Entries the group has not acked yet")
        self.lag_seconds = gauge("schooner_mq_lag_seconds", "Age of the oldest entry the group has not acked")
        self._partitions: dict[tuple[str, int, str], PartitionMetrics] = {}

    def partition(self, topic: str, partition: int, group: str) -> PartitionMetrics:
        key = (topic, partition, group)
        found = self._partitions.get(key)
        if found is None:
            found = self._partitions[key] = PartitionMetrics(self, topic, partition, group)
        return found


class PartitionMetrics:
    """The children of every metric for one (topic, partition, group): label lookups off the hot path."""

    def __init__(self, metrics: Metrics, topic: str, partition: int, group: str) -> None:
        labels = (topic, str(partition), group)
        self.consumed = metrics.consumed.labels(*labels)
        self.acked = metrics.acked.labels(*labels)
        self.retried = metrics.retried.labels(*labels)
        self.failed = metrics.failed.labels(*labels)
        self.dead_lettered = metrics.dead_lettered.labels(*labels)
        self.handle_seconds = metrics.handle_seconds.labels(*labels)
        self.in_flight = metrics.in_flight.labels(*labels)
        self.leased = metrics.leased.labels(*labels)
        self.lag_messages = metrics.lag_messages.labels(*labels)
        self.lag_seconds = metrics.lag_seconds.labels(*labels)


def metrics_for(registry: CollectorRegistry | None = None) -> Metrics:
    registry = REGISTRY if registry is None else registry
    found = _by_registry.get(registry)
    if found is None:
        found = _by_registry[registry] = Metrics(registry)
    return found


def observe_all(histogram: Any, amounts: Sequence[float]) -> None:
    """histogram.observe(a) for each amount, with one update per bucket instead of one per amount (a
    consumer times every message). Relies on prometheus_client's Histogram internals; without them, it
    observes one by one."""
    bounds, buckets, total = (getattr(histogram, n, None) for n in ("_upper_bounds", "_buckets", "_sum"))
    if bounds is None or buckets is None or total is None:
        for amount in amounts:
            histogram.observe(amount)
        return
    if not amounts:
        return
    total.inc(sum(amounts))
    ordered = sorted(amounts)
    below = 0  # amounts in the buckets so far; observe() counts a in the first bucket whose bound >= a
    for i, bound in enumerate(bounds):
        upto = bisect_right(ordered, bound)
        if upto > below:
            buckets[i].inc(upto - below)
            below = upto
        if below == len(ordered):
            return
