"""Executor side of both readers: the records of one input partition as Arrow record batches."""

from __future__ import annotations

import gc
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pyarrow as pa

from ..storage.blocking_store import BlockingStore
from ..storage.keys import Keyspace
from ..storage.log import transactions
from ..storage.log.transactions import AbortedTransaction
from ..storage.redis import client
from .planning import DataLossError, RangePartition, data_loss_message
from .schema import CREATE_TIME, LOG_APPEND_TIME, entries_to_batch

PAGE = 10_000  # entries per XRANGE and per Arrow batch

log = logging.getLogger(__name__)
_connections: dict[str, Any] = {}


def store_for(url: str, keyspace: str) -> BlockingStore:
    """A store on one blocking client per Redis URL and process (Python workers are reused across
    tasks); the store itself is cheap to make."""
    redis = _connections.get(url)
    if redis is None:
        redis = _connections[url] = client.connect_sync(url)
    return BlockingStore(redis, Keyspace(keyspace))


@contextmanager
def _no_gc() -> Iterator[None]:
    """A page of entries is tens of thousands of new objects, none in a cycle; left on, the collector
    walks them again and again while they are made, and half the read time went there."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def read_partition(
    part: RangePartition,
    url: str,
    keyspace: str,
    include_headers: bool,
    fail_on_data_loss: bool,
    committed: bool = True,
) -> Iterator[pa.RecordBatch]:
    """The records of one input partition. Its range ends at or below the last stable offset when
    committed (planning's doing), so each transaction with records in it has ended: markers are always
    dropped, and when committed the records of aborted transactions too (each page comes with the
    aborted transactions that may touch it, one sorted-set lookup in the same round trip)."""
    store = store_for(url, keyspace)
    topic = part.topic
    p = part.partition
    ts_type = LOG_APPEND_TIME if topic.log_append_time else CREATE_TIME
    aborted: list[AbortedTransaction] = []
    with _no_gc():
        if committed:
            entries, bounds, aborted = store.read_committed_range_and_bounds(
                topic, p, part.start, part.end, PAGE
            )
        else:
            entries, bounds = store.read_range_and_bounds(topic, p, part.start, part.end, PAGE)
    if part.check_loss and part.start < bounds.first_valid_offset:
        text = data_loss_message(
            f"{topic.name}-{p}: offsets from {part.start} were to be read, but the log now "
            f"starts at {bounds.first_valid_offset}"
        )
        if fail_on_data_loss:
            raise DataLossError(text)
        log.warning(text)
    offsets = topic.offsets

    def settle(page: list[Any]) -> list[Any]:
        return transactions.committed_entries(page, offsets, aborted, part.end)

    while entries:
        with _no_gc():
            batch = entries_to_batch(entries, topic.name, p, offsets, ts_type, include_headers, settle)
            if len(entries) < PAGE:
                entries = []
            elif committed:
                after = offsets.offset_of_id(entries[-1][0])
                entries, aborted = store.read_committed_range(topic, p, after, part.end, PAGE, exclusive=True)
            else:
                after_id = b"(" + entries[-1][0]
                entries = store.read_range(topic, p, after_id, part.end, PAGE)
        if batch.num_rows:
            yield batch
