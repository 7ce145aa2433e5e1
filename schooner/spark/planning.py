"""Driver-side planning shared by the batch and streaming readers: which partitions to read, where
positions such as "earliest" or a timestamp resolve to, and how ranges become Spark input partitions.

Splitting must give the same input partitions each time a micro-batch is planned, also when it is
planned again after a crash: the exactly-once sink names its writes after the Spark partition, so a
replayed batch must put each record in the same one. So a split is decided only from the range and
from entries inside it (which never change), not from the stream's current length.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from pyspark.sql.datasource import InputPartition

from ..storage.log.read import PartitionBounds
from ..storage.topics.metadata import Topic
from .options import EARLIEST, LATEST, OptionError, Position, Subscription, TopicPartition
from .tiers import PlanningLog

PROBES = 64  # milliseconds sampled to estimate how many records a range holds
MAX_SPLITS = 64  # per topic partition and micro-batch
FROM_BEGINNING = -1  # start of a partition found after the query began: all it holds


class DataLossError(RuntimeError):
    """Records the query was to read are gone (trimmed, deleted, or the topic was re-created)."""


def data_loss_message(what: str) -> str:
    return (
        f"{what}. Some data may have been lost: it was removed by retention or DeleteRecords, or the "
        "topic was deleted. Set failOnDataLoss to false to go on reading from what is still there."
    )


class RangePartition(InputPartition):
    """One Spark input partition: the records of one topic partition in [start, end)."""

    def __init__(self, topic: Topic, partition: int, start: int, end: int, check_loss: bool) -> None:
        self.topic = topic
        self.partition = partition
        self.start = start
        self.end = end
        self.check_loss = check_loss  # False for a new partition read from its beginning


def discover(store: PlanningLog, sub: Subscription) -> list[tuple[Topic, int]]:
    """The (topic, partition) pairs the subscription names right now, in a fixed order."""
    found = []
    for topic in store.topics():
        if sub.matches(topic.name):
            found += [
                (topic, p) for p in sub.partitions_of(topic.name, topic.partitions) if p < topic.partitions
            ]
    return found


def load_bounds(
    store: PlanningLog, tps: Sequence[tuple[Topic, int]], committed: bool
) -> tuple[list[PartitionBounds], list[int]]:
    """Each partition's bounds, and where the reader's view of it ends: the last stable offset for
    read_committed (as Kafka's "latest" is for such a consumer), else the high watermark."""
    if not committed:
        bounds = store.bounds_of(tps)
        return bounds, [b.high_watermark for b in bounds]
    pairs = store.stable_bounds_of(tps)
    return [b for b, _ in pairs], [stable for _, stable in pairs]


def visible(bounds: Sequence[PartitionBounds], ends: Sequence[int]) -> list[PartitionBounds]:
    """The bounds as the reader sees them, ending at its view's end: resolve's "latest" is there."""
    return [replace(b, high_watermark=e) for b, e in zip(bounds, ends, strict=True)]


def key(topic: Topic, partition: int) -> TopicPartition:
    return topic.name, partition


def to_json(offsets: Mapping[TopicPartition, int]) -> dict[str, dict[str, int]]:
    """Offsets as Spark's Kafka source writes them: {"topic": {"0": 23}}, in a fixed order, because Spark
    tells new data from old by comparing the JSON text."""
    out: dict[str, dict[str, int]] = {}
    for t, p in sorted(offsets):
        out.setdefault(t, {})[str(p)] = int(offsets[(t, p)])
    return out


def from_json(data: Mapping[str, Any] | None) -> dict[TopicPartition, int]:
    return {(t, int(p)): int(o) for t, parts in (data or {}).items() for p, o in parts.items()}


def resolve(
    store: PlanningLog,
    tps: Sequence[tuple[Topic, int]],
    bounds: Sequence[PartitionBounds],
    position: Position,
    strategy: str = "error",
) -> dict[TopicPartition, int]:
    """Concrete offsets for a position. A timestamp with no record at or after it resolves to the
    partition's end for an ending position, and per the strategy for a starting one."""
    out: dict[TopicPartition, int] = {}
    named = set(position.offsets) | set(position.timestamps)
    missing = [f"{t.name}-{p}" for t, p in tps if key(t, p) not in named]
    if position.kind in ("offsets", "timestamps") and missing:
        raise OptionError(
            f"offsets by partition must name every partition read; missing: {', '.join(missing)}"
        )
    for (topic, p), b in zip(tps, bounds, strict=True):
        if position.kind == "earliest":
            out[key(topic, p)] = b.log_start_offset
        elif position.kind == "latest":
            out[key(topic, p)] = b.high_watermark
        elif position.kind == "offsets":
            wanted = position.offsets[key(topic, p)]
            out[key(topic, p)] = {EARLIEST: b.log_start_offset, LATEST: b.high_watermark}.get(wanted, wanted)
        else:
            ts = position.timestamp if position.kind == "timestamp" else position.timestamps[key(topic, p)]
            found = store.offset_for_timestamp(topic, p, ts)
            if found is None and strategy == "error":
                raise OptionError(f"no record at or after timestamp {ts} in {topic.name}-{p}")
            out[key(topic, p)] = b.high_watermark if found is None else found[0]
    return out


def probe_ms(start: int, end: int, bits: int, count: int = PROBES) -> list[int]:
    first, last = start >> bits, (end - 1) >> bits
    if last - first + 1 <= count:
        return list(range(first, last + 1))
    step = (last - first) / (count - 1)
    return sorted({first + round(i * step) for i in range(count)})


def estimate(start: int, end: int, bits: int, counts: Sequence[int]) -> int:
    """Records in [start, end): the mean count of the sampled milliseconds times the milliseconds."""
    span_ms = ((end - 1) >> bits) - (start >> bits) + 1
    return math.ceil(sum(counts) / len(counts) * span_ms) if counts else 0


def split(start: int, end: int, pieces: int) -> list[tuple[int, int]]:
    """Even cuts in offset space: record counts on a dense topic, time on a timestamp-encoded one."""
    pieces = max(1, min(pieces, end - start))
    cuts = [start + (end - start) * i // pieces for i in range(pieces + 1)]
    return [(a, b) for a, b in zip(cuts, cuts[1:], strict=False) if b > a]


def plan(
    store: PlanningLog,
    ranges: Iterable[tuple[Topic, int, int, int]],
    max_records: int,
    min_partitions: int = 0,
) -> list[RangePartition]:
    """Input partitions for (topic, partition, start, end) ranges: one per range, split when its
    estimated size passes max_records, or to reach min_partitions in all."""
    todo = [(t, p, s, e) for t, p, s, e in ranges if e > max(s, 0)]
    sizes: list[int] = []
    for topic, p, s, e in todo:
        # Offsets bound the count from above; on a dense topic they are the count.
        if s == FROM_BEGINNING or e - s <= max_records or topic.offsets.dense:
            sizes.append(0 if s == FROM_BEGINNING else e - s)
            continue
        bits = topic.offsets.bits
        counts = store.entries_in_ms(topic, p, probe_ms(s, e, bits), e)
        sizes.append(estimate(s, e, bits, counts))
    pieces = [
        1 if s == FROM_BEGINNING else max(1, math.ceil(n / max_records))
        for (_, _, s, _), n in zip(todo, sizes, strict=True)
    ]
    total = sum(sizes)
    if min_partitions > sum(pieces) and total:
        # Kafka's minPartitions: more splits, shared out by size.
        pieces = [
            max(k, math.ceil(min_partitions * n / total)) if s != FROM_BEGINNING else k
            for k, n, (_, _, s, _) in zip(pieces, sizes, todo, strict=True)
        ]
    out = []
    for (topic, p, s, e), k in zip(todo, pieces, strict=True):
        if s == FROM_BEGINNING:
            out.append(RangePartition(topic, p, 0, e, check_loss=False))
            continue
        out += [RangePartition(topic, p, a, b, check_loss=True) for a, b in split(s, e, min(k, MAX_SPLITS))]
    return out
