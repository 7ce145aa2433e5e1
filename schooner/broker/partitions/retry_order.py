"""Keeps an idempotent producer's retries in sequence when its appends fail here.

A producer pipelines its batches to a partition (up to five in flight). When one of them fails at
this broker (Redis unreachable, no reply, a Redis Cluster failover, acks=all not met) the batches
the producer sent after it are still on their way, and one of them could reach Redis once Redis
answers again: a sequence gap. Kafka clients read the OUT_OF_ORDER_SEQUENCE_NUMBER that follows as
lost data, and librdkafka then bumps the producer's epoch and numbers its unacknowledged records
afresh, so a failed batch that Redis did keep (a reply lost on its way back, an append the replica
took before its primary died) is written a second time.

A Kafka broker never gets there: losing a partition's leadership fails every batch after the
failure too. This broker has the same partition before and after a Redis failover, so it keeps the
rule itself: after a batch of producer P to a partition fails, P's later batches to it are refused
with a retriable error, unsent, until the failed batch (or an earlier one) comes again. A client
resends in sequence order, so that retry follows every batch it had in flight.

OUT_OF_ORDER_SEQUENCE_NUMBER from the append script is also answered retriably while an earlier
batch of the producer is still unanswered or failed here: the gap is then the broker's, not lost data.

A failure proven stale marks nothing: once Redis appended a batch of the same epoch at or after the
failed one's sequence (the client's retry of it, on another connection, got there first; the append
script takes sequences only in order), the failed batch is in the log, and the client, answered for
the retry, never sends it again. Such a mark would hold the producer's batches back until its
records timed out (a chaos run found it: after a Redis stall, librdkafka bumped its epoch and wrote
records it had lost track of a second time).

Every failed sequence of the epoch is kept, not only the earliest: when the earliest is proven stale,
a later one (a batch refused here behind it, or failed after it) still holds the producer back. With
only the earliest kept, a chaos run saw the next batch admitted past a refused one, Redis's
OUT_OF_ORDER_SEQUENCE_NUMBER answered as lost data, and librdkafka's epoch bump renumber and write
again a batch of another partition that had been appended with its acknowledgement lost.
"""

from __future__ import annotations

import contextlib
from collections import deque
from collections.abc import Hashable
from typing import Protocol

SEQUENCE_SPAN = 1 << 31  # sequence numbers wrap from 2^31 - 1 to 0
# A producer that disappears after a failure leaves its mark; the oldest go past this many (and past
# as many producer-partitions, the latest appended sequences that prove marks stale).
MAX_FAILED = 100_000
# Failed sequences kept per producer-partition: a client has at most five requests in flight, and
# stale ones go as soon as an append proves them so; a failure past this many is not kept.
MAX_FAILED_SEQUENCES = 64


class SequencedBatch(Protocol):
    @property
    def producer_id(self) -> int: ...
    @property
    def producer_epoch(self) -> int: ...
    @property
    def base_sequence(self) -> int: ...


_Key = tuple[Hashable, int]  # the partition as the request names it, and the producer id


def _after(sequence: int, other: int) -> bool:
    """Whether `sequence` comes after `other`, across the wrap."""
    return 0 < (sequence - other) % SEQUENCE_SPAN < SEQUENCE_SPAN // 2


def _earliest(sequences: list[int]) -> int:
    """The earliest of a few sequences of one epoch, across the wrap."""
    first = sequences[0]
    for s in sequences[1:]:
        if _after(first, s):
            first = s
    return first


def sequenced(batch: SequencedBatch) -> bool:
    return batch.producer_id >= 0 and batch.base_sequence >= 0


class RetryOrder:
    def __init__(self) -> None:
        # The epoch and the base sequences of the batches that failed here and have not come again.
        self._failed: dict[_Key, tuple[int, list[int]]] = {}
        self._open: dict[_Key, deque[int]] = {}  # base sequences sent and not yet answered, in send order
        # Epoch and base sequence of the latest batch Redis appended (the dict's order: least recent first).
        self._appended: dict[_Key, tuple[int, int]] = {}

    def admit(self, partition: Hashable, batch: SequencedBatch) -> bool:
        """False while an earlier batch of the producer failed here and has not come again."""
        if not self._failed:
            return True
        key = (partition, batch.producer_id)
        failed = self._failed.get(key)
        if failed is None:
            return True
        epoch, sequences = failed
        if batch.producer_epoch == epoch and _after(batch.base_sequence, _earliest(sequences)):
            return False
        del self._failed[key]  # the retry (or a new epoch): the client resends the rest in order after it
        return True

    def opened(self, partition: Hashable, batch: SequencedBatch) -> None:
        key = (partition, batch.producer_id)
        sent = self._open.get(key)
        if sent is None:
            sent = self._open[key] = deque()
        sent.append(batch.base_sequence)

    def closed(self, partition: Hashable, batch: SequencedBatch, ok: bool) -> None:
        """The batch's answer is settled; a failure holds back the producer's later batches."""
        key = (partition, batch.producer_id)
        sent = self._open.get(key)
        if sent is not None:
            with contextlib.suppress(ValueError):  # closed once already
                sent.remove(batch.base_sequence)
            if not sent:
                del self._open[key]
        stale = not ok and self._in_log(key, batch.producer_epoch, batch.base_sequence)
        if ok or stale:
            return
        failed = self._failed.pop(key, None)  # re-inserted last: the dict's order is the marks' age
        if failed is None or failed[0] != batch.producer_epoch:
            failed = (batch.producer_epoch, [])
        sequences = failed[1]
        if batch.base_sequence not in sequences and len(sequences) < MAX_FAILED_SEQUENCES:
            sequences.append(batch.base_sequence)
        self._failed[key] = failed
        if len(self._failed) > MAX_FAILED:
            del self._failed[next(iter(self._failed))]

    def appended(self, partition: Hashable, batch: SequencedBatch) -> None:
        """Redis appended the batch (or found it a duplicate): its sequence and all before it are in the
        log, whatever becomes of the request that carried it."""
        self.logged(partition, batch.producer_id, batch.producer_epoch, batch.base_sequence)

    def logged(self, partition: Hashable, producer_id: int, epoch: int, sequence: int) -> None:
        """The log holds the producer's batches of this epoch up to this sequence (an append here, or the
        partition's producer state in Redis, which another broker's appends moved on): a mark at or
        before it is stale."""
        key = (partition, producer_id)
        failed = self._failed.get(key)
        if failed is not None and failed[0] == epoch:
            # Failed batches in the log: the client will not send them again. Later failures still hold.
            failed[1][:] = [s for s in failed[1] if _after(s, sequence)]
            if not failed[1]:
                del self._failed[key]
        if self._in_log(key, epoch, sequence):  # a duplicate of an earlier batch: the latest stays
            epoch, sequence = self._appended[key]
        self._appended.pop(key, None)  # re-inserted last: the dict's order is the entries' age
        self._appended[key] = (epoch, sequence)
        if len(self._appended) > MAX_FAILED:
            del self._appended[next(iter(self._appended))]

    def _in_log(self, key: _Key, epoch: int, sequence: int) -> bool:
        latest = self._appended.get(key)
        return latest is not None and latest[0] == epoch and not _after(sequence, latest[1])

    def behind_failure(self, partition: Hashable, batch: SequencedBatch) -> bool:
        """Whether an earlier batch of the producer is unanswered or failed here."""
        key = (partition, batch.producer_id)
        if key in self._failed:
            return True
        sent = self._open.get(key)
        return sent is not None and any(_after(batch.base_sequence, s) for s in sent)
