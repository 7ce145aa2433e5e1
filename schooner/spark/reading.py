"""Executor side of both readers: the records of one input partition as Arrow record batches."""

from __future__ import annotations

import gc
import logging
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from ..storage.blocking_store import BlockingStore
from ..storage.cold import tiers
from ..storage.keys import Keyspace
from ..storage.log import transactions
from ..storage.log.transactions import AbortedTransaction
from ..storage.redis import client
from .options import ColdOptions, SourceOptions
from .planning import DataLossError, RangePartition, data_loss_message
from .schema import CREATE_TIME, LOG_APPEND_TIME, entries_to_batch
from .tiers import COLD_PAGE, COLD_PAGE_BYTES, TieredLog, cold_for

if TYPE_CHECKING:
    from ..storage.cold.formats import ColdTables

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


def log_for(opts: SourceOptions) -> TieredLog:
    """The log the driver plans on: Redis, and the cold tier when coldStore is set."""
    cold = cold_for(opts.cold, opts.keyspace, opts.redis_url) if opts.cold is not None else None
    return TieredLog(store_for(opts.redis_url, opts.keyspace), cold)


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


def _lost(text: str, fail_on_data_loss: bool) -> None:
    if fail_on_data_loss:
        raise DataLossError(text)
    log.warning(text)


def read_partition(
    part: RangePartition,
    url: str,
    keyspace: str,
    include_headers: bool,
    fail_on_data_loss: bool,
    committed: bool = True,
    cold: ColdOptions | None = None,
) -> Iterator[pa.RecordBatch]:
    """The records of one input partition. Its range ends at or below the last stable offset when
    committed (planning's doing), so each transaction with records in it has ended: markers are always
    dropped, and when committed the records of aborted transactions too (each page comes with the
    aborted transactions that may touch it, one sorted-set lookup in the same round trip).

    With a cold store, the part of the range that Redis no longer holds is read from the cold tier
    first, then Redis from where the cold tier ends: one offset order, each record once (the two tiers
    hold the same records where they overlap, so where the boundary falls changes no row)."""
    store = store_for(url, keyspace)
    topic = part.topic
    p = part.partition
    ts_type = LOG_APPEND_TIME if topic.log_append_time else CREATE_TIME
    aborted: list[AbortedTransaction] = []
    pos = part.start
    while True:
        with _no_gc():
            if committed:
                entries, bounds, aborted = store.read_committed_range_and_bounds(
                    topic, p, pos, part.end, PAGE
                )
            else:
                entries, bounds = store.read_range_and_bounds(topic, p, pos, part.end, PAGE)
        if cold is None or pos >= bounds.first_valid_offset:
            break
        # Redis no longer holds pos: the archived records from there. Looped, as the archiver may trim
        # Redis past the cold tier's end as we read (after archiving more).
        tier = cold_for(cold, keyspace, url)
        (marks,) = store.tier_marks([(topic, p)])
        span = tiers.cold_span(marks)
        if span is None:
            break  # the cold tier holds none of the partition: data loss, reported below
        resume = yield from _cold_batches(
            tier, part, pos, span[0], committed, include_headers, fail_on_data_loss
        )
        if resume >= part.end:
            return
        if resume == pos:
            break  # the cold tier has nothing from pos either: data loss, reported below
        pos = resume
    if part.check_loss and pos < bounds.first_valid_offset:
        if cold is None:
            where = f"the log now starts at {bounds.first_valid_offset} (for a tiered topic, set coldStore)"
        else:
            where = f"neither tier holds them (Redis starts at {bounds.first_valid_offset})"
        _lost(
            data_loss_message(f"{topic.name}-{p}: offsets from {pos} were to be read, but {where}"),
            fail_on_data_loss,
        )
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


def _cold_batches(
    cold: ColdTables,
    part: RangePartition,
    pos: int,
    cold_start: int,
    committed: bool,
    include_headers: bool,
    fail_on_data_loss: bool,
) -> Generator[pa.RecordBatch, None, int]:
    """The range's records from pos that the cold tier holds, as batches; returns where Redis takes over
    (the cold tier's end, or the range's end). cold_start: the cold tier's first offset by the tier
    marks (a row below it is one a trim removed). The cold tier holds nothing at or past the last stable
    offset of when it was archived, and settled transactions only, so its aborted list is complete."""
    topic, p, end = part.topic, part.partition, part.end
    offsets = topic.offsets
    ts_type = LOG_APPEND_TIME if topic.log_append_time else CREATE_TIME
    if part.check_loss and pos < cold_start:
        _lost(
            data_loss_message(
                f"{topic.name}-{p}: offsets from {pos} were to be read, but the cold tier now starts "
                f"at {cold_start}"
            ),
            fail_on_data_loss,
        )
    while pos < end:
        read = cold.read(topic, p, pos, COLD_PAGE_BYTES, COLD_PAGE, committed, start=cold_start)
        if not read.entries:
            return max(pos, read.end_offset)
        entries = read.entries
        if offsets.offset_of_id(entries[-1][0]) >= end:
            entries = [e for e in entries if offsets.offset_of_id(e[0]) < end]
        aborted = list(read.aborted)

        def settle(page: list[Any], aborted: list[AbortedTransaction] = aborted) -> list[Any]:
            return transactions.committed_entries(page, offsets, aborted, end)

        with _no_gc():
            batch = entries_to_batch(entries, topic.name, p, offsets, ts_type, include_headers, settle)
        if batch.num_rows:
            yield batch
        if len(entries) < len(read.entries):
            return end
        pos = read.next_offset
    return pos
