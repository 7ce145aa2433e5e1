"""Consumer lag of a Kafka consumer group as a number of records and as time (the CLI, the console).

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
    topic: str
    partition: int
    committed: int | None
    end_offset: int
    records: int  # records at or after the committed offset (all records when nothing is committed)
    exact: bool  # False when counting stopped at the limit
    seconds: float  # age of the oldest record not yet consumed; 0 when caught up


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
