"""DataPath: the partition writer and reader of one keyspace, and the in-memory state they share.

Built once per context by `open_data_path` (broker/context.py's open_context). Callers: the produce,
fetch and share-fetch handlers (writer, reader, waiters), the offset-commit handlers (sequencer, for a
group's commits in arrival order), DeleteRecords (recent), and upkeep.py (waiters: append notices and
the look at waited partitions' last entry IDs).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...storage.store import Store
from .cold_reads import ColdReads
from .partition_ends import PartitionEnds
from .reader import PartitionReader
from .recent_batches import RecentBatches
from .retry_order import RetryOrder
from .sequencer import PartitionSequencer
from .waiters import AppendWaiters
from .writer import PartitionWriter

if TYPE_CHECKING:
    from ...storage.cold.aio import AsyncColdStore
    from ..memory import RedisMemory
    from ..metrics import BrokerMetrics


@dataclass(frozen=True, slots=True)
class DataPath:
    writer: PartitionWriter
    reader: PartitionReader
    waiters: AppendWaiters  # long-polling fetches, and the append notices counted per partition
    sequencer: PartitionSequencer  # partitions' appends and groups' offset writes in arrival order
    recent: RecentBatches  # batches just appended, served to fetches (DeleteRecords drops them)
    ends: PartitionEnds  # fetch's reads at partitions' ends, reused until an append notice


def open_data_path(
    store: Store,
    metrics: BrokerMetrics | None,
    tenant: str | None,
    stale_topic: Callable[[str], None],
    memory: RedisMemory,
    cold: AsyncColdStore | None = None,
) -> DataPath:
    """The data path of the store's keyspace. memory: the deployment's view of Redis memory (memory.py);
    cold: the keyspace's cold store, which Fetch reads below a tiered partition's Redis start."""
    waiters = AppendWaiters()
    sequencer = PartitionSequencer()
    recent = RecentBatches()
    ends = PartitionEnds(waiters)
    writer = PartitionWriter(
        store, sequencer, RetryOrder(), recent, waiters, metrics, tenant, stale_topic, memory
    )
    reader = PartitionReader(
        store, recent, ends, waiters, metrics, tenant, ColdReads(store, cold, metrics, tenant)
    )
    return DataPath(writer, reader, waiters, sequencer, recent, ends)
