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
"""

from __future__ import annotations

import contextlib
from collections import deque
from collections.abc import Hashable
from typing import Protocol

SEQUENCE_SPAN = 1 << 31  # sequence numbers wrap from 2^31 - 1 to 0
# A producer that disappears after a failure leaves its mark; the oldest go past this many.
MAX_FAILED = 100_000


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


def sequenced(batch: SequencedBatch) -> bool:
    return batch.producer_id >= 0 and batch.base_sequence >= 0


class RetryOrder:
    def __init__(self) -> None:
        self._failed: dict[_Key, tuple[int, int]] = {}  # epoch and base sequence of the first failed batch
        self._open: dict[_Key, deque[int]] = {}  # base sequences sent and not yet answered, in send order

    def admit(self, partition: Hashable, batch: SequencedBatch) -> bool:
        """False while an earlier batch of the producer failed here and has not come again."""
        if not self._failed:
            return True
        key = (partition, batch.producer_id)
        failed = self._failed.get(key)
        if failed is None:
            return True
        epoch, sequence = failed
        if batch.producer_epoch == epoch and _after(batch.base_sequence, sequence):
            return False
        del self._failed[key]  # the retry (or a new epoch): it goes to Redis as usual
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
        if ok:
            return
        failed = self._failed.get(key)
        if failed is None or failed[0] != batch.producer_epoch or _after(failed[1], batch.base_sequence):
            self._failed.pop(key, None)  # re-inserted last: the dict's order is the marks' age
            self._failed[key] = (batch.producer_epoch, batch.base_sequence)
            if len(self._failed) > MAX_FAILED:
                del self._failed[next(iter(self._failed))]

    def behind_failure(self, partition: Hashable, batch: SequencedBatch) -> bool:
        """Whether an earlier batch of the producer is unanswered or failed here."""
        key = (partition, batch.producer_id)
        if key in self._failed:
            return True
        sent = self._open.get(key)
        return sent is not None and any(_after(batch.base_sequence, s) for s in sent)
