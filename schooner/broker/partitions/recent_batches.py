"""Batches this broker has just appended, served to fetches as they are rather than read back from Redis.

A consumer of many partitions, each of which gets a small batch now and then, fetches each batch soon
after it was appended: one partition read (two Redis commands, the entries parsed, a batch built) for
a handful of records. Kafka serves a fetch from the batches as stored; here the broker keeps the last
batches it appended to each partition, in the form a fetch returns them (protocol.records.as_fetched),
and serves a fetch from one of them without a read.

Only what a read would give the same way is kept: an uncompressed batch with CreateTime, neither
transactional nor idempotent-duplicate, on a partition with no open transaction after the append,
whose records took consecutive offsets. A run of batches is contiguous: a batch that does not start
where the last one ended (another writer came between) starts a new run. The high watermark a served
fetch reports is the run's end, which the partition had reached by this broker's last append: the true
one may be higher if another writer has appended since, and the consumer's next fetch, from the run's
end, reads Redis and learns it. A run lasts `window` seconds from its first batch, as a kept end read
does (partition_ends.py): records that retention or DeleteRecords removed meanwhile are served at most
that long after.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from ...storage.topics.metadata import Topic

WINDOW_SECONDS = 1.0
MAX_RUN_BATCHES = 16  # a consumer further behind reads Redis
MAX_RUNS = 100_000  # partitions kept at most; past this the lot is dropped and refilled


@dataclass(slots=True)
class _Run:
    at: float  # when its first batch was appended
    end: int  # the offset after its last batch
    log_start: int
    last_at: float = 0.0  # when its last batch was appended
    notices: int = 0  # the partition's append notices counted then (AppendWaiters)
    bases: list[int] = field(default_factory=list)
    batches: list[bytes] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Served:
    batches: list[bytes]
    next_offset: int  # after the last record served
    high_watermark: int
    log_start: int
    last_at: float
    notices: int


class RecentBatches:
    def __init__(self, window: float = WINDOW_SECONDS) -> None:
        self._window = window
        self._runs: dict[tuple[uuid.UUID, int], _Run] = {}

    def appended(
        self,
        topic: Topic,
        partition: int,
        base: int,
        end: int,
        batch: bytes | None,
        log_start: int,
        now: float,
        notices: int,
    ) -> None:
        """Records an append of [base, end), after which the partition had had `notices` append notices;
        batch None: one a read would return otherwise, which ends the partition's run."""
        key = (topic.id, partition)
        run = self._runs.get(key)
        if batch is None:
            if run is not None:
                del self._runs[key]
            return
        if run is None or run.end != base or now - run.at > self._window or len(run.bases) >= MAX_RUN_BATCHES:
            if len(self._runs) >= MAX_RUNS:
                self._runs.clear()
            run = self._runs[key] = _Run(now, end, log_start)
        run.bases.append(base)
        run.batches.append(batch)
        run.end = end
        run.log_start = log_start
        run.last_at = now
        run.notices = notices

    def forget(self, topic: Topic, partition: int) -> None:
        self._runs.pop((topic.id, partition), None)

    def serve(self, topic: Topic, partition: int, offset: int, budget: int, now: float) -> Served | None:
        """The kept batches from `offset` (which must start one) up to `budget` bytes, or None when a read
        must answer. A first batch over the budget is left to the read too, which cuts it to the budget (one
        record at least): served whole, it went past the fetch's max bytes, and past a consumer quota's
        window, which then throttled the fetch empty each time it was asked again."""
        run = self._runs.get((topic.id, partition))
        if run is None or not run.bases or offset < run.bases[0] or offset >= run.end:
            return None
        if now - run.at > self._window:
            del self._runs[(topic.id, partition)]
            return None
        try:
            first = run.bases.index(offset)
        except ValueError:
            return None  # inside a batch: the read cuts it
        if len(run.batches[first]) > budget:
            return None
        taken: list[bytes] = []
        size = 0
        last = first
        for i in range(first, len(run.batches)):
            batch = run.batches[i]
            if size + len(batch) > budget:
                break
            taken.append(batch)
            size += len(batch)
            last = i
        next_offset = run.bases[last + 1] if last + 1 < len(run.bases) else run.end
        return Served(taken, next_offset, run.end, run.log_start, run.last_at, run.notices)
