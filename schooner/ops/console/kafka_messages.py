"""The message browser's reads and the produce form's write, with confluent-kafka's Consumer and Producer.

Reads never join a group and never commit: the consumer is assigned the partitions it reads. A read
stops at the partition's end (partition EOF), at the limit, or at the call's deadline.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime
from datetime import time as time_of_day
from decimal import Decimal
from typing import Any
from uuid import UUID

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import OffsetSpec

from ..kafka import KafkaFailure, build, failure
from ..kafka.consume import parse_timestamp
from .kafka_data import TP, KafkaSide
from .registry_data import Decoded

KEY_WINDOW = 10_000  # a key search reads at most this many of the newest records per partition
FORMATS = ("auto", "json", "text", "hex")
DECODED_FORMATS = ("auto", "json")  # the formats in which a schema-encoded key or value is decoded

Decoder = Callable[[bytes], Decoded | None]  # RegistrySide.decode: the wire format decoded, or None


@dataclass(frozen=True)
class Shown:
    """A key, value or header value as the page shows it."""

    kind: str  # json, text, hex or null
    text: str
    schema_id: int | None = None  # decoded with this registry schema (Confluent's wire format)
    schema_type: str | None = None  # AVRO, JSON or PROTOBUF


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


def _plain(value: object) -> object:
    """What json.dumps cannot write itself, of what the decoders give (Avro bytes and logical types)."""
    if isinstance(value, bytes):
        return value.hex(" ")
    if isinstance(value, datetime | date | time_of_day):
        return value.isoformat()
    if isinstance(value, Decimal | UUID):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not JSON")


def show(data: bytes | None, fmt: str = "auto", decoder: Decoder | None = None) -> Shown:
    """Decoded with its schema when it is in Confluent's wire format with an id the registry knows; else
    JSON pretty-printed when it parses, text when it is printable UTF-8, hex otherwise (or as asked)."""
    if data is None:
        return Shown("null", "null")
    if decoder is not None and fmt in DECODED_FORMATS:
        decoded = decoder(data)
        if decoded is not None:
            try:
                text = json.dumps(decoded.value, indent=2, ensure_ascii=False, default=_plain)
            except (TypeError, ValueError):  # a value JSON cannot carry (NaN is written, a cycle is not)
                text = None
            if text is not None:
                return Shown("json", text, decoded.schema_id, decoded.schema_type)
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


def _record(msg: Any, fmt: str, decoder: Decoder | None) -> Record:
    key, value = msg.key(), msg.value()
    headers = [(name, show(v, fmt)) for name, v in (msg.headers() or [])]
    size = len(key or b"") + len(value or b"")
    _, ts = msg.timestamp()
    return Record(msg.topic(), msg.partition(), msg.offset(), ts, show(key, fmt, decoder),
                  show(value, fmt, decoder), headers, size)  # fmt: skip


def _read(side: KafkaSide, starts: dict[TP, int], ends: dict[TP, int], limit: int, key: bytes | None,
          fmt: str, decoder: Decoder | None) -> list[Record]:  # fmt: skip
    """Reads each partition from its start up to its end (exclusive); with `key`, keeps only its records.
    They are shown (decoding may ask the registry) once the read is done, outside its deadline."""
    todo = {tp: start for tp, start in starts.items() if start < ends.get(tp, 0)}
    if not todo:
        return []
    conf = {**side.conf(), "group.id": f"schooner-console-{uuid.uuid4().hex}", "enable.auto.commit": False,
            "enable.partition.eof": True, "auto.offset.reset": "earliest"}  # fmt: skip
    consumer = build(Consumer, conf)
    found: list[Any] = []
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
                    found.append(msg)
    finally:
        consumer.close()
    found.sort(key=lambda m: (m.partition(), m.offset()))
    kept = found[-limit:] if key is not None else found[:limit]
    return [_record(msg, fmt, decoder) for msg in kept]


def browse(side: KafkaSide, topic: str, partition: int, start: str, value: str, limit: int,
           fmt: str, decoder: Decoder | None = None) -> list[Record]:  # fmt: skip
    """start: "offset" (from `value`), "timestamp" (ms or ISO datetime in `value`), "newest" (the last
    `limit` records). With a decoder, schema-encoded keys and values are shown decoded."""
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
    return _read(side, {tp: first}, {tp: latest}, limit, None, fmt, decoder)


def search_key(side: KafkaSide, topic: str, partitions: list[int], key: str, limit: int,
               fmt: str, decoder: Decoder | None = None) -> list[Record]:  # fmt: skip
    """The newest records with this key (its UTF-8 bytes) among the last KEY_WINDOW of each partition."""
    tps = [(topic, p) for p in partitions]
    earliest, latest = side.earliest(tps), side.latest(tps)
    starts = {tp: max(earliest[tp], latest[tp] - KEY_WINDOW) for tp in tps}
    return _read(side, starts, latest, limit, key.encode(), fmt, decoder)


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
