"""Thin helpers that drive the real Kafka clients from tests (no stand-ins)."""

from __future__ import annotations

import asyncio
import subprocess
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

Headers = list[tuple[str, bytes | None]]


@dataclass(frozen=True)
class Rec:
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()


SAMPLE = [
    Rec(b"k1", b"v1"),
    Rec(None, b"null key"),
    Rec(b"empty value", b""),
    Rec(b"tombstone", None),
    Rec(b"", b"empty key"),
    Rec(b"h", b"headers", (("dup", b"one"), ("dup", b"two"), ("bin", bytes(range(256))), ("null", None))),
    Rec(bytes(range(256)), bytes(range(255, -1, -1))),
]


def confluent_produce(
    bootstrap: str, topic: str, records: list[Rec], partition: int = 0, **conf: Any
) -> list[Any]:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, **conf})
    delivered: list[Any] = []

    def on_delivery(err: Any, msg: Any) -> None:
        delivered.append(err or msg)

    for r in records:
        producer.produce(
            topic,
            value=r.value,
            key=r.key,
            headers=list(r.headers) or None,
            partition=partition,
            on_delivery=on_delivery,
        )
    assert producer.flush(30) == 0
    errors = [d for d in delivered if not hasattr(d, "offset")]
    assert not errors, errors
    return delivered


Assignment = tuple[str, int, int]  # topic, partition, first offset (-2: the beginning, -1: the end)


def consume(
    bootstrap: str, assignments: Iterable[Assignment], count: int, timeout: float = 20, **conf: Any
) -> list[Any]:
    """Reads with confluent-kafka from each assigned partition (no group) until `count` records arrived
    or `timeout` passed; a client error raises. `conf` adds client settings (TLS, SASL)."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False, **conf}
    )
    consumer.assign([TopicPartition(topic, partition, offset) for topic, partition, offset in assignments])
    out: list[Any] = []
    deadline = time.monotonic() + timeout
    try:
        while len(out) < count and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                raise KafkaException(msg.error())
            out.append(msg)
    finally:
        consumer.close()
    return out


def from_beginning(topic: str, partitions: int) -> list[Assignment]:
    """Every partition of `topic`, from its first record."""
    return [(topic, p, -2) for p in range(partitions)]


def confluent_consume(
    bootstrap: str,
    topic: str,
    count: int,
    partition: int = 0,
    offset: int = -2,
    timeout: float = 20,
    **conf: Any,
) -> list[Any]:
    return consume(bootstrap, [(topic, partition, offset)], count, timeout, **conf)


def as_rec(key: bytes | None, value: bytes | None, headers: Any) -> Rec:
    return Rec(key, value, tuple((k, None if v is None else bytes(v)) for k, v in (headers or [])))


def kafka_python_produce(bootstrap: str, topic: str, records: list[Rec], **conf: Any) -> list[Any]:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, **conf)
    futures = [
        producer.send(topic, key=r.key, value=r.value, headers=list(r.headers), partition=0) for r in records
    ]
    producer.flush(30)
    results = [f.get(10) for f in futures]
    producer.close()
    return results


def kafka_python_consume(
    bootstrap: str, topic: str, count: int, timeout: float = 20, **conf: Any
) -> list[Any]:
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KTP

    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap, enable_auto_commit=False, consumer_timeout_ms=2000, **conf
    )
    consumer.assign([KTP(topic, 0)])
    consumer.seek_to_beginning()
    out: list[Any] = []
    deadline = time.monotonic() + timeout
    while len(out) < count and time.monotonic() < deadline:
        for batch in consumer.poll(500).values():
            out.extend(batch)
    consumer.close()
    return out


def aiokafka_produce(bootstrap: str, topic: str, records: list[Rec], **conf: Any) -> list[Any]:
    from aiokafka import AIOKafkaProducer

    async def run() -> list[Any]:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, **conf)
        await producer.start()
        try:
            futures = [
                await producer.send(topic, key=r.key, value=r.value, headers=list(r.headers), partition=0)
                for r in records
            ]
            return [await f for f in futures]
        finally:
            await producer.stop()

    return asyncio.run(run())


def aiokafka_consume(bootstrap: str, topic: str, count: int, timeout: float = 20, **conf: Any) -> list[Any]:
    from aiokafka import AIOKafkaConsumer
    from aiokafka import TopicPartition as ATP

    async def run() -> list[Any]:
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, **conf)
        await consumer.start()
        try:
            consumer.assign([ATP(topic, 0)])
            await consumer.seek_to_beginning()
            out: list[Any] = []
            deadline = time.monotonic() + timeout
            while len(out) < count and time.monotonic() < deadline:
                for batch in (await consumer.getmany(timeout_ms=500)).values():
                    out.extend(batch)
            return out
        finally:
            await consumer.stop()

    return asyncio.run(run())


CLIENTS = ["confluent", "kafka-python", "aiokafka"]


def consume_with(client: str, bootstrap: str, topic: str, count: int) -> list[Rec]:
    """`count` records of partition 0 from the beginning, through one of CLIENTS."""
    if client == "confluent":
        return [as_rec(m.key(), m.value(), m.headers()) for m in confluent_consume(bootstrap, topic, count)]
    if client == "kafka-python":
        return [as_rec(m.key, m.value, m.headers) for m in kafka_python_consume(bootstrap, topic, count)]
    return [as_rec(m.key, m.value, m.headers) for m in aiokafka_consume(bootstrap, topic, count)]


def kcat(*args: str, stdin: bytes | None = None, timeout: float = 30) -> str:
    done = subprocess.run(["kcat", *args], input=stdin, capture_output=True, timeout=timeout)
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout.decode()
