"""The broker's part of log compaction: claim a compacted partition, step through it, give it back.

Every broker runs this on its retention sweep; the claim (storage/log/compaction.py) makes sure one
broker at a time compacts a partition, and a dead broker's claim lapses on its own.
"""

from __future__ import annotations

import asyncio
import uuid

from ..storage.store import Store
from ..storage.topics.metadata import Topic


async def compact_partition(
    store: Store, topic: Topic, partition: int, step_entries: int, max_steps: int
) -> int:
    """Compacts the partition unless another broker is; returns the number of entries removed."""
    token = uuid.uuid4().hex
    if not await store.claim_compaction(topic, partition, token):
        return 0
    removed = 0
    try:
        for _ in range(max_steps):
            step = await store.compaction_step(topic, partition, token, step_entries)
            removed += step.removed
            if not step.more or step.lost_claim:
                break
            await asyncio.sleep(0)  # let this broker's requests run between steps
    finally:
        await store.release_compaction(topic, partition, token)
    return removed
