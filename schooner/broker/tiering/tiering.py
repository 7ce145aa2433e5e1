"""Tiering: one keyspace's cold store (when the broker has one) and the cold side of the requests that
reach below Redis: ListOffsets (earliest, latest tiered, earliest pending upload, by timestamp) and
DeleteRecords. The archiver (archiver.py) and the fetch reads (partitions/cold_reads.py) share its
AsyncColdStore."""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ...config import Settings
from ...storage.cold import tiers
from ...storage.cold.errors import ColdStoreError, ColdStoreUnavailable
from ...storage.cold.marks import TierMarks
from ...storage.store import Store
from ...storage.topics.metadata import Topic
from ..metrics.meters import BrokerMetrics, topic_label

if TYPE_CHECKING:  # delta-rs and pyarrow load only for a broker with a cold store (half a second at start)
    from ...storage.cold.aio import AsyncColdStore
    from ...storage.cold.location import ColdLocation

log = logging.getLogger(__name__)

TRIM_ATTEMPTS = 3  # a Delta delete that conflicts with an archive commit is tried again
TRIM_RETRY_SECONDS = 0.2


def cold_location(settings: Settings) -> ColdLocation | None:
    """Where the settings put the cold store (None: the broker has none). Raises ValueError on a bad URL."""
    root = settings.cold_store_root
    if root is None:
        return None
    from ...storage.cold.location import ColdLocation

    return ColdLocation.from_url(
        root,
        endpoint=settings.cold_store_endpoint,
        region=settings.cold_store_region,
        access_key_id=settings.cold_store_access_key_id,
        secret_access_key=settings.cold_store_secret_access_key,
        allow_http=settings.cold_store_allow_http,
    )


def open_cold_store(
    settings: Settings, namespace: str, redis: Any = None, deployment: AsyncColdStore | None = None
) -> AsyncColdStore | None:
    """The keyspace's cold store (namespace: the keyspace prefix), or None without a cold_store_url.
    redis: the store's asyncio client, whose server keeps the Iceberg catalog unless cold_store_catalog
    names one (the Iceberg store talks to it on a blocking client of its own, made when first needed).
    deployment: the deployment's cold store, for a tenant's: its threads and decoded files are shared."""
    location = cold_location(settings)
    if location is None:
        return None
    from ...storage.cold.aio import AsyncColdStore
    from ...storage.cold.formats import ColdTables
    from ...storage.cold.iceberg.clients import from_url, sync_twin

    if redis is not None:
        factory: Callable[[], Any] | None = functools.partial(sync_twin, redis)
    elif settings.redis_url:
        factory = functools.partial(from_url, settings.redis_url)
    else:
        factory = None
    files = None if deployment is None else deployment.cold.files
    tables = ColdTables(location, namespace, settings.cold_store_catalog, factory, files)
    if deployment is not None:
        return deployment.beside(tables)
    # Threads for the archive steps, and two more so that cold fetches never wait behind them all.
    return AsyncColdStore(tables, max(settings.archive_concurrency, 1) + 2)


