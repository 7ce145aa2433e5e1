"""The retry schedule of a partition: a sorted set of retry ids by due time, and their records.

retry_schedule.lua acks the original and schedules the retry in one step. Due retries go back to their
original partition through append.lua, as an idempotent producer owned by the partition's mover, so a
mover that crashes anywhere can neither lose a retry nor append it twice (see retry_move_due.lua).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from ..cluster import next_producer_id
from ..keys import Keyspace
from ..log import append as log_append
from ..log.append import APPENDED, DUPLICATE, UNKNOWN_PARTITION, RecordBatch
from ..log.entry import Record, decode_headers, encode_headers
from ..redis.calls import Call, Steps, command, script, text
from ..topics.metadata import Topic, UnknownTopic

_LEN = struct.Struct(">i")
_FORMAT = b"\x01"


@dataclass(frozen=True, slots=True)
class MoveBatch:
    producer_id: int  # -1: the mover has no producer id yet
    base_sequence: int
    retry_ids: list[str]
    records: list[Record | None]  # None where a payload was missing


def retry_id(group: str, entry_id: bytes | str) -> str:
    return f"{group}/{text(entry_id) if isinstance(entry_id, bytes) else entry_id}"


def pack(record: Record) -> bytes:
    parts: list[bytes | None] = [
        str(record.timestamp).encode(),
        record.key,
        record.value,
        encode_headers(record.headers),
    ]
    out = [_FORMAT]
    for part in parts:
        out.append(_LEN.pack(-1 if part is None else len(part)))
        if part is not None:
            out.append(part)
    return b"".join(out)


def unpack(data: bytes) -> Record:
    if data[:1] != _FORMAT:
        raise ValueError("not a packed retry record")
    pos, parts = 1, []
    for _ in range(4):
        (n,) = _LEN.unpack_from(data, pos)
        pos += 4
        parts.append(None if n < 0 else data[pos : pos + n])
        pos += max(n, 0)
    ts, key, value, headers = parts
    return Record(int(ts or b"0"), key, value, decode_headers(headers or b""))


def _keys(ks: Keyspace, topic: str, partition: int) -> list[str]:
    return [
        ks.mq_retries(topic, partition),
        ks.mq_retry_payloads(topic, partition),
        ks.mq_retry_mover(topic, partition),
    ]


def schedule(
    ks: Keyspace,
    topic: str,
    partition: int,
    group: str,
    entry_id: bytes,
    delay_ms: int,
    record: Record,
) -> Call[int]:
    """Acks the entry and schedules its retry; returns the due time, 0 when it was no longer pending."""
    return script(
        "retry_schedule",
        [ks.stream(topic, partition), *_keys(ks, topic, partition)[:2]],
        [group, entry_id, retry_id(group, entry_id), max(int(delay_ms), 0), pack(record)],
        int,
    )


def take_due(ks: Keyspace, topic: str, partition: int, max_count: int = 100) -> Call[MoveBatch | None]:
    return script("retry_move_due", _keys(ks, topic, partition), [max_count], _parse_batch)


def confirm(ks: Keyspace, topic: str, partition: int, base_sequence: int, appended: int) -> Call[int]:
    return script("retry_moved", _keys(ks, topic, partition), [base_sequence, appended], int)


def scheduled(ks: Keyspace, topic: str, partition: int, count: int = 1000) -> Call[list[tuple[str, int]]]:
    """(retry id, due time in ms) of the earliest retries."""
    return command("ZRANGE", ks.mq_retries(topic, partition), 0, count - 1, "WITHSCORES", parse=_with_scores)


def move_due(ks: Keyspace, topic: Topic, partition: int, max_count: int = 100) -> Steps[int]:
    """Claims a batch of due retries, appends it to the partition, confirms it. Returns retries moved."""
    mover = ks.mq_retry_mover(topic.name, partition)
    while True:
        (batch,) = yield [take_due(ks, topic.name, partition, max_count)]
        if batch is None:
            return 0
        if batch.producer_id >= 0:
            break
        # First move on this partition: take a producer id from the broker's own counter.
        (pid,) = yield [next_producer_id(ks)]
        yield [command("HSETNX", mover, "producer_id", pid, parse=int)]
    records = [r for r in batch.records if r is not None]
    if records:
        (result,) = yield [
            log_append.append(
                ks,
                topic,
                partition,
                RecordBatch(records, batch.producer_id, 0, batch.base_sequence),
            )
        ]
        if result.status == UNKNOWN_PARTITION:
            raise UnknownTopic(topic.name)
        if result.status not in (APPENDED, DUPLICATE):
            return 0  # another mover confirmed this batch and went on: nothing left to do here
    (moved,) = yield [confirm(ks, topic.name, partition, batch.base_sequence, len(records))]
    return int(moved)


def _parse_batch(reply: Any) -> MoveBatch | None:
    if isinstance(reply, int):
        return MoveBatch(-1, 0, [], [])
    if not reply:
        return None
    ids = [text(reply[i]) for i in range(2, len(reply), 2)]
    records = [unpack(reply[i]) if reply[i] else None for i in range(3, len(reply), 2)]
    return MoveBatch(int(reply[0]), int(reply[1]), ids, records)


def _with_scores(reply: Any) -> list[tuple[str, int]]:
    if reply and isinstance(reply[0], (list, tuple)):
        return [(text(m), int(float(s))) for m, s in reply]
    return [(text(reply[i]), int(float(reply[i + 1]))) for i in range(0, len(reply), 2)]
