"""Consumer lag of a group as a number of records and as time (the CLI, the console, the broker's
metrics), and PartitionLag, the one type every view of a group's lag shares.

On a dense topic the offsets count records, so lag is end offset - committed offset (retention only
removes records below the log start). Offsets of a timestamp-encoded topic have gaps: there the records
are counted in Redis, a bounded slice per round trip so that a long backlog never blocks Redis for long.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from ..keys import Keyspace
from ..log.read import bounds, entry_timestamp
from ..redis.calls import Steps, command, script
from ..topics.metadata import Topic

SLICE = 50_000


@dataclass(frozen=True, slots=True)
class PartitionLag:
    """A group's lag on one partition: the records it has yet to consume and how long the oldest has
    waited. partition_lag counts them in Redis; the MQ library's Admin.lag extends it with the queue's
    undelivered and pending entries; a Kafka client's view (ops/kafka/groups.py) knows offsets only."""

    topic: str
    partition: int
    committed: int | None  # the group's position; None when it has none
    end_offset: int | None  # the high watermark; None where not known
    # Records at or after the committed offset (all records when nothing is committed); None where
    # not known.
    records: int | None
    exact: bool = True  # False when counting stopped at the limit
    seconds: float = 0.0  # age of the oldest record not yet consumed; 0 when caught up or not measured


def partition_lag(
    ks: Keyspace, topic: Topic, partition: int, committed: int | None, limit: int = 10_000_000
) -> Steps[PartitionLag]:
    b = yield from bounds(ks, topic, partition)
    start = max(committed if committed is not None else 0, b.log_start_offset)
    stream = ks.stream(topic.name, partition)
    first_id = topic.offsets.id_text(start)
    cursor: bytes | str = first_id
    total, exact = 0, True
    while not topic.offsets.dense:
        ((count, cursor),) = yield [script("log_count", [stream], [cursor, min(SLICE, limit - total)])]
        total += int(count)
        if not cursor:
            break
        if total >= limit:
            exact = False
            break
    if topic.offsets.dense:
        total = max(b.high_watermark - start, 0)
    seconds = 0.0
    if total:
        (first,) = yield [command("XRANGE", stream, first_id, topic.offsets.last_id, "COUNT", 1)]
        if first:
            entry_id, fields = first[0]
            seconds = max(0.0, time.time() - entry_timestamp(fields, entry_id) / 1000)
    return PartitionLag(topic.name, partition, committed, b.high_watermark, total, exact, seconds)
