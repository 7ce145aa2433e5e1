"""Redis memory per record: the broker's streams against plain-client copies of the same entries.

A figure is MEMORY USAGE key SAMPLES 0 (every node counted, at its allocated size) divided by XLEN.
Each case produces records through the broker with the suite's producer, then copies its stream, entry
by entry, to a key of its own with a plain client's XADD: the same fields in the same order, with `0-*`
IDs on a dense topic and the broker's own IDs on a timestamp topic. That copy is the issue's baseline,
"a raw entry with the same fields". A second copy holds the value alone as `XADD k * f VALUE`, the
entry redis-benchmark writes, for context only: it carries neither the timestamp nor the key.
The partition's other keys (state hash, time index, producers) are counted per record beside it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any, cast

import redis
from confluent_kafka import Producer

from schooner.storage.keys import Keyspace
from schooner.storage.offsets import TIMESTAMP
from schooner.storage.topics.config import OFFSET_ENCODING

from . import produce, report

MAX_RECORDS = 100_000  # per case: enough nodes for a steady figure, cheap to produce
SMALL_BATCH_RECORDS = 5000
SMALL_BATCH_RATE = 5000  # records per second, as the latency figure sends them
COPY_CHUNK = 1000
SCRATCH = "bench-memory-copy"  # outside every keyspace; deleted after each case
KEY_BYTES = 16
HEADER = ("trace-id", b"0123456789abcdef")


@dataclass(frozen=True, slots=True)
class StreamMemory:
    key: str
    entries: int
    bytes: int
    bytes_per_record: float


@dataclass(frozen=True, slots=True)
class Case:
    """One kind of record, as produced through the broker: the topic and how each record is sent."""

    name: str
    topic: str
    timestamp_topic: bool
    send: Callable[[Producer, str, int, bytes], None]
    limit: int = MAX_RECORDS
    producer_config: dict[str, str] = field(default_factory=dict)


def stream_memory(client: redis.Redis, key: str) -> StreamMemory:
    entries = int(client.xlen(key))
    used = client.memory_usage(key, samples=0)
    if not entries or used is None:
        raise RuntimeError(f"stream {key} is empty or missing")
    return StreamMemory(key, entries, int(used), int(used) / entries)


def keys_memory(client: redis.Redis, keys: list[str]) -> int:
    """Total MEMORY USAGE (SAMPLES 0) of several keys; missing keys count zero."""
    return sum(int(client.memory_usage(key, samples=0) or 0) for key in keys)


Entry = tuple[bytes, dict[Any, Any]]  # bytes to bytes; Any, as redis-py types xadd's fields wider


def _chunks(client: redis.Redis, source: str) -> Iterator[list[Entry]]:
    """The entries of `source` in order, COPY_CHUNK at a time."""
    start = "-"
    while True:
        entries = cast(list[Entry], client.xrange(source, start, "+", count=COPY_CHUNK))
        if not entries:
            return
        yield entries
        start = "(" + entries[-1][0].decode()


def copy_stream(client: redis.Redis, source: str, dest: str, *, same_ids: bool) -> int:
    """Writes every entry of `source` to `dest` as a plain client would, one XADD each with the same
    fields in the same order: with the same IDs, or `0-*` (a dense topic's plain append)."""
    copied = 0
    for entries in _chunks(client, source):
        pipe = client.pipeline(transaction=False)
        for entry_id, fields in entries:
            pipe.xadd(dest, fields, id=entry_id if same_ids else "0-*")
        pipe.execute()
        copied += len(entries)
    return copied


def copy_bare(client: redis.Redis, source: str, dest: str) -> int:
    """Writes each entry's value alone as `XADD dest * f VALUE` (redis-benchmark's entry)."""
    copied = 0
    for entries in _chunks(client, source):
        pipe = client.pipeline(transaction=False)
        for _, fields in entries:
            pipe.xadd(dest, {b"f": fields.get(b"value", b"")})
        pipe.execute()
        copied += len(entries)
    return copied


def partition_memory(client: redis.Redis, ks: Keyspace, topic: str) -> dict[str, int]:
    """MEMORY USAGE of the partition's keys besides its stream, and the time index's member count."""
    return {
        "state_bytes": keys_memory(client, [ks.partition_state(topic, 0)]),
        "time_index_bytes": keys_memory(client, [ks.time_index(topic, 0)]),
        "time_index_members": int(client.zcard(ks.time_index(topic, 0))),
        "producers_bytes": keys_memory(client, [ks.producers(topic, 0)]),
    }


def measure(client: redis.Redis, ks: Keyspace, topic: str, *, same_ids: bool) -> dict[str, Any]:
    """The broker's stream of partition 0 of `topic` against its two plain-client copies."""
    stream = ks.stream(topic, 0)
    broker = stream_memory(client, stream)
    same, bare = f"{SCRATCH}:same:{topic}", f"{SCRATCH}:bare:{topic}"
    client.delete(same, bare)
    try:
        copy_stream(client, stream, same, same_ids=same_ids)
        copy_bare(client, stream, bare)
        same_fields = stream_memory(client, same)
        bare_f = stream_memory(client, bare)
    finally:
        client.delete(same, bare)
    others = partition_memory(client, ks, topic)
    other_bytes = others["state_bytes"] + others["time_index_bytes"] + others["producers_bytes"]
    return {
        "broker_stream": asdict(broker),
        "same_fields_stream": asdict(same_fields),
        "bare_f_stream": asdict(bare_f),
        "ratio": broker.bytes_per_record / same_fields.bytes_per_record,
        "bare_f_ratio": broker.bytes_per_record / bare_f.bytes_per_record,
        "partition": others,
        "other_keys_bytes_per_record": other_bytes / broker.entries,
    }


def send_plain(producer: Producer, topic: str, n: int, value: bytes) -> None:
    for _ in range(n):
        _produce(producer, topic, value)


def send_keyed(producer: Producer, topic: str, n: int, value: bytes) -> None:
    """Records with a distinct key each and one header, as a keyed application's records."""
    for i in range(n):
        key = b"key-%0*d" % (KEY_BYTES - 4, i)
        _produce(producer, topic, value, key=key, headers=[HEADER])


def send_paced(producer: Producer, topic: str, n: int, value: bytes) -> None:
    """SMALL_BATCH_RATE records a second with linger.ms 0: batches of one or a few records, as a
    low-latency producer sends them (each batch that raises the highest timestamp indexes itself)."""
    start = time.perf_counter()
    for i in range(n):
        _produce(producer, topic, value)
        producer.poll(0)
        wait = start + (i + 1) / SMALL_BATCH_RATE - time.perf_counter()
        if wait > 0:
            time.sleep(wait)


def _produce(producer: Producer, topic: str, value: bytes, **extra: Any) -> None:
    while True:
        try:
            producer.produce(topic, value, partition=0, **extra)
            return
        except BufferError:  # the client's queue is full: serve delivery reports and try again
            producer.poll(0.005)


CASES = (
    Case("plain", "bench-memory-plain", False, send_plain),
    Case("keyed", "bench-memory-keyed", False, send_keyed),
    Case("timestamp", "bench-memory-timestamp", True, send_plain),
    Case("small_batches", "bench-memory-small", False, send_paced, SMALL_BATCH_RECORDS, {"linger.ms": "0"}),
)


def run(client: redis.Redis, ks: Keyspace, bootstrap: str, messages: int) -> dict[str, Any]:
    """Every case: produce `messages` records (at most the case's limit) through the broker, then measure."""
    value = produce.bench_value()
    stamped = [case.topic for case in CASES if case.timestamp_topic]
    produce.create_topics(bootstrap, stamped, {OFFSET_ENCODING: TIMESTAMP})
    out: dict[str, Any] = {"value_bytes": len(value), "target_ratio": report.MEMORY_TARGET}
    for case in CASES:
        n = min(messages, case.limit)
        producer = produce.make_producer(bootstrap, **case.producer_config)
        failed = True
        try:
            produce.warm_up(producer, case.topic)
            case.send(producer, case.topic, n, value)
            if producer.flush(120):
                raise RuntimeError(f"{case.topic}: records still unacknowledged after 120 s")
            failed = False
        finally:
            produce.close_producer(producer, failed)
        out[case.name] = measure(client, ks, case.topic, same_ids=case.timestamp_topic)
    out["same_fields_ratio"] = max(out[case.name]["ratio"] for case in CASES)  # the goal: the worst case
    return out
