"""Dead letters: one stream per partition, under the partition's hash tag, so dead_letter.lua can add the
letter and ack the original in one step on Redis Cluster. A topic's DLQ is the union of its partitions'.

Entry fields (key, value and headers are left out when null, as in the log):
  origin_topic, origin_partition, origin_offset, origin_id, group, attempts, deliveries,
  first_failure_ms, last_failure_ms, error_type, error_message, timestamp, key, value, headers
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..keys import Keyspace
from ..log.entry import Header, Record, decode_headers, encode_headers
from ..redis.calls import Call, command, script, text
from .retries import pack


@dataclass(frozen=True, slots=True)
class DeadLetter:
    origin_topic: str
    origin_partition: int
    origin_offset: int  # offset of the first delivery (a retry keeps its original's offset)
    group: str
    attempts: int
    deliveries: int
    first_failure_ms: int
    last_failure_ms: int
    error_type: str
    error_message: str
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[Header] = field(default_factory=list)
    origin_id: str = ""  # stream entry ID of the delivery that was dead-lettered
    entry_id: str = ""  # the dead letter's own ID in its partition's dead-letter stream

    @property
    def letter_id(self) -> str:
        """Names the letter within its topic: "partition:entry-id"."""
        return f"{self.origin_partition}:{self.entry_id}"


def parse_letter_id(letter_id: str) -> tuple[int, str]:
    partition, _, entry_id = letter_id.partition(":")
    return int(partition), entry_id


def encode(letter: DeadLetter) -> list[Any]:
    out: list[Any] = [
        "origin_topic", letter.origin_topic,
        "origin_partition", letter.origin_partition,
        "origin_offset", letter.origin_offset,
        "origin_id", letter.origin_id,
        "group", letter.group,
        "attempts", letter.attempts,
        "deliveries", letter.deliveries,
        "first_failure_ms", letter.first_failure_ms,
        "last_failure_ms", letter.last_failure_ms,
        "error_type", letter.error_type,
        "error_message", letter.error_message,
        "timestamp", letter.timestamp,
    ]  # fmt: skip
    if letter.key is not None:
        out += ["key", letter.key]
    if letter.value is not None:
        out += ["value", letter.value]
    if letter.headers:
        out += ["headers", encode_headers(letter.headers)]
    return out


def decode(entry_id: bytes, flat: list[bytes]) -> DeadLetter:
    f = {text(flat[i]): flat[i + 1] for i in range(0, len(flat) - 1, 2)}

    def num(name: str) -> int:
        return int(f.get(name) or 0)

    return DeadLetter(
        origin_topic=text(f.get("origin_topic")),
        origin_partition=num("origin_partition"),
        origin_offset=num("origin_offset"),
        group=text(f.get("group")),
        attempts=num("attempts"),
        deliveries=num("deliveries"),
        first_failure_ms=num("first_failure_ms"),
        last_failure_ms=num("last_failure_ms"),
        error_type=text(f.get("error_type")),
        error_message=f.get("error_message", b"").decode("utf-8", "replace"),
        timestamp=num("timestamp"),
        key=f.get("key"),
        value=f.get("value"),
        headers=decode_headers(f["headers"]) if "headers" in f else [],
        origin_id=text(f.get("origin_id")),
        entry_id=text(entry_id),
    )


def add(ks: Keyspace, group: str, entry_id: bytes, letter: DeadLetter) -> Call[bytes | None]:
    """Acks the entry and adds the letter; returns its ID, None when the entry was no longer pending."""
    topic, partition = letter.origin_topic, letter.origin_partition
    return script(
        "dead_letter",
        [ks.stream(topic, partition), ks.mq_dead_letters(topic, partition)],
        [group, entry_id, *encode(letter)],
    )


def read(
    ks: Keyspace, topic: str, partition: int, start: str = "-", count: int = 100
) -> Call[list[DeadLetter]]:
    return command(
        "XRANGE", ks.mq_dead_letters(topic, partition), start, "+", "COUNT", count,
        parse=lambda reply: [decode(e[0], list(e[1] or [])) for e in reply or []],
    )  # fmt: skip


def count(ks: Keyspace, topic: str, partition: int) -> Call[int]:
    return command("XLEN", ks.mq_dead_letters(topic, partition), parse=int)


def replay_to_origin(ks: Keyspace, letter: DeadLetter, record: Record) -> Call[bool]:
    """Moves the letter into its origin partition's retry schedule, due now, in one step."""
    topic, partition = letter.origin_topic, letter.origin_partition
    return script(
        "dead_letter_replay",
        [
            ks.mq_dead_letters(topic, partition),
            ks.mq_retries(topic, partition),
            ks.mq_retry_payloads(topic, partition),
        ],
        [letter.entry_id, f"{letter.group}/replay-{letter.entry_id}", pack(record)],
        lambda r: int(r) == 1,
    )


def delete(ks: Keyspace, topic: str, partition: int, entry_ids: list[str]) -> Call[int]:
    return command("XDEL", ks.mq_dead_letters(topic, partition), *entry_ids, parse=int)


def purge(ks: Keyspace, topic: str, partition: int) -> Call[int]:
    """Drops the partition's dead-letter stream; returns 1 when it existed."""
    return command("DEL", ks.mq_dead_letters(topic, partition), parse=int)
