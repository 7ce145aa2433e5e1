"""The message browser's reads and the produce form's write, with confluent-kafka's Consumer and Producer.

Reads never join a group and never commit: the consumer is assigned the partitions it reads. A read
stops at the partition's end (partition EOF), at the limit, or at the call's deadline.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass
from datetime import UTC
from typing import Any

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import OffsetSpec

from ..kafka import KafkaFailure, build, failure
from ..kafka.consume import parse_timestamp
from .kafka_data import TP, KafkaSide

KEY_WINDOW = 10_000  # a key search reads at most this many of the newest records per partition
FORMATS = ("auto", "json", "text", "hex")


@dataclass(frozen=True)
class Shown:
    """A key, value or header value as the page shows it."""

    kind: str  # json, text, hex or null
    text: str


@dataclass(frozen=True)
class Record:
    topic: str
    partition: int
    offset: int
    timestamp: int
    key: Shown
    value: Shown
    headers: list[tuple[str, Shown]]
    size: int


def show(data: bytes | None, fmt: str = "auto") -> Shown:
    """JSON pretty-printed when it parses, text when it is printable UTF-8, hex otherwise (or as asked)."""
    if data is None:
        return Shown("null", "null")
    if fmt == "hex":
        return Shown("hex", data.hex(" "))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return Shown("hex", data.hex(" "))
    if fmt in ("auto", "json") and text.strip()[:1] in ("{", "["):
        try:
            return Shown("json", json.dumps(json.loads(text), indent=2, ensure_ascii=False))
        except ValueError:
            pass
    if fmt == "text" or text.isprintable() or all(c.isprintable() or c in "\r\n\t" for c in text):
        return Shown("text", text)
    return Shown("hex", data.hex(" "))


def _record(msg: Any, fmt: str) -> Record:
    key, value = msg.key(), msg.value()
    headers = [(name, show(v, fmt)) for name, v in (msg.headers() or [])]
    size = len(key or b"") + len(value or b"")
    _, ts = msg.timestamp()
    return Record(
        msg.topic(), msg.partition(), msg.offset(), ts, show(key, fmt), show(value, fmt), headers, size
    )


def _read(side: KafkaSide, starts: dict[TP, int], ends: dict[TP, int], limit: int, key: bytes | None,
          fmt: str) -> list[Record]:  # fmt: skip
    """Reads each partition from its start up to its end (exclusive); with `key`, keeps only its records."""
    todo = {tp: start for tp, start in starts.items() if start < ends.get(tp, 0)}
    if not todo:
        return []
    conf = {**side.conf(), "group.id": f"schooner-console-{uuid.uuid4().hex}", "enable.auto.commit": False,
            "enable.partition.eof": True, "auto.offset.reset": "earliest"}  # fmt: skip
    consumer = build(Consumer, conf)
    found: list[Record] = []
    deadline = time.monotonic() + side.timeout_s
    try:
        consumer.assign([TopicPartition(t, p, o) for (t, p), o in todo.items()])
        while todo and time.monotonic() < deadline and (key is not None or len(found) < limit):
            batch: list[Any] = consumer.consume(500, 0.5)
            for msg in batch:
                tp = (msg.topic(), msg.partition())
                if msg.error():
                    if msg.error().code() == KafkaError._PARTITION_EOF:
                        todo.pop(tp, None)
                        continue
                    if msg.error().code() == KafkaError.GROUP_AUTHORIZATION_FAILED:
                        continue  # the unused group.id's coordinator lookup: this read joins no group
                    raise failure(msg.error(), side.client)
                if tp not in todo:
                    continue
                if msg.offset() + 1 >= ends[tp]:
                    todo.pop(tp, None)
                if msg.offset() < ends[tp] and (key is None or msg.key() == key):
                    found.append(_record(msg, fmt))
    finally:
        consumer.close()
    found.sort(key=lambda r: (r.partition, r.offset))
    return found[-limit:] if key is not None else found[:limit]


def browse(side: KafkaSide, topic: str, partition: int, start: str, value: str, limit: int,
           fmt: str) -> list[Record]:  # fmt: skip
    """start: "offset" (from `value`), "timestamp" (ms or ISO datetime in `value`), "newest" (the last
    `limit` records)."""
    tp = (topic, partition)
    earliest, latest = side.earliest([tp])[tp], side.latest([tp])[tp]
    if start == "offset":
        try:
            first = int(value)
        except ValueError:
            raise KafkaFailure(f"{value!r} is not an offset") from None
        first = max(first, earliest)
    elif start == "timestamp":
        first = side.offsets([tp], OffsetSpec.for_timestamp(parse_time_ms(value)))[tp]
        if first < 0:  # no record at or after that time
            return []
    else:
        first = max(earliest, latest - limit)
    return _read(side, {tp: first}, {tp: latest}, limit, None, fmt)


def search_key(side: KafkaSide, topic: str, partitions: list[int], key: str, limit: int,
               fmt: str) -> list[Record]:  # fmt: skip
    """The newest records with this key (its UTF-8 bytes) among the last KEY_WINDOW of each partition."""
    tps = [(topic, p) for p in partitions]
    earliest, latest = side.earliest(tps), side.latest(tps)
    starts = {tp: max(earliest[tp], latest[tp] - KEY_WINDOW) for tp in tps}
    return _read(side, starts, latest, limit, key.encode(), fmt)


def parse_time_ms(value: str) -> int:
    """Milliseconds since the epoch, or an ISO 8601 date and time (UTC unless it says otherwise)."""
    try:
        return parse_timestamp(value, UTC)
    except ValueError as exc:
        raise KafkaFailure(str(exc)) from None


def parse_headers(text: str) -> list[tuple[str, bytes]]:
    """One header a line, `name: value` (or `name=value`)."""
    out: list[tuple[str, bytes]] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        sep = ":" if ":" in line else "="
        name, found, value = line.partition(sep)
        if not found or not name.strip():
            raise KafkaFailure(f"header line {line!r} is not name: value")
        out.append((name.strip(), value.strip().encode()))
    return out


def produce(side: KafkaSide, topic: str, partition: int | None, key: str | None, value: str | None,
            headers: list[tuple[str, bytes]]) -> tuple[int, int]:  # fmt: skip
    """Sends one record and waits for the broker; its (partition, offset)."""
    producer = build(Producer, {**side.conf(), "linger.ms": 0})
    delivered: list[Any] = []
    kwargs: dict[str, Any] = {"key": None if key is None else key.encode(), "headers": headers or None}
    if partition is not None:
        kwargs["partition"] = partition
    try:
        producer.produce(
            topic,
            None if value is None else value.encode(),
            on_delivery=lambda e, m: delivered.append(e or m),
            **kwargs,
        )
    except Exception as exc:
        raise failure(exc, side.client) from None
    left = producer.flush(side.timeout_s)
    if left or not delivered:
        raise KafkaFailure(f"the broker did not confirm the record within {side.timeout_s:g} s")
    outcome = delivered[0]
    if isinstance(outcome, KafkaError):
        raise failure(outcome, side.client)
    return outcome.partition(), outcome.offset()
