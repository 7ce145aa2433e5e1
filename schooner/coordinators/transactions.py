"""The transaction coordinator: transactional ids, their producer ids and epochs, and two-phase ends.

All state is in Redis (storage/transactions/state.py) and every change is a compare-and-set, so any
broker can serve any transactional id, and one that takes an id over after a crash finishes what the
dead one began: a transaction found in PrepareCommit or PrepareAbort is completed (its markers and
group offsets are written again, which is idempotent) before anything else happens to the id.

Ending a transaction: the state goes to Prepare* (the decision is now durable), then each partition
gets its marker and each group its offsets, then the state goes to Complete*. Transactions v2
(KIP-890) bump the epoch at every end; v1 keeps it.
"""

from __future__ import annotations

import asyncio
import logging
import time
import zlib
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass

from kio.schema.errors import ErrorCode

from ..storage.cluster import BrokerInfo
from ..storage.store import Store
from ..storage.topic_partition import TopicPartition
from ..storage.topics.metadata import Topic
from ..storage.transactions.state import (
    COMPLETE_ABORT,
    COMPLETE_COMMIT,
    EMPTY,
    ONGOING,
    PREPARE_ABORT,
    PREPARE_COMMIT,
    Stored,
    TransactionState,
)

log = logging.getLogger(__name__)

MAX_EPOCH = 32767  # int16: an id whose epoch would pass this gets a new producer id
CAS_ATTEMPTS = 5
# A Prepare* state older than this has lost its broker: the sweep completes it.
STALE_PREPARE_MS = 3000


class TransactionError(Exception):
    def __init__(self, code: ErrorCode, message: str = "") -> None:
        super().__init__(message or code.name)
        self.code = code


@dataclass(frozen=True, slots=True)
class Producer:
    producer_id: int
    producer_epoch: int


def _key(tp: TopicPartition) -> str:
    return f"{tp[0]}:{tp[1]}"


def _tp(key: str) -> TopicPartition:
    topic, _, partition = key.rpartition(":")
    return TopicPartition(topic, int(partition))