class Tiering:
    def __init__(
        self,
        store: Store,
        cold: AsyncColdStore | None,
        metrics: BrokerMetrics | None = None,
        tenant: str | None = None,
    ) -> None:
        """metrics: where trims and drops of the cold tier count (Kafka's RemoteDelete*PerSec), topics
        labelled with the tenant."""
        self.store = store
        self.cold = cold
        self._metrics = metrics
        self._tenant = tenant

    @property
    def available(self) -> bool:
        """Whether this broker has a cold store (Kafka's remote.log.storage.system.enable)."""
        return self.cold is not None

    async def marks(self, topic: Topic, partition: int) -> TierMarks:
        return (await self.store.tier_marks([(topic, partition)]))[0]

    # -- ListOffsets: the rules are storage/cold/tiers.py's ----------------------------------------
    async def earliest(self, topic: Topic, partition: int, redis_start: int) -> int:
        """The whole log's first offset: the cold start when the cold tier holds any of it."""
        return tiers.log_start(await self.marks(topic, partition), redis_start)

    async def latest_tiered(self, topic: Topic, partition: int) -> int:
        """KIP-1005: the last archived offset; -1 when nothing is archived."""
        return tiers.latest_tiered(await self.marks(topic, partition))

    async def earliest_pending_upload(self, topic: Topic, partition: int, redis_start: int) -> int:
        """KIP-1023: the first offset not archived yet."""
        return tiers.earliest_pending_upload(await self.marks(topic, partition), redis_start)

    async def offset_for_timestamp(
        self, topic: Topic, partition: int, timestamp: int
    ) -> tuple[int, int] | None:
        """Kafka's rule over both tiers: (offset, timestamp) of the earliest record at or after the
        target, or None. Raises ColdStoreError and StorageError."""
        cold = None
        if self.cold is not None and topic.remote_storage:
            marks = await self.marks(topic, partition)
            span = tiers.cold_span(marks)
            if span is not None:
                cold = await self.cold.offset_for_timestamp(
                    topic, partition, timestamp, marks.archived_end, start=span[0]
                )
            if cold is not None:
                hot_start = (await self.store.bounds(topic, partition)).first_valid_offset
                if not tiers.needs_hot_lookup(cold, hot_start):
                    return cold
        return tiers.earliest_match(cold, await self.store.offset_for_timestamp(topic, partition, timestamp))

    # -- removing records ---------------------------------------------------------------------------
    def _deleted(self, topic: Topic, ok: bool) -> None:
        if self._metrics is not None:
            label = topic_label(self._tenant, topic.name)
            self._metrics.remote_delete_requests.labels(label).inc()
            if not ok:
                self._metrics.remote_delete_errors.labels(label).inc()

    async def trim_cold(self, topic: Topic, partition: int, below: int) -> TierMarks | None:
        """Deletes the partition's cold records below the offset (Delta remove, then vacuum) and moves
        the cold start up. Raises ColdStoreError after TRIM_ATTEMPTS."""
        assert self.cold is not None
        for attempt in range(TRIM_ATTEMPTS):
            try:
                await self.cold.trim(topic, partition, below, vacuum=True)
                break
            except ColdStoreUnavailable:  # a commit conflict with an archive step looks the same
                if attempt == TRIM_ATTEMPTS - 1:
                    self._deleted(topic, ok=False)
                    raise
                await asyncio.sleep(TRIM_RETRY_SECONDS)
            except ColdStoreError:
                self._deleted(topic, ok=False)
                raise
        self._deleted(topic, ok=True)
        return await self.store.record_tier(topic, partition, trimmed_below=below)

    async def delete_records(self, topic: Topic, partition: int, before: int) -> int | None:
        """DeleteRecords' cold side: trims the cold tier below the offset; the cold start after (None
        when the cold tier holds none of the partition). Raises ColdStoreError."""
        marks = await self.marks(topic, partition)
        cut = tiers.cold_cut(marks, before)
        if self.cold is None or cut is None:
            return marks.cold_start
        after = await self.trim_cold(topic, partition, cut)
        return None if after is None else after.cold_start

    async def drop_topic(self, topic: Topic) -> None:
        """DeleteTopics' cold side: the topic's table goes too, so disk stays bounded. A cold store
        that fails leaves it (logged): the topic is deleted all the same, and its table is never read
        again (a table is named by the topic's id)."""
        if self.cold is None or not topic.remote_storage:
            return
        try:
            await self.cold.drop(topic)
            self._deleted(topic, ok=True)
        except ColdStoreError as exc:
            self._deleted(topic, ok=False)
            log.warning("deleting topic %s: its cold table stays in the cold store: %s", topic.name, exc)

    def close(self) -> None:
        if self.cold is not None:
            self.cold.close()


__all__ = ["ColdStoreError", "Tiering", "open_cold_store"]
