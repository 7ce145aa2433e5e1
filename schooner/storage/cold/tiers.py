"""The tiered log's rules, once: which tier answers an offset, where the whole log starts, which offset a
timestamp names across the tiers, and what ListOffsets' tiered answers and DeleteRecords' cold cut are.

Pure functions over a partition's tier marks (marks.py) and its Redis bounds. The marks are the one
source of truth for the cold tier's extent: `cold_start` moves up only after a trim of the table has
committed, and `archived_end` only after an archive commit. A reader that follows them never serves a
row a trim removed (a table read through a cached file index may still hold it: cold reads and
timestamp lookups start at `cold_span`'s first offset) and never looks for one not archived yet. The
table itself is consulted only by the archiver, to recover marks a crash lost.

The runners are thin: the broker's cold reads (broker/partitions/reader.py with cold_reads.py), its
ListOffsets and DeleteRecords (broker/tiering/tiering.py), and Spark's planning and reads
(spark/tiers.py, spark/reading.py). tests/storage/cold/test_tiers.py feeds the broker's and Spark's the
same marks and tables and checks they answer alike.
"""

from __future__ import annotations

from enum import Enum

from .marks import TierMarks

Match = tuple[int, int]  # (offset, timestamp) of a timestamp lookup


class Tier(Enum):
    OUT_OF_RANGE = "out of range"  # below the whole log's start
    COLD = "cold"  # below Redis' start, and archived: the cold tier answers
    HOT = "hot"  # Redis answers (at or past its start, or a gap no tier holds: Redis' next records)


def log_start(marks: TierMarks, hot_start: int) -> int:
    """The whole log's first offset: the cold start when the cold tier holds any of the partition (and
    Redis nothing below it), else Redis' start."""
    return hot_start if marks.cold_start is None else min(marks.cold_start, hot_start)


def route(offset: int, marks: TierMarks, hot_start: int) -> Tier:
    """Which tier answers a read from the offset. hot_start: the first offset Redis holds every record
    from (PartitionBounds.first_valid_offset). Above the high watermark is Redis' answer too."""
    if offset < log_start(marks, hot_start):
        return Tier.OUT_OF_RANGE
    if offset < hot_start and marks.archived_end is not None and offset < marks.archived_end:
        return Tier.COLD
    return Tier.HOT


def cold_span(marks: TierMarks) -> tuple[int, int] | None:
    """[first, end) of the partition's cold records; None when the cold tier holds none."""
    if marks.cold_start is None or marks.archived_end is None or marks.archived_end <= marks.cold_start:
        return None
    return marks.cold_start, marks.archived_end


def needs_hot_lookup(cold: Match | None, hot_start: int) -> bool:
    """Whether Redis may hold an earlier match than the cold tier's: when the cold tier has none, or
    Redis holds records below it (a cold trim by retention before Redis' own trim)."""
    return cold is None or hot_start < cold[0]


def earliest_match(cold: Match | None, hot: Match | None) -> Match | None:
    """Kafka's rule across the tiers: the earliest offset whose timestamp is at or after the target.
    Both tiers hold the same record at an offset they share, so the lower offset is the answer."""
    if cold is None or hot is None:
        return cold if hot is None else hot
    return cold if cold[0] <= hot[0] else hot


def latest_tiered(marks: TierMarks) -> int:
    """KIP-1005's latest tiered offset: the last archived offset; -1 when nothing is archived."""
    return -1 if marks.archived_end is None else marks.archived_end - 1


def earliest_pending_upload(marks: TierMarks, hot_start: int) -> int:
    """KIP-1023: the first offset not archived yet (at least Redis' start: records deleted before they
    were archived are pending nothing)."""
    return hot_start if marks.archived_end is None else max(marks.archived_end, hot_start)


def cold_cut(marks: TierMarks, before: int) -> int | None:
    """DeleteRecords' cold side: the offset to trim the cold tier below, or None when it holds nothing
    below `before`."""
    if marks.cold_start is None or before <= marks.cold_start:
        return None
    return before
