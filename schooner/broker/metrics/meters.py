"""The broker's counters and histograms, in a CollectorRegistry of its own.

One BrokerMetrics per Broker (several brokers may run in one process, as the tests do); tenant contexts
share the deployment's. Everything here is per request or per partition, never per record: records
and bytes in come from each batch's record count and size, records and bytes out from what the fetch
path counts per partition. Label children are made once and kept (`.labels()` costs microseconds).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

from kio.schema.errors import ErrorCode
from kio.schema.index import api_key_map
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, ProcessCollector

from ...protocol.messages import NO_RESPONSE, Answer, Request
from ..net.session import RequestScope
from .errors import error_codes

Dispatch = Callable[[Request, RequestScope], Awaitable[Answer]]

# Requests: from well under a millisecond (metadata, a small produce) to a long-polling fetch's wait.
REQUEST_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
# Redis round trips: tens of microseconds on a local Redis, up to redis_timeout_ms when it stalls.
REDIS_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0)


def api_label(api_key: int) -> str:
    """Kafka's request name, as in its own request metrics: Produce, Fetch, ApiVersions, ..."""
    name = api_key_map.get(api_key)
    return "".join(part.capitalize() for part in name.split("_")) if name else str(api_key)


def error_label(code: int) -> str:
    """Kafka's error name: UNKNOWN_TOPIC_OR_PARTITION, NOT_COORDINATOR, ..."""
    try:
        return ErrorCode(code).name.upper()
    except ValueError:
        return str(code)


def topic_label(tenant: str | None, name: str) -> str:
    """A tenant's topics (and groups) are `tenant/name`: no Kafka name holds a '/', so none collides."""
    return name if tenant is None else f"{tenant}/{name}"


class TopicMeters:
    """One topic's four counters, label children made once."""

    __slots__ = ("records_in", "bytes_in", "records_out", "bytes_out")

    def __init__(self, m: BrokerMetrics, label: str) -> None:
        self.records_in = m.records_in.labels(label)
        self.bytes_in = m.bytes_in.labels(label)
        self.records_out = m.records_out.labels(label)
        self.bytes_out = m.bytes_out.labels(label)

    def produced(self, records: int, size: int) -> None:
        self.records_in.inc(records)
        self.bytes_in.inc(size)

    def fetched(self, records: int, size: int) -> None:
        self.records_out.inc(records)
        self.bytes_out.inc(size)


class _RequestMeters:
    __slots__ = ("count", "seconds")

    def __init__(self, m: BrokerMetrics, api: str, version: int) -> None:
        self.count = m.requests.labels(api, str(version))
        self.seconds = m.request_seconds.labels(api)


class BrokerMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        ProcessCollector(registry=r)  # the process_* series (CPU, memory, open files), read at scrape
        self.requests = Counter(
            "schooner_requests", "Requests served, by API and version.", ["api", "version"], registry=r
        )
        self.request_seconds = Histogram(
            "schooner_request_seconds",
            "Time from a request's decoding to its response (a fetch's long-poll wait included).",
            ["api"],
            buckets=REQUEST_BUCKETS,
            registry=r,
        )
        self.request_errors = Counter(
            "schooner_request_errors",
            "Error codes in responses (one per partition, topic or request that carries one), by API "
            "and Kafka error name.",
            ["api", "error"],
            registry=r,
        )
        self.records_in = Counter("schooner_records_in", "Records appended, by topic.", ["topic"], registry=r)
        self.bytes_in = Counter(
            "schooner_bytes_in", "Record batch bytes appended, by topic.", ["topic"], registry=r
        )
        self.records_out = Counter(
            "schooner_records_out",
            "Records sent to consumers (fetch and share fetch), by topic.",
            ["topic"],
            registry=r,
        )
        self.bytes_out = Counter(
            "schooner_bytes_out", "Record batch bytes sent to consumers, by topic.", ["topic"], registry=r
        )
        self.redis_seconds = Histogram(
            "schooner_redis_seconds",
            "Redis round trips: a pipeline of calls, or one command on the append lane.",
            buckets=REDIS_BUCKETS,
            registry=r,
        )
        self.redis_errors = Counter(
            "schooner_redis_errors",
            "Redis round trips that failed (no connection, a timeout, an error reply).",
            registry=r,
        )
        self.archived_records = Counter(
            "schooner_archived_records",
            "Records the archiver committed to the cold tier (Delta Lake), by topic.",
            ["topic"],
            registry=r,
        )
        self.archived_bytes = Counter(
            "schooner_archived_bytes",
            "Bytes of the records archived to the cold tier (keys, values and headers), by topic.",
            ["topic"],
            registry=r,
        )
        # Kafka's tiered-storage meters (KIP-405, KIP-963: BrokerTopicMetrics' Remote*PerSec, per topic),
        # as counters: rate() gives Kafka's per-second figure. Remote copy is an archive commit, remote
        # fetch a cold read for a fetch, remote delete a trim of the cold tier (retention, DeleteRecords).
        self.remote_copy_requests = Counter(
            "schooner_remote_copy_requests",
            "Archive commits to the cold tier, by topic (Kafka's RemoteCopyRequestsPerSec).",
            ["topic"],
            registry=r,
        )
        self.remote_copy_bytes = Counter(
            "schooner_remote_copy_bytes",
            "Bytes archived to the cold tier (keys, values and headers), by topic (Kafka's "
            "RemoteCopyBytesPerSec).",
            ["topic"],
            registry=r,
        )
        self.remote_copy_errors = Counter(
            "schooner_remote_copy_errors",
            "Archive steps of a partition that the cold store failed, by topic (Kafka's "
            "RemoteCopyErrorsPerSec).",
            ["topic"],
            registry=r,
        )
        self.remote_fetch_requests = Counter(
            "schooner_remote_fetch_requests",
            "Reads of the cold tier for fetches, one per partition read, by topic (Kafka's "
            "RemoteFetchRequestsPerSec).",
            ["topic"],
            registry=r,
        )
        self.remote_fetch_bytes = Counter(
            "schooner_remote_fetch_bytes",
            "Bytes of the records fetches read from the cold tier (keys, values and headers, as archived "
            "bytes count them), by topic (Kafka's RemoteFetchBytesPerSec).",
            ["topic"],
            registry=r,
        )
        self.remote_fetch_errors = Counter(
            "schooner_remote_fetch_errors",
            "Reads of the cold tier for fetches that failed, by topic (Kafka's RemoteFetchErrorsPerSec).",
            ["topic"],
            registry=r,
        )
        self.remote_delete_requests = Counter(
            "schooner_remote_delete_requests",
            "Trims of the cold tier (retention, DeleteRecords) and drops of a deleted topic's table, by "
            "topic (Kafka's RemoteDeleteRequestsPerSec).",
            ["topic"],
            registry=r,
        )
        self.remote_delete_errors = Counter(
            "schooner_remote_delete_errors",
            "Trims and drops of the cold tier that failed, by topic (Kafka's RemoteDeleteErrorsPerSec).",
            ["topic"],
            registry=r,
        )
        self.cold_fetch_seconds = Histogram(
            "schooner_cold_fetch_seconds",
            "Reads of the cold tier for fetches below a tiered partition's Redis start (one per partition).",
            buckets=REQUEST_BUCKETS,
            registry=r,
        )
        self.foreign_entry_refusals = Counter(
            "schooner_foreign_entry_refusals",
            "Produce requests refused because a dense topic's partition holds an entry added with XADD '*'.",
            ["topic", "partition"],
            registry=r,
        )
        # Redis memory (broker/memory.py): server.py sets the gauges from the broker's RedisMemory.
        self.memory_refusals = Counter(
            "schooner_memory_refusals",
            "Produce partitions refused because Redis memory was at the high-water mark (or full), by topic.",
            ["topic"],
            registry=r,
        )
        self.memory_throttle_seconds = Counter(
            "schooner_memory_throttle_seconds",
            "Throttle time given to producers of tiered topics while Redis memory nears the mark.",
            registry=r,
        )
        # The schema registry (broker/schemas/): its requests, and records produce refused for their schema.
        self.schema_registry_requests = Counter(
            "schooner_schema_registry_requests",
            "Schema registry HTTP requests, by route and HTTP status.",
            ["route", "status"],
            registry=r,
        )
        self.schema_refusals = Counter(
            "schooner_schema_validation_refusals",
            "Records refused on produce by schema validation (confluent.*.schema.validation), by topic.",
            ["topic"],
            registry=r,
        )
        self.redis_memory_fill = Gauge(
            "schooner_redis_memory_fill",
            "Used memory over maxmemory of the fullest Redis, as Redis counts it to refuse writes (0: none).",
            registry=r,
        )
        self.redis_memory_high_water = Gauge(
            "schooner_redis_memory_high_water",
            "The fill from which record appends are refused (redis_memory_high_water).",
            registry=r,
        )
        self.redis_memory_throttle_from = Gauge(
            "schooner_redis_memory_throttle_from",
            "The fill from which producers of tiered topics are throttled (redis_memory_throttle_from).",
            registry=r,
        )
        self._topics: dict[tuple[str | None, str], TopicMeters] = {}
        self._per_request: dict[tuple[int, int], _RequestMeters] = {}
        self._errors: dict[tuple[int, int], Any] = {}
        self._redis_observe = self.redis_seconds.observe
        self._redis_failed = self.redis_errors.inc

    def topic(self, tenant: str | None, name: str) -> TopicMeters:
        found = self._topics.get((tenant, name))
        if found is None:
            found = self._topics[(tenant, name)] = TopicMeters(self, topic_label(tenant, name))
        return found

    def redis_round_trip(self, seconds: float, ok: bool) -> None:
        """The storage observer (Store.observe)."""
        self._redis_observe(seconds)
        if not ok:
            self._redis_failed()

    def error(self, api_key: int, code: int) -> None:
        child = self._errors.get((api_key, code))
        if child is None:
            child = self._errors[(api_key, code)] = self.request_errors.labels(
                api_label(api_key), error_label(code)
            )
        child.inc()

    def instrument(self, handle: Dispatch) -> Dispatch:
        """Wraps the broker's dispatch: counts and times each request, and counts its response's errors."""
        per_request = self._per_request
        clock = time.perf_counter

        async def measured(request: Request, scope: RequestScope) -> Answer:
            header = request.header
            key = (header.api_key, header.api_version)
            meters = per_request.get(key)
            if meters is None:
                meters = per_request[key] = _RequestMeters(self, api_label(key[0]), key[1])
            started = clock()
            try:
                answer = await handle(request, scope)
            except Exception:  # the connection closes: the client sees no code, Kafka would say this one
                self.error(header.api_key, ErrorCode.unknown_server_error)
                raise
            finally:
                meters.count.inc()
                meters.seconds.observe(clock() - started)
            if answer is not NO_RESPONSE:
                for code in error_codes(answer):
                    self.error(header.api_key, code)
            return answer

        return measured
