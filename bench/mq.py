"""MQ library throughput against raw Redis Streams on the same server, in the same run.

produce: Producer.send_batch (append.lua, 1,000 records a call) vs pipelined XADD (1,000 a pipeline).
consume: a Consumer with a no-op handler (lease-checked XREADGROUP of 100, handler, XACK of the batch) vs a
bare XREADGROUP COUNT 100 + XACK loop. Values are 100 bytes. `python -m bench.mq` runs it on an embedded
redis-server; the suite calls run(redis_url).
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from schooner.mq import Consumer, ConsumerConfig, Message, OutgoingMessage, Producer
from schooner.storage.keys import Keyspace
from schooner.storage.redis import client
from schooner.storage.redis.calls import drive_sync
from schooner.storage.topics import metadata

VALUE = (b"0123456789abcdef" * 7)[:100]
MESSAGES = 50_000
RUNS = 3
CHUNK = 1000
READ_COUNT = 100


def _create_topic(url: str, ks: Keyspace, name: str) -> None:
    redis = client.connect_sync(url)
    try:
        drive_sync(redis, metadata.create(ks, name, 1, {}, {}))
    finally:
        redis.close()


def _raw_produce(redis: Any, key: str, messages: int) -> float:
    started = time.perf_counter()
    for start in range(0, messages, CHUNK):
        pipe = redis.pipeline(transaction=False)
        for _ in range(min(CHUNK, messages - start)):
            pipe.execute_command("XADD", key, "*", "value", VALUE)
        pipe.execute()
    return messages / (time.perf_counter() - started)


def _mq_produce(url: str, ks: Keyspace, topic: str, messages: int) -> float:
    producer = Producer(url, keyspace=ks, registry=CollectorRegistry())
    batch = [OutgoingMessage(VALUE, partition=0)] * CHUNK
    started = time.perf_counter()
    for start in range(0, messages, CHUNK):
        producer.send_batch(topic, batch[: min(CHUNK, messages - start)])
    rate = messages / (time.perf_counter() - started)
    producer.close()
    return rate


def _raw_consume(redis: Any, key: str, messages: int) -> float:
    redis.execute_command("XGROUP", "CREATE", key, "raw", "0")
    done = 0
    started = time.perf_counter()
    read = ["XREADGROUP", "GROUP", "raw", "c", "COUNT", READ_COUNT, "STREAMS", key, ">"]
    while done < messages:
        reply = redis.execute_command(*read)
        ids = [entry_id for entry_id, _ in reply[0][1]]
        redis.execute_command("XACK", key, "raw", *ids)
        done += len(ids)
    return messages / (time.perf_counter() - started)


def _mq_consume(url: str, ks: Keyspace, topic: str, messages: int) -> float:
    count = [0]
    finished = threading.Event()

    def handler(message: Message) -> None:
        count[0] += 1
        if count[0] >= messages:
            finished.set()

    config = ConsumerConfig(start="earliest", batch_size=READ_COUNT, poll_ms=5)
    registry = CollectorRegistry()
    consumer = Consumer(url, topic, "bench", handler, keyspace=ks, config=config, registry=registry)
    started = time.perf_counter()
    consumer.start()
    if not finished.wait(300):
        raise RuntimeError(f"the MQ consumer handled {count[0]} of {messages} messages")
    rate = messages / (time.perf_counter() - started)
    consumer.stop()
    return rate


def _clean(redis: Any, ks: Keyspace) -> None:
    keys = list(redis.scan_iter(match=f"{ks.prefix}:*", count=1000))
    for start in range(0, len(keys), 500):
        redis.delete(*keys[start : start + 500])


def run(redis_url: str, messages: int = MESSAGES, runs: int = RUNS) -> dict[str, float]:
    """MQ produce and consume throughput (msgs/s, the median of `runs`) and their ratios to raw XADD /
    XREADGROUP+XACK measured in the same runs."""
    rates: dict[str, list[float]] = {"mq_produce": [], "raw_produce": [], "mq_consume": [], "raw_consume": []}
    redis = client.connect_sync(redis_url)
    try:
        for _ in range(runs):
            ks = Keyspace(f"benchmq-{uuid.uuid4().hex[:8]}")
            raw_key, topic = f"{ks.prefix}:raw", "bench-mq"
            try:
                _create_topic(redis_url, ks, topic)
                rates["raw_produce"].append(_raw_produce(redis, raw_key, messages))
                rates["mq_produce"].append(_mq_produce(redis_url, ks, topic, messages))
                rates["raw_consume"].append(_raw_consume(redis, raw_key, messages))
                rates["mq_consume"].append(_mq_consume(redis_url, ks, topic, messages))
            finally:
                _clean(redis, ks)
    finally:
        redis.close()
    mid = {name: statistics.median(values) for name, values in rates.items()}
    results = {
        "mq_produce_msgs_per_s": round(mid["mq_produce"]),
        "raw_xadd_msgs_per_s": round(mid["raw_produce"]),
        "mq_produce_ratio": round(mid["mq_produce"] / mid["raw_produce"], 3),
        "mq_consume_msgs_per_s": round(mid["mq_consume"]),
        "raw_xreadgroup_msgs_per_s": round(mid["raw_consume"]),
        "mq_consume_ratio": round(mid["mq_consume"] / mid["raw_consume"], 3),
    }
    r = results
    print(
        f"MQ produce {r['mq_produce_msgs_per_s']:,.0f} msgs/s = {r['mq_produce_ratio']:.2f} x pipelined XADD "
        f"({r['raw_xadd_msgs_per_s']:,.0f}); MQ consume {r['mq_consume_msgs_per_s']:,.0f} msgs/s = "
        f"{r['mq_consume_ratio']:.2f} x XREADGROUP+XACK ({r['raw_xreadgroup_msgs_per_s']:,.0f}); "
        f"{messages:,} messages of {len(VALUE)} B, median of {runs} runs",
        file=sys.stderr,
    )
    return {k: float(v) for k, v in results.items()}


def main() -> int:
    from schooner.storage.redis.embedded import EmbeddedRedis

    with tempfile.TemporaryDirectory() as data:
        server = EmbeddedRedis(Path(data), persistent=False)
        server.start()
        try:
            print(run(server.url))
        finally:
            server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