class TransactionCoordinator:
    def __init__(
        self,
        store: Store,
        me: BrokerInfo,
        live_brokers: Callable[[], Awaitable[list[BrokerInfo]]],
        topic_of: Callable[[str], Awaitable[Topic | None]],
        max_timeout_ms: int,
        expiration_ms: int,
    ) -> None:
        self.store = store
        self.me = me
        self.live_brokers = live_brokers
        self.topic_of = topic_of
        self.max_timeout_ms = max_timeout_ms
        self.expiration_ms = expiration_ms
        self._locks: dict[str, asyncio.Lock] = {}

    async def coordinator_for(self, transactional_id: str) -> BrokerInfo:
        """Placed like a group: a hash over the live brokers."""
        brokers = await self.live_brokers()
        return brokers[zlib.crc32(transactional_id.encode()) % len(brokers)]

    def _lock(self, transactional_id: str) -> asyncio.Lock:
        lock = self._locks.get(transactional_id)
        if lock is None:
            lock = self._locks[transactional_id] = asyncio.Lock()
        return lock

    async def _load(self, transactional_id: str) -> Stored:
        return await self.store.transaction(transactional_id)

    async def _save(self, transactional_id: str, version: int, state: TransactionState | None) -> int:
        saved = await self.store.save_transaction(transactional_id, version, state)
        if not saved:
            raise TransactionError(ErrorCode.concurrent_transactions, "changed by another broker")
        return saved

    async def _settled(self, transactional_id: str) -> Stored:
        """The id's state with any half-ended transaction completed first."""
        stored = await self._load(transactional_id)
        if stored.state is not None and stored.state.preparing:
            stored = await self._complete(transactional_id, stored)
        return stored

    # -- InitProducerId -----------------------------------------------------------------------------
    async def init_producer(
        self, transactional_id: str, timeout_ms: int, current: Producer | None
    ) -> Producer:
        if not 0 < timeout_ms <= self.max_timeout_ms:
            raise TransactionError(
                ErrorCode.invalid_transaction_timeout,
                f"transaction.timeout.ms must be in 1..{self.max_timeout_ms}",
            )
        async with self._lock(transactional_id):
            stored = await self._settled(transactional_id)
            s = stored.state
            if s is None:
                pid = await self.store.next_producer_id()
                fresh = TransactionState(pid, 0, timeout_ms)
                await self._save(transactional_id, stored.version, fresh)
                return Producer(pid, 0)
            if current is not None and current != Producer(s.producer_id, s.producer_epoch):
                # KIP-360: a producer recovering its epoch must hold the current one, or be retrying
                # the bump it asked for (previous_epoch is -1 when a fence made it, so never a retry).
                retried = (
                    current.producer_id == s.producer_id
                    and s.previous_epoch >= 0
                    and current.producer_epoch == s.previous_epoch
                    and s.state != ONGOING
                )
                if not retried:
                    raise TransactionError(ErrorCode.producer_fenced, "a newer producer has this id")
                return Producer(s.producer_id, s.producer_epoch)
            if s.state == ONGOING:
                # A new producer instance: the old one's transaction is aborted and the old one fenced.
                stored = await self._end(transactional_id, stored, commit=False, bump=True, fence=True)
                s = stored.state
                assert s is not None
            epoch = s.producer_epoch + 1
            pid = s.producer_id
            if epoch >= MAX_EPOCH:
                pid, epoch = await self.store.next_producer_id(), 0
            # Only a producer that named its epoch may retry this bump; a new instance leaves none.
            previous = s.producer_epoch if current is not None and pid == s.producer_id else -1
            fresh = TransactionState(pid, epoch, timeout_ms, previous_epoch=previous)
            await self._save(transactional_id, stored.version, fresh)
            return Producer(pid, epoch)

    # -- joining partitions and groups --------------------------------------------------------------
    def _check_producer(self, s: TransactionState | None, producer: Producer, fenced: ErrorCode) -> None:
        if s is None or s.producer_id != producer.producer_id:
            raise TransactionError(ErrorCode.invalid_producer_id_mapping, "unknown producer id for this id")
        if producer.producer_epoch != s.producer_epoch:  # as Kafka: an epoch ahead is fenced too
            raise TransactionError(fenced, f"epoch {producer.producer_epoch}, the id's is {s.producer_epoch}")

    async def add(
        self,
        transactional_id: str,
        producer: Producer,
        partitions: Iterable[TopicPartition] = (),
        group: str | None = None,
        *,
        fenced: ErrorCode = ErrorCode.producer_fenced,
        implicit: bool = False,
    ) -> None:
        """Adds partitions (AddPartitionsToTxn, or Produce under v2) and a group (AddOffsetsToTxn,
        TxnOffsetCommit), opening the transaction if none is. implicit: joined by Produce or
        TxnOffsetCommit of transactions v2, so the epoch moves on when it ends."""
        wanted = [_key(tp) for tp in partitions]
        async with self._lock(transactional_id):
            for _ in range(CAS_ATTEMPTS):
                stored = await self._load(transactional_id)
                s = stored.state
                self._check_producer(s, producer, fenced)
                assert s is not None
                if s.preparing:
                    raise TransactionError(
                        ErrorCode.concurrent_transactions, "the last transaction is ending"
                    )
                if s.state != ONGOING:
                    now = int(time.time() * 1000)
                    s = s.changed(state=ONGOING, partitions=(), groups=(), started_ms=now, bump_on_end=False)
                new_parts = tuple(p for p in dict.fromkeys(wanted) if p not in s.partitions)
                new_group = group is not None and group not in s.groups
                if not new_parts and not new_group and stored.state == s and (s.bump_on_end or not implicit):
                    return
                changed = s.changed(
                    partitions=s.partitions + new_parts,
                    groups=s.groups + ((group,) if new_group and group else ()),
                    bump_on_end=s.bump_on_end or implicit,
                )
                try:
                    await self._save(transactional_id, stored.version, changed)
                    return
                except TransactionError:
                    continue
            raise TransactionError(ErrorCode.concurrent_transactions, "changed by another broker")

    async def verify_produce(
        self, transactional_id: str, producer: Producer, partitions: Sequence[TopicPartition], implicit: bool
    ) -> None:
        """Before a transactional append: the producer holds the id and the partitions are in its open
        transaction (KIP-890 part 1). Produce of transactions v2 adds them itself (part 2)."""
        stored = await self._load(transactional_id)
        s = stored.state
        self._check_producer(s, producer, ErrorCode.invalid_producer_epoch)
        assert s is not None
        missing = [tp for tp in partitions if _key(tp) not in s.partitions]
        if s.state == ONGOING and not missing:
            return
        if not implicit:
            raise TransactionError(
                ErrorCode.invalid_txn_state, "partition not added to the transaction (AddPartitionsToTxn)"
            )
        await self.add(transactional_id, producer, missing, implicit=True)

    # -- EndTxn --------------------------------------------------------------------------------------
    async def end(
        self, transactional_id: str, producer: Producer, commit: bool, bump: bool, fenced: ErrorCode
    ) -> Producer:
        """Commits or aborts; bump (EndTxn v5+, transactions v2) moves the epoch on. Returns the producer
        id and epoch the client continues with."""
        async with self._lock(transactional_id):
            stored = await self._settled(transactional_id)
            s = stored.state
            done = COMPLETE_COMMIT if commit else COMPLETE_ABORT
            invalid = TransactionError(
                ErrorCode.invalid_txn_state,
                f"cannot {'commit' if commit else 'abort'} in {s.state if s else EMPTY}",
            )
            if (
                s is not None
                and bump
                and s.producer_id == producer.producer_id
                and s.previous_epoch >= 0
                and producer.producer_epoch == s.previous_epoch
                and s.state in (COMPLETE_COMMIT, COMPLETE_ABORT)
            ):
                # A retry of the end that bumped the epoch: the same answer, if it is the same end.
                if s.state != done:
                    raise invalid
                return Producer(s.producer_id, s.producer_epoch)
            self._check_producer(s, producer, fenced)
            assert s is not None
            # As Kafka: v1 takes a repeat of the end that completed and nothing else when no
            # transaction is open; v2 takes an abort (moving the epoch on), never a commit.
            if s.state == ONGOING:
                stored = await self._end(transactional_id, stored, commit, bump or s.bump_on_end)
            elif bump and not commit:
                stored = await self._end(transactional_id, stored, commit, True)
            elif bump or s.state != done:
                raise invalid
            assert stored.state is not None
            return Producer(stored.state.producer_id, stored.state.producer_epoch)

    async def _end(
        self, transactional_id: str, stored: Stored, commit: bool, bump: bool, fence: bool = False
    ) -> Stored:
        """fence: the coordinator ends it (a timeout, a new instance), so the producer whose epoch
        this bumps past may not retry its way back to the new one."""
        s = stored.state
        assert s is not None
        epoch = min(s.producer_epoch + 1, MAX_EPOCH) if bump else s.producer_epoch
        previous = -1 if fence else s.producer_epoch if bump else s.previous_epoch
        prepared = s.changed(
            state=PREPARE_COMMIT if commit else PREPARE_ABORT,
            producer_epoch=epoch,
            previous_epoch=previous,
        )
        version = await self._save(transactional_id, stored.version, prepared)
        return await self._complete(transactional_id, Stored(version, prepared))

    async def _complete(self, transactional_id: str, stored: Stored) -> Stored:
        """Writes the markers and group offsets of a Prepare* state, then marks it complete."""
        s = stored.state
        assert s is not None
        commit = s.state == PREPARE_COMMIT
        targets = []
        for key in s.partitions:
            tp = _tp(key)
            topic = await self.topic_of(tp[0])
            if topic is not None and 0 <= tp[1] < topic.partitions:
                targets.append((topic, tp[1]))
        # The Prepare state's version names this end: a marker of it delayed on a frozen link, after
        # another broker completed it and the producer began its next transaction, writes nothing.
        results = await self.store.write_markers(
            targets, s.producer_id, s.producer_epoch, commit, end_version=stored.version
        )
        for (topic, partition), r in zip(targets, results, strict=True):
            if r.status < 0:
                log.warning(
                    "transaction %r: %s marker for %s-%d refused (%d)",
                    transactional_id, "commit" if commit else "abort", topic.name, partition, r.status,
                )  # fmt: skip
        await self.store.end_txn_offsets(s.groups, s.producer_id, commit)
        done = s.changed(state=COMPLETE_COMMIT if commit else COMPLETE_ABORT, partitions=(), groups=())
        version = await self._save(transactional_id, stored.version, done)
        await self.store.transaction_durable(transactional_id, targets, s.groups)
        return Stored(version, done)

    # -- reading -------------------------------------------------------------------------------------
    async def state_of(self, transactional_id: str) -> TransactionState | None:
        return (await self._load(transactional_id)).state

    async def all_ids(self) -> list[str]:
        return await self.store.transactional_ids()

    # -- the sweep: timeouts, crashed ends, idle ids -------------------------------------------------
    async def sweep(self) -> int:
        """Aborts timed-out transactions, completes ends a dead broker left, forgets idle ids: for the
        ids this broker coordinates. Returns how many ids it changed."""
        now = int(time.time() * 1000)
        changed = 0
        for transactional_id in await self.store.transactional_ids(now - 1000):
            if (await self.coordinator_for(transactional_id)).broker_id != self.me.broker_id:
                continue
            try:
                changed += await self._sweep_one(transactional_id, now)
            except TransactionError:
                continue
        return changed

    async def _sweep_one(self, transactional_id: str, now: int) -> int:
        async with self._lock(transactional_id):
            stored = await self._load(transactional_id)
            s = stored.state
            if s is None:
                return 0
            if s.preparing and now - s.updated_ms >= STALE_PREPARE_MS:
                await self._complete(transactional_id, stored)
                return 1
            if s.state == ONGOING and now - s.started_ms >= s.timeout_ms:
                log.info("transaction %r timed out after %d ms: aborting it", transactional_id, s.timeout_ms)
                await self._end(transactional_id, stored, commit=False, bump=True, fence=True)
                return 1
            if (
                s.state in (EMPTY, COMPLETE_COMMIT, COMPLETE_ABORT)
                and now - s.updated_ms >= self.expiration_ms
            ):
                await self._save(transactional_id, stored.version, None)
                return 1
            return 0
